// `npm run bench:intake -- --mode async`: synchronous and asynchronous intake in the same run, on
// one fresh database, with the same events shape and concurrency. For each mode a service is started
// (async: PROCESSING_MODE=async with the in-process worker running), a warm-up and a timed burst are
// sent at full concurrency, and events/s measured. In async mode the bench then measures the worker:
// the rate at which it empties the backlog the burst left (once the intake is idle), and, with the
// load paced at sync mode's events/s, how far the backlog grows (reported, no target).
// Targets: async acceptance >= 1.5x sync; the worker drains the backlog at >= 1x sync's events/s. A
// miss is printed MISSED and fails the run only with BENCH_STRICT=1 (bench/lib/targets.ts).
//
// Environment: BENCH_EVENTS (10000 per mode, warm-up included), BENCH_WARMUP (1000),
// BENCH_PACED_EVENTS (6000), BENCH_CONCURRENCY (32), BENCH_DATABASE_URL (else embedded PostgreSQL),
// BENCH_LOG_LEVEL (info), DB_POOL_MAX (10), WORKER_INTERVAL_MS (200).
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import postgres from 'postgres';
import { Pool } from 'undici';
import { signedAcmeEvent } from './lib/acme.ts';
import { type BenchDatabase, freshDatabase } from './lib/database.ts';
import { intFromEnv } from './lib/env.ts';
import { runLoad } from './lib/load.ts';
import { type CpuSpent, startCpuMeter } from './lib/proc.ts';
import { runContext, writeResult } from './lib/results.ts';
import { intakeServiceEnv, startService, tail } from './lib/service.ts';
import { formatTable, percentile, round } from './lib/stats.ts';
import { targetMark, verdict } from './lib/targets.ts';

const TARGET_RATIO = 1.5;
const DRAIN_TIMEOUT_MS = 300_000;

/** CPU per event in milliseconds: the service process, and PostgreSQL when it runs here. */
interface CpuPerEvent {
  serviceMs: number;
  postgresMs: number | null;
}

function perEvent(spent: CpuSpent, events: number): CpuPerEvent {
  const per = (ms: number) => round(ms / Math.max(events, 1), 3);
  return { serviceMs: per(spent.serviceMs), postgresMs: spent.postgresMs === undefined ? null : per(spent.postgresMs) };
}

function describeCpu(cpu: CpuPerEvent): string {
  return `CPU/event: service ${cpu.serviceMs} ms, postgres ${cpu.postgresMs ?? 'n/a'} ms`;
}

interface ModeFigures {
  eventsPerSecond: number;
  cpu: CpuPerEvent;
  p50Ms: number;
  p99Ms: number;
  accepted: number;
  rejected: number;
  /** Async only: how the worker did with the burst and with a steady load at the sync rate. */
  worker?: WorkerFigures;
}

interface WorkerFigures {
  /** Events still waiting when the burst's last answer came back. */
  backlogAtBurstEnd: number;
  /** That backlog over the time the worker took to empty it, once the intake was idle. */
  drainPerSecond: number;
  drainCpu: CpuPerEvent;
  drainSeconds: number;
  /** Burst events over the time from the burst's start to an empty backlog. */
  appliedPerSecond: number;
  /** The worker's passes from the burst's start to an empty backlog. */
  duringBurst: WorkerPasses;
  paced: PacedFigures;
}

interface PacedFigures {
  offeredPerSecond: number;
  acceptedPerSecond: number;
  seconds: number;
  /** Largest backlog seen (sampled every BACKLOG_SAMPLE_MS) while the load ran. */
  maxBacklog: number;
  backlogAtEnd: number;
  /**
   * The backlog at the end is at most one second of the offered load. Reported, not a target: sync
   * mode's rate is what the machine's cores carry in sync mode, and an async event costs about as
   * much CPU in all (accepting plus applying), so at that rate both modes use the whole machine.
   */
  keptUp: boolean;
  p50Ms: number;
  p99Ms: number;
  worker: WorkerPasses;
}

const BACKLOG_SAMPLE_MS = 100;

/** What the worker's `inbox worked` log lines say about the passes that ended in a stretch of the log. */
interface WorkerPasses {
  passes: number;
  completed: number;
  /** Time the worker waited for a saturated intake. */
  deferredSeconds: number;
}

function fileSize(file: string): number {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
}

