// `npm run bench:floor`: the service against floors that do less, with one load generator, in
// alternating rounds on one machine. Targets: a bare node:http server (the load generator's own
// ceiling), Hono with the checks the service makes before the database and nothing else (Web Crypto
// HMAC, JSON, zod: bench/lib/floor-server.ts), and `npm start` in sync and in async mode. Each round
// sends every target the same shape of freshly signed unique acme events at the same concurrency;
// the figures are medians over rounds, and the ratios compare targets within this one run, so a busy
// machine moves all of them together. No target: it says how much of what the machine allows the
// service reaches, and what the load generator itself costs (it shares the cores).
//
// Environment: FLOOR_EVENTS (4000 per round and target), FLOOR_ROUNDS (3), FLOOR_WARMUP (2000),
// FLOOR_TARGETS (http,hono,sync,async: which to run),
// BENCH_CONCURRENCY (32), BENCH_LOG_LEVEL (warn, as the side-by-side harness runs the service),
// BENCH_DATABASE_URL (else embedded PostgreSQL), BENCH_CPU_PROF (a folder: run the two services
// under --cpu-prof; their CPU figures are then inflated). The services run with the outbox relay off
// (bench:outbox measures it).
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import postgres from 'postgres';
import { Pool } from 'undici';
import { signedAcmeEvent } from './lib/acme.ts';
import { type BenchDatabase, freshDatabase } from './lib/database.ts';
import { intFromEnv } from './lib/env.ts';
import { runLoad } from './lib/load.ts';
import { startCpuMeter } from './lib/proc.ts';
import { runContext, writeResult } from './lib/results.ts';
import { intakeServiceEnv, type RunningService, startService } from './lib/service.ts';
import { formatTable, percentile, round } from './lib/stats.ts';

const APPLY_TIMEOUT_MS = 120_000;
const TARGET_KEYS = ['http', 'hono', 'sync', 'async'];

interface Target {
  /** One of TARGET_KEYS: how results name it (npm run bench reads them). */
  key: string;
  name: string;
  /** What the figure says about this target. */
  note: string;
  service: RunningService;
  /** Async mode: answers 202, and the round lasts until its events are completed. */
  queues: boolean;
}

interface RoundFigures {
  eventsPerSecond: number;
  /** Async: events over the time until the last one was completed; else the same as eventsPerSecond. */
  appliedPerSecond: number;
  p99Ms: number;
  serviceCpuMs: number;
  loadCpuMs: number;
  postgresCpuMs: number | null;
}

function settings() {
  return {
    events: intFromEnv('FLOOR_EVENTS', 4000, 100),
    rounds: intFromEnv('FLOOR_ROUNDS', 3, 1),
    warmup: intFromEnv('FLOOR_WARMUP', 2000, 0),
    concurrency: intFromEnv('BENCH_CONCURRENCY', 32, 1),
    logLevel: process.env.BENCH_LOG_LEVEL || 'warn',
    targets: targetKeys(),
    cpuProfDir: process.env.BENCH_CPU_PROF ? resolve(process.env.BENCH_CPU_PROF) : undefined,
  };
}

