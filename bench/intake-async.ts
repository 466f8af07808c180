// `npm run bench:intake -- --mode async`: synchronous and asynchronous intake in the same run, on
// one fresh database, with the same events shape and concurrency. For each mode a service is started
// (async: PROCESSING_MODE=async with the in-process worker running), a warm-up and a timed phase are
// sent, and events/s measured; in async mode the worker's applied events/s is then measured from the
// start of the timed phase until the backlog is empty. Target: async acceptance >= 1.5x sync.
//
// Environment: BENCH_EVENTS (10000 per mode, warm-up included), BENCH_WARMUP (1000),
// BENCH_CONCURRENCY (32), BENCH_DATABASE_URL (else embedded PostgreSQL), BENCH_LOG_LEVEL (info),
// DB_POOL_MAX (10), WORKER_INTERVAL_MS (200).
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { Pool } from 'undici';
import { signedAcmeEvent } from './lib/acme.ts';
import { type BenchDatabase, freshDatabase } from './lib/database.ts';
import { intFromEnv } from './lib/env.ts';
import { runLoad } from './lib/load.ts';
import { runContext, writeResult } from './lib/results.ts';
import { intakeServiceEnv, startService, tail } from './lib/service.ts';
import { formatTable, percentile, round } from './lib/stats.ts';

const TARGET_RATIO = 1.5;
const DRAIN_TIMEOUT_MS = 300_000;

interface ModeFigures {
  eventsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  accepted: number;
  rejected: number;
  /** Async only: events the worker applied per second, timed phase start to empty backlog. */
  appliedPerSecond?: number;
  drainSeconds?: number;
}

async function countStatus(sql: postgres.Sql, runTag: string): Promise<Record<string, number>> {
  const rows = await sql<{ status: string; n: number }[]>`select status::text as status, count(*)::int as n
    from webhook_events where starts_with(event_id, ${runTag}) group by status`;
  return Object.fromEntries(rows.map((row) => [row.status, row.n]));
}