/** Sums the worker's pass summaries logged from byte `from` of the service's stdout on. */
function workerPassesSince(stdoutFile: string, from: number): WorkerPasses {
  const text = readFileSync(stdoutFile).subarray(from).toString('utf8');
  const totals = { passes: 0, completed: 0, deferredMs: 0 };
  for (const line of text.split('\n')) {
    if (!line.includes('"inbox worked"')) continue;
    const pass = JSON.parse(line) as { completed?: number; deferredMs?: number };
    totals.passes += 1;
    totals.completed += pass.completed ?? 0;
    totals.deferredMs += pass.deferredMs ?? 0;
  }
  return { passes: totals.passes, completed: totals.completed, deferredSeconds: round(totals.deferredMs / 1000, 2) };
}

async function countStatus(sql: postgres.Sql, runTag: string): Promise<Record<string, number>> {
  const rows = await sql<{ status: string; n: number }[]>`select status::text as status, count(*)::int as n
    from webhook_events where starts_with(event_id, ${runTag}) group by status`;
  return Object.fromEntries(rows.map((row) => [row.status, row.n]));
}

/** This run's events the worker has not finished: received, being applied, or waiting to retry. */
async function countWaiting(sql: postgres.Sql, runTag: string): Promise<number> {
  const counts = await countStatus(sql, runTag);
  return (counts.received ?? 0) + (counts.processing ?? 0) + (counts.failed ?? 0);
}

/** Polls until nothing of the run waits; answers when that was seen, or fails after DRAIN_TIMEOUT_MS. */
async function waitForEmptyBacklog(sql: postgres.Sql, runTag: string, failures: string[]): Promise<number> {
  const started = performance.now();
  for (;;) {
    const waiting = await countWaiting(sql, runTag);
    if (waiting === 0) return performance.now();
    if (performance.now() - started > DRAIN_TIMEOUT_MS) {
      failures.push(`async: ${waiting} events still waiting after ${DRAIN_TIMEOUT_MS} ms`);
      return performance.now();
    }
    await sleep(BACKLOG_SAMPLE_MS / 2);
  }
}

/** Samples the backlog while `work` runs; answers the largest seen. */
async function sampleBacklogDuring(sql: postgres.Sql, runTag: string, work: Promise<unknown>): Promise<number> {
  let done = false;
  void work.finally(() => {
    done = true;
  });
  let max = 0;
  while (!done) {
    max = Math.max(max, await countWaiting(sql, runTag));
    await sleep(BACKLOG_SAMPLE_MS);
  }
  return max;
}

/**
 * Pays the maintenance the previous phase left before the next one is timed: the phases run one
 * after another on one database, and autovacuum (its naptime is a minute) or a checkpoint (with its
 * full-page writes afterwards) would otherwise land on whichever phase came next, the async one.
 * CHECKPOINT needs a superuser or pg_checkpoint; on a database that refuses it the bench goes on.
 */
async function settle(sql: postgres.Sql): Promise<void> {
  await sql`vacuum analyze webhook_events, subscriptions, outbox_messages`;
  await sql`checkpoint`.catch(() => {});
}

interface ModeSettings {
  events: number;
  warmup: number;
  paced: number;
  concurrency: number;
  logLevel: string;
  dbPoolMax: number;
}