/** FLOOR_TARGETS: a comma-separated subset of TARGET_KEYS, all of them by default. */
function targetKeys(): string[] {
  const keys = (process.env.FLOOR_TARGETS || TARGET_KEYS.join(',')).split(',').map((key) => key.trim());
  const unknown = keys.filter((key) => !TARGET_KEYS.includes(key));
  if (unknown.length > 0 || keys.length === 0) {
    throw new Error(
      `FLOOR_TARGETS takes a comma-separated list of ${TARGET_KEYS.join(', ')}; got "${unknown.join(',')}"`,
    );
  }
  return keys;
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

/** Waits until none of the run's events is left to apply; answers when that was. */
async function appliedAt(sql: postgres.Sql, runId: string): Promise<number> {
  const deadline = performance.now() + APPLY_TIMEOUT_MS;
  while (performance.now() < deadline) {
    const [row] = await sql<{ waiting: number }[]>`
      select count(*)::int as waiting from webhook_events
      where provider = 'acme' and event_id like ${`evt_${runId}_%`} and status <> 'completed'`;
    if (row?.waiting === 0) return performance.now();
    await sleep(20);
  }
  throw new Error(`run ${runId}: events still waiting after ${APPLY_TIMEOUT_MS} ms`);
}

async function sendRound(
  target: Target,
  config: ReturnType<typeof settings>,
  context: { secret: string; sql: postgres.Sql; database: BenchDatabase; events: number },
): Promise<RoundFigures> {
  const runId = randomBytes(4).toString('hex');
  const nowSeconds = Math.floor(Date.now() / 1000);
  const requests = Array.from({ length: context.events }, (_, index) =>
    signedAcmeEvent({ secret: context.secret, runId, index, nowSeconds }),
  );
  const pool = new Pool(target.service.origin, { connections: config.concurrency, pipelining: 1 });
  try {
    const cpu = startCpuMeter(target.service.pid, context.database.postmasterPid);
    const loadBefore = process.cpuUsage();
    const started = performance.now();
    const result = await runLoad({
      pool,
      requests,
      concurrency: config.concurrency,
      accept: (status) => status === (target.queues ? 202 : 200),
    });
    const load = process.cpuUsage(loadBefore);
    if (result.accepted !== requests.length) {
      const [first] = result.rejections;
      throw new Error(
        `${target.name}: ${result.rejections.length} not accepted (first: ${first?.status} ${first?.detail})`,
      );
    }
    const finished = target.queues ? await appliedAt(context.sql, runId) : performance.now();
    const spent = cpu();
    const perEvent = (ms: number) => round(ms / requests.length, 3);
    return {
      eventsPerSecond: round(requests.length / (result.elapsedMs / 1000), 0),
      appliedPerSecond: round(requests.length / ((finished - started) / 1000), 0),
      p99Ms: round(percentile(result.latenciesMs, 99), 1),
      serviceCpuMs: perEvent(spent.serviceMs),
      loadCpuMs: perEvent((load.user + load.system) / 1000),
      postgresCpuMs: spent.postgresMs === undefined ? null : perEvent(spent.postgresMs),
    };
  } finally {
    await pool.close();
  }
}

async function main(): Promise<void> {
  const config = settings();
  const startedAt = new Date();
  const tmp = mkdtempSync(join(tmpdir(), 'webhook-inbox-floor-'));
  chmodSync(tmp, 0o755);
  let database: BenchDatabase | undefined;
  let sql: postgres.Sql | undefined;
  const services: RunningService[] = [];
  try {
    database = await freshDatabase(join(tmp, 'db'));
    const databaseUrl = database.url;
    sql = postgres(database.url, { max: 1, onnotice: () => {} });
    const secret = randomBytes(32).toString('hex');
    const start = async (name: string, env: Record<string, string>, script?: string[]) => {
      const profiled = script === undefined && config.cpuProfDir !== undefined;
      const service = await startService({
        env,
        stdoutFile: join(tmp, `${name}.stdout.log`),
        stderrFile: join(tmp, `${name}.stderr.log`),
        ...(script === undefined ? {} : { script }),
        ...(profiled
          ? { nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${config.cpuProfDir}`, `--cpu-prof-name=${name}.cpuprofile`] }
          : {}),
      });
      services.push(service);
      return service;
    };
    const floorScript = ['--import', 'tsx', 'bench/lib/floor-server.ts'];
    const serviceEnv = (mode: string) =>
      intakeServiceEnv(databaseUrl, secret, { PROCESSING_MODE: mode, LOG_LEVEL: config.logLevel });
    // What each target runs: a floor server (bench/lib/floor-server.ts) or `npm start` in a mode.
    const specs: { key: string; name: string; note: string; env: Record<string, string>; floor: boolean }[] = [
      { key: 'http', name: 'node:http, no checks', note: "the load generator's ceiling", env: {}, floor: true },
      {
        key: 'hono',
        name: 'Hono + Web Crypto + zod',
        note: 'the checks before the database, nothing else',
        env: { FLOOR_SECRET: secret },
        floor: true,
      },
      { key: 'sync', name: 'npm start, sync', note: 'applied before the 200', env: {}, floor: false },
      {
        key: 'async',
        name: 'npm start, async',
        note: 'stored before the 202, then applied by the worker',
        env: {},
        floor: false,
      },
    ];
    const targets: Target[] = [];
    for (const spec of specs.filter((candidate) => config.targets.includes(candidate.key))) {
      const service = spec.floor
        ? await start(spec.key, { ...spec.env, FLOOR_KIND: spec.key }, floorScript)
        : await start(spec.key, serviceEnv(spec.key));
      targets.push({ key: spec.key, name: spec.name, note: spec.note, service, queues: spec.key === 'async' });
    }
    const context = { secret, sql, database };
    console.log(`warming up each target with ${config.warmup} events`);
    for (const target of targets) {
      if (config.warmup > 0) await sendRound(target, config, { ...context, events: config.warmup });
    }
    const figures = new Map<Target, RoundFigures[]>(targets.map((target) => [target, []]));
    for (let roundIndex = 0; roundIndex < config.rounds; roundIndex++) {
      for (const target of targets) {
        const result = await sendRound(target, config, { ...context, events: config.events });
        figures.get(target)?.push(result);
        console.log(
          `round ${roundIndex + 1} ${target.name}: ${result.eventsPerSecond} events/s` +
            (target.queues ? `, applied ${result.appliedPerSecond}/s` : '') +
            `, service ${result.serviceCpuMs} ms CPU/event, load generator ${result.loadCpuMs}`,
        );
      }
    }

    const summary = targets.map((target) => {
      const rounds = figures.get(target) ?? [];
      const pick = (field: keyof RoundFigures) => {
        const values = rounds.map((figure) => figure[field]).filter((value): value is number => value !== null);
        return values.length === 0 ? null : median(values);
      };
      return {
        key: target.key,
        name: target.name,
        note: target.note,
        eventsPerSecond: pick('eventsPerSecond') ?? 0,
        appliedPerSecond: target.queues ? pick('appliedPerSecond') : null,
        p99Ms: pick('p99Ms'),
        serviceCpuMs: pick('serviceCpuMs'),
        loadCpuMs: pick('loadCpuMs'),
        postgresCpuMs: pick('postgresCpuMs'),
        rounds,
      };
    });
    const honoFloor = summary.find((entry) => entry.key === 'hono')?.eventsPerSecond;
    const rows = summary.flatMap((entry) => [
      {
        label: entry.name,
        value: entry.eventsPerSecond,
        note: `events/s${honoFloor === undefined ? '' : `, ${round(entry.eventsPerSecond / honoFloor, 2)}x the Hono floor`}; ${entry.note}`,
      },
      ...(entry.appliedPerSecond === null
        ? []
        : [
            {
              label: '  applied',
              value: entry.appliedPerSecond,
              note: 'events/s, from the first delivery to the last completed',
            },
          ]),
      {
        label: '  CPU per event',
        value: `${entry.serviceCpuMs} ms`,
        note:
          `load generator ${entry.loadCpuMs} ms` +
          (entry.postgresCpuMs === null ? '' : `, PostgreSQL ${entry.postgresCpuMs} ms`) +
          `; p99 ${entry.p99Ms} ms`,
      },
    ]);
    console.log();
    console.log(
      formatTable(
        `the service against its floors (${config.concurrency} connections, ${config.events} events a round, median of ${config.rounds})`,
        rows,
      ),
    );
    const file = writeResult('floor', startedAt, {
      context: runContext(),
      settings: config,
      database: database.kind,
      targets: summary,
    });
    console.log(`\nwritten to ${file}`);
  } finally {
    await Promise.all(services.map((service) => service.stop()));
    await sql?.end();
    await database?.dispose();
    rmSync(tmp, { recursive: true, force: true });
  }
}

await main();