async function runMode(
  mode: 'sync' | 'async',
  database: BenchDatabase,
  tmp: string,
  settings: { events: number; warmup: number; concurrency: number; logLevel: string; dbPoolMax: number },
  failures: string[],
): Promise<ModeFigures> {
  const secret = randomBytes(32).toString('hex');
  const stderrFile = join(tmp, `${mode}.stderr.log`);
  const service = await startService({
    env: intakeServiceEnv(database.url, secret, {
      LOG_LEVEL: settings.logLevel,
      DB_POOL_MAX: String(settings.dbPoolMax),
      DATA_DIR: join(tmp, `${mode}-data`),
      PROCESSING_MODE: mode,
      // The bench measures acceptance, not the gate: every event must fit.
      INBOX_MAX_BACKLOG: String(settings.events * 2),
      // Overridable to see acceptance without the worker competing (e.g. 60000: it starts after the load).
      WORKER_INTERVAL_MS: process.env.WORKER_INTERVAL_MS || '200',
    }),
    stdoutFile: join(tmp, `${mode}.stdout.log`),
    stderrFile,
  });
  const sql = postgres(database.url, { max: 1, onnotice: () => {} });
  const pool = new Pool(service.origin, { connections: settings.concurrency, pipelining: 1 });
  try {
    const runId = `${mode}${randomBytes(3).toString('hex')}`;
    const signedAt = Math.floor(Date.now() / 1000);
    const requests = Array.from({ length: settings.events }, (_, index) =>
      signedAcmeEvent({ secret, runId, index, nowSeconds: signedAt }),
    );
    const expected = mode === 'async' ? [202, '{"received":true,"queued":true}'] : [200, '{"received":true}'];
    const accept = (status: number, body: string) => status === expected[0] && body === expected[1];
    const load = { pool, concurrency: settings.concurrency, accept };
    console.log(`${mode}: warming up with ${settings.warmup} events`);
    await runLoad({ ...load, requests: requests.slice(0, settings.warmup) });
    console.log(`${mode}: sending ${settings.events - settings.warmup} events at concurrency ${settings.concurrency}`);
    const startedMs = performance.now();
    const timed = await runLoad({ ...load, requests: requests.slice(settings.warmup) });
    const figures: ModeFigures = {
      eventsPerSecond: round(timed.accepted / (timed.elapsedMs / 1000), 1),
      p50Ms: round(percentile(timed.latenciesMs, 50)),
      p99Ms: round(percentile(timed.latenciesMs, 99)),
      accepted: timed.accepted,
      rejected: timed.rejections.length,
    };
    if (timed.rejections.length > 0) failures.push(`${mode}: ${timed.rejections.length} unexpected answers`);
    // The event ids start with the bench's `evt_<runId>` prefix (bench/lib/acme.ts).
    const tag = `evt_${runId}`;
    if (mode === 'async') {
      for (;;) {
        const counts = await countStatus(sql, tag);
        const waiting = (counts.received ?? 0) + (counts.processing ?? 0) + (counts.failed ?? 0);
        if (waiting === 0) break;
        if (performance.now() - startedMs > DRAIN_TIMEOUT_MS) {
          failures.push(`async: ${waiting} events still waiting after ${DRAIN_TIMEOUT_MS} ms`);
          break;
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const drainMs = performance.now() - startedMs;
      figures.drainSeconds = round(drainMs / 1000, 2);
      figures.appliedPerSecond = round(timed.accepted / (drainMs / 1000), 1);
    }
    const counts = await countStatus(sql, tag);
    if ((counts.completed ?? 0) !== settings.events) {
      failures.push(`${mode}: ${counts.completed ?? 0} completed rows for ${settings.events} events`);
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
  const settings = {
    events: intFromEnv('BENCH_EVENTS', 10_000, 2),
    warmup: intFromEnv('BENCH_WARMUP', 1_000, 0),
    concurrency: intFromEnv('BENCH_CONCURRENCY', 32, 1),
    logLevel: process.env.BENCH_LOG_LEVEL || 'info',
    dbPoolMax: intFromEnv('DB_POOL_MAX', 10, 1),
  };
  if (settings.warmup >= settings.events) throw new Error('BENCH_WARMUP must be below BENCH_EVENTS');
  const startedAt = new Date();
  const failures: string[] = [];
  const tmp = mkdtempSync(join(tmpdir(), 'webhook-inbox-bench-'));
  chmodSync(tmp, 0o755);
  let database: BenchDatabase | undefined;
  try {
    console.log(
      `starting ${process.env.BENCH_DATABASE_URL ? 'a database on BENCH_DATABASE_URL' : 'embedded PostgreSQL'}`,
    );
    database = await freshDatabase(join(tmp, 'db'));
    const sync = await runMode('sync', database, tmp, settings, failures);
    const asynchronous = await runMode('async', database, tmp, settings, failures);
    const ratio = round(asynchronous.eventsPerSecond / sync.eventsPerSecond, 2);
    const workerRatio = round((asynchronous.appliedPerSecond ?? 0) / sync.eventsPerSecond, 2);
    if (ratio < TARGET_RATIO) failures.push(`async acceptance is ${ratio}x sync, target ${TARGET_RATIO}x`);
    const mark = (ok: boolean) => (ok ? 'met' : 'MISSED');
    console.log(
      `\n${formatTable(
        `intake, sync vs async (${settings.concurrency} connections, ${settings.events - settings.warmup} timed events each)`,
        [
          { label: 'sync events/s', value: sync.eventsPerSecond, note: `p50 ${sync.p50Ms} ms, p99 ${sync.p99Ms} ms` },
          {
            label: 'async acceptance events/s',
            value: asynchronous.eventsPerSecond,
            note: `p50 ${asynchronous.p50Ms} ms, p99 ${asynchronous.p99Ms} ms`,
          },
          { label: 'async / sync', value: ratio, note: `target >= ${TARGET_RATIO}: ${mark(ratio >= TARGET_RATIO)}` },
          {
            label: 'worker applied events/s',
            value: asynchronous.appliedPerSecond ?? 'n/a',
            note: `backlog empty ${asynchronous.drainSeconds} s after the timed phase began; ${workerRatio}x sync`,
          },
        ],
      )}\n`,
    );
    const file = writeResult('intake-async', startedAt, {
      benchmark: 'intake-async',
      startedAt: startedAt.toISOString(),
      ok: failures.length === 0,
      failures,
      settings: { ...settings, database: database.kind },
      context: runContext(),
      figures: { sync, async: asynchronous, asyncToSyncRatio: ratio, workerToSyncRatio: workerRatio },
    });
    console.log(`written to ${file}`);
  } catch (error) {
    failures.push(error instanceof Error ? error.message : String(error));
  } finally {
    await database?.dispose().catch(() => {});
    rmSync(tmp, { recursive: true, force: true });
  }
  for (const failure of failures) console.error(`FAILED: ${failure}`);
  return failures.length === 0;
}