async function runMode(
  mode: 'sync' | 'async',
  database: BenchDatabase,
  tmp: string,
  settings: ModeSettings,
  failures: string[],
  /** Async only: the rate of the steady phase (sync mode's events/s from the same run). */
  pacedRate?: number,
): Promise<ModeFigures> {
  const secret = randomBytes(32).toString('hex');
  const stderrFile = join(tmp, `${mode}.stderr.log`);
  const stdoutFile = join(tmp, `${mode}.stdout.log`);
  const paced = mode === 'async' ? settings.paced : 0;
  const total = settings.events + paced;
  const service = await startService({
    env: intakeServiceEnv(database.url, secret, {
      LOG_LEVEL: settings.logLevel,
      DB_POOL_MAX: String(settings.dbPoolMax),
      DATA_DIR: join(tmp, `${mode}-data`),
      PROCESSING_MODE: mode,
      // The bench measures acceptance, not the gate: every event must fit.
      INBOX_MAX_BACKLOG: String(total * 2),
      WORKER_INTERVAL_MS: process.env.WORKER_INTERVAL_MS || '200',
    }),
    stdoutFile,
    stderrFile,
  });
  const sql = postgres(database.url, { max: 1, onnotice: () => {} });
  const pool = new Pool(service.origin, { connections: settings.concurrency, pipelining: 1 });
  try {
    const runId = `${mode}${randomBytes(3).toString('hex')}`;
    // The event ids start with the bench's `evt_<runId>` prefix (bench/lib/acme.ts).
    const tag = `evt_${runId}`;
    const signedAt = Math.floor(Date.now() / 1000);
    const requests = Array.from({ length: total }, (_, index) =>
      signedAcmeEvent({ secret, runId, index, nowSeconds: signedAt }),
    );
    const expected = mode === 'async' ? [202, '{"received":true,"queued":true}'] : [200, '{"received":true}'];
    const accept = (status: number, body: string) => status === expected[0] && body === expected[1];
    const load = { pool, concurrency: settings.concurrency, accept };
    console.log(`${mode}: warming up with ${settings.warmup} events`);
    await runLoad({ ...load, requests: requests.slice(0, settings.warmup) });
    if (mode === 'async') await waitForEmptyBacklog(sql, tag, failures);
    await settle(sql);
    console.log(`${mode}: sending ${settings.events - settings.warmup} events at concurrency ${settings.concurrency}`);
    const burstLogFrom = fileSize(stdoutFile);
    const burstStarted = performance.now();
    const burstCpu = startCpuMeter(service.pid, database.postmasterPid);
    const timed = await runLoad({ ...load, requests: requests.slice(settings.warmup, settings.events) });
    const figures: ModeFigures = {
      eventsPerSecond: round(timed.accepted / (timed.elapsedMs / 1000), 1),
      cpu: perEvent(burstCpu(), timed.accepted),
      p50Ms: round(percentile(timed.latenciesMs, 50)),
      p99Ms: round(percentile(timed.latenciesMs, 99)),
      accepted: timed.accepted,
      rejected: timed.rejections.length,
    };
    if (timed.rejections.length > 0) failures.push(`${mode}: ${timed.rejections.length} unexpected answers`);
    if (mode === 'async') {
      const burstEnded = performance.now();
      const backlogAtBurstEnd = await countWaiting(sql, tag);
      const drainCpu = startCpuMeter(service.pid, database.postmasterPid);
      const emptied = await waitForEmptyBacklog(sql, tag, failures);
      const drainSpent = drainCpu();
      const duringBurst = workerPassesSince(stdoutFile, burstLogFrom);
      const pacedLogFrom = fileSize(stdoutFile);
      const drainSeconds = (emptied - burstEnded) / 1000;
      const rate = pacedRate ?? figures.eventsPerSecond;
      await settle(sql);
      console.log(`async: sending ${paced} events paced at ${rate} events/s (the sync rate)`);
      const steady = runLoad({ ...load, requests: requests.slice(settings.events), ratePerSecond: rate });
      const maxBacklog = await sampleBacklogDuring(sql, tag, steady);
      const steadyResult = await steady;
      const backlogAtEnd = await countWaiting(sql, tag);
      await waitForEmptyBacklog(sql, tag, failures);
      const pacedWorker = workerPassesSince(stdoutFile, pacedLogFrom);
      if (steadyResult.rejections.length > 0) {
        failures.push(`async paced: ${steadyResult.rejections.length} unexpected answers`);
      }
      figures.worker = {
        backlogAtBurstEnd,
        drainSeconds: round(drainSeconds, 2),
        drainPerSecond: round(backlogAtBurstEnd / Math.max(drainSeconds, 0.001), 1),
        drainCpu: perEvent(drainSpent, backlogAtBurstEnd),
        appliedPerSecond: round(timed.accepted / ((emptied - burstStarted) / 1000), 1),
        duringBurst,
        paced: {
          offeredPerSecond: rate,
          acceptedPerSecond: round(steadyResult.accepted / (steadyResult.elapsedMs / 1000), 1),
          seconds: round(steadyResult.elapsedMs / 1000, 2),
          maxBacklog,
          backlogAtEnd,
          keptUp: backlogAtEnd <= rate,
          p50Ms: round(percentile(steadyResult.latenciesMs, 50)),
          p99Ms: round(percentile(steadyResult.latenciesMs, 99)),
          worker: pacedWorker,
        },
      };
    }
    const counts = await countStatus(sql, tag);
    if ((counts.completed ?? 0) !== total) {
      failures.push(`${mode}: ${counts.completed ?? 0} completed rows for ${total} events`);
    }
    return figures;
  } finally {
    await pool.close();
    await sql.end({ timeout: 5 });
    const code = await service.stop();
    if (code !== 0) {
      failures.push(`${mode}: the service exited with ${code ?? 'a signal'} on SIGTERM`);
      console.error(tail(stderrFile));
    }
  }
}

export async function benchAsyncIntake(): Promise<boolean> {
  const settings: ModeSettings = {
    events: intFromEnv('BENCH_EVENTS', 10_000, 2),
    warmup: intFromEnv('BENCH_WARMUP', 1_000, 0),
    paced: intFromEnv('BENCH_PACED_EVENTS', 6_000, 1),
    concurrency: intFromEnv('BENCH_CONCURRENCY', 32, 1),
    logLevel: process.env.BENCH_LOG_LEVEL || 'info',
    dbPoolMax: intFromEnv('DB_POOL_MAX', 10, 1),
  };
  if (settings.warmup >= settings.events) throw new Error('BENCH_WARMUP must be below BENCH_EVENTS');
  const startedAt = new Date();
  const failures: string[] = [];
  const misses: string[] = [];
  const tmp = mkdtempSync(join(tmpdir(), 'webhook-inbox-bench-'));
  chmodSync(tmp, 0o755);
  let database: BenchDatabase | undefined;
  try {
    console.log(
      `starting ${process.env.BENCH_DATABASE_URL ? 'a database on BENCH_DATABASE_URL' : 'embedded PostgreSQL'}`,
    );
    database = await freshDatabase(join(tmp, 'db'));
    const sync = await runMode('sync', database, tmp, settings, failures);
    const asynchronous = await runMode('async', database, tmp, settings, failures, sync.eventsPerSecond);
    const worker = asynchronous.worker;
    if (worker === undefined) throw new Error('the async run measured no worker figures');
    const ratio = round(asynchronous.eventsPerSecond / sync.eventsPerSecond, 2);
    const workerRatio = round(worker.drainPerSecond / sync.eventsPerSecond, 2);
    if (ratio < TARGET_RATIO) misses.push(`async acceptance is ${ratio}x sync, target ${TARGET_RATIO}x`);
    if (workerRatio < 1) misses.push(`the worker drains at ${workerRatio}x sync, target 1x`);
    const mark = targetMark;
    const { paced } = worker;
    console.log(
      `\n${formatTable(
        `intake, sync vs async (${settings.concurrency} connections, ${settings.events - settings.warmup} timed events each)`,
        [
          { label: 'sync events/s', value: sync.eventsPerSecond, note: `p50 ${sync.p50Ms} ms, p99 ${sync.p99Ms} ms` },
          { label: '', value: '', note: describeCpu(sync.cpu) },
          {
            label: 'async acceptance events/s',
            value: asynchronous.eventsPerSecond,
            note: `p50 ${asynchronous.p50Ms} ms, p99 ${asynchronous.p99Ms} ms`,
          },
          { label: '', value: '', note: `${describeCpu(asynchronous.cpu)} (the worker's, if it ran, included)` },
          { label: 'async / sync', value: ratio, note: `target >= ${TARGET_RATIO}: ${mark(ratio >= TARGET_RATIO)}` },
          {
            label: 'worker drain events/s',
            value: worker.drainPerSecond,
            note: `${worker.backlogAtBurstEnd} waiting at the burst's end, empty ${worker.drainSeconds} s later; ${workerRatio}x sync, target >= 1: ${mark(workerRatio >= 1)}`,
          },
          { label: '', value: '', note: describeCpu(worker.drainCpu) },
          {
            label: 'burst applied events/s',
            value: worker.appliedPerSecond,
            note: `burst start to empty backlog; the worker deferred ${worker.duringBurst.deferredSeconds} s to the saturated intake`,
          },
          {
            label: 'paced at the sync rate',
            value: paced.acceptedPerSecond,
            note: `${paced.seconds} s; backlog max ${paced.maxBacklog}, ${paced.backlogAtEnd} at the end; within 1 s of intake: ${paced.keptUp ? 'yes' : 'no'} (no target)`,
          },
          {
            label: '',
            value: '',
            note: `p50 ${paced.p50Ms} ms, p99 ${paced.p99Ms} ms; the worker deferred ${paced.worker.deferredSeconds} s`,
          },
        ],
      )}\n`,
    );
    const file = writeResult('intake-async', startedAt, {
      benchmark: 'intake-async',
      startedAt: startedAt.toISOString(),
      ok: failures.length === 0,
      failures,
      misses,
      settings: { ...settings, database: database.kind },
      context: runContext(),
      figures: { sync, async: asynchronous, asyncToSyncRatio: ratio, workerToSyncRatio: workerRatio },
    });
    console.log(`written to ${file}`);
  } catch (error) {
    failures.push(error instanceof Error ? error.message : String(error));
  } finally {
    await database?.dispose().catch(() => {});
    if (!process.env.BENCH_KEEP_TMP) rmSync(tmp, { recursive: true, force: true });
    else console.log(`kept ${tmp}`);
  }
  return verdict(failures, misses);
}
