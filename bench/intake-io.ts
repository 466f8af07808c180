// `npx tsx bench/intake-io.ts`: what a stored event costs PostgreSQL on an empty database and on
// bench:scale's filled one (kept with BENCH_SCALE_REUSE=1), two services up, intake rounds
// alternating: per event, the buffers found in shared_buffers (hit) and not (read) for every table and
// index (pg_statio_*, counted per database, so other work on the server does not show), the WAL
// records, full-page images and bytes (pg_stat_wal, the whole server: run it on a quiet one) and the
// checkpoints meanwhile. Environment: BENCH_DATABASE_URL (the server), FILLED
// (bench_scale_10000000), ROUNDS (3 a side), EVENTS (20000 a round), WARMUP (2000 each, first).
// Every answer must be a 200 (else the run fails); the rounds go to bench/results/intake-io-*.json.
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { signedAcmeEvent } from './lib/acme.ts';
import { intFromEnv } from './lib/env.ts';
import { runContext, writeResult } from './lib/results.ts';
import { scaleServer, throwAwayName } from './lib/scale-databases.ts';
import { intakeServiceEnv, startService } from './lib/service.ts';
import { intakeLoad } from './lib/wrk.ts';

const server = await scaleServer('/nonexistent');
const filledUrl = server.urlOf(process.env.FILLED ?? 'bench_scale_10000000');
const emptyName = throwAwayName('bench_io_empty');
const emptyUrl = await server.create(emptyName);
const secret = randomBytes(16).toString('hex');
const tmp = mkdtempSync(join(tmpdir(), 'intake-io-'));
const rounds = intFromEnv('ROUNDS', 3, 1);
const count = intFromEnv('EVENTS', 20000, 1);
const warmup = intFromEnv('WARMUP', 2000, 1);
const startedAt = new Date();
const results: Record<string, unknown>[] = [];
const failures: string[] = [];

async function snapshot(url: string) {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    const idx = await sql<{ name: string; hit: string; read: string }[]>`
      select indexrelname as name, idx_blks_hit::text as hit, idx_blks_read::text as read from pg_statio_user_indexes
      union all select relname || ' (heap)', heap_blks_hit::text, heap_blks_read::text from pg_statio_user_tables
      union all select relname || ' (toast)', coalesce(toast_blks_hit, 0)::text, coalesce(toast_blks_read, 0)::text from pg_statio_user_tables`;
    const [wal] = await sql<{ records: string; fpi: string; bytes: string }[]>`
      select wal_records::text as records, wal_fpi::text as fpi, wal_bytes::text as bytes from pg_stat_wal`;
    const [bg] = await sql<{ timed: string; req: string; written: string }[]>`
      select checkpoints_timed::text as timed, checkpoints_req::text as req, buffers_checkpoint::text as written from pg_stat_bgwriter`;
    return { idx: new Map(idx.map((r) => [r.name, { hit: Number(r.hit), read: Number(r.read) }])), wal, bg };
  } finally {
    await sql.end();
  }
}

const services = {
  empty: await startService({
    env: intakeServiceEnv(emptyUrl, secret, { LOG_LEVEL: 'warn', DATA_DIR: join(tmp, 'e') }),
    stdoutFile: join(tmp, 'e.out'),
    stderrFile: join(tmp, 'e.err'),
  }),
  filled: await startService({
    env: intakeServiceEnv(filledUrl, secret, { LOG_LEVEL: 'warn', DATA_DIR: join(tmp, 'f') }),
    stdoutFile: join(tmp, 'f.out'),
    stderrFile: join(tmp, 'f.err'),
  }),
};
const run = async (origin: string, n: number) => {
  const runId = randomBytes(4).toString('hex');
  const nowSeconds = Math.floor(Date.now() / 1000);
  const result = await intakeLoad({
    origin,
    concurrency: 32,
    request: (index) => signedAcmeEvent({ secret, runId, index, nowSeconds }),
    prepared: n + 640,
    count: n,
  });
  const refused = Object.entries(result.statuses).filter(([status, n]) => status !== '200' && n > 0);
  if (refused.length > 0 || result.errors > 0) {
    failures.push(`${origin}: answers ${JSON.stringify(result.statuses)}, ${result.errors} errors`);
  }
  return result;
};
try {
  for (const side of ['empty', 'filled'] as const) await run(services[side].origin, warmup);
  for (let r = 0; r < rounds; r++) {
    for (const side of ['empty', 'filled'] as const) {
      const url = side === 'empty' ? emptyUrl : filledUrl;
      const before = await snapshot(url);
      const result = await run(services[side].origin, count);
      const after = await snapshot(url);
      const per = (a: number, b: number) => ((a - b) / count).toFixed(2);
      results.push({
        round: r,
        side,
        eventsPerSecond: result.eventsPerSecond,
        p99Ms: result.p99Ms,
        walBytesPerEvent: Number(per(Number(after.wal?.bytes), Number(before.wal?.bytes))),
      });
      const lines = [...after.idx.entries()]
        .map(([name, v]) => {
          const b = before.idx.get(name) ?? { hit: 0, read: 0 };
          return { name, hit: v.hit - b.hit, read: v.read - b.read };
        })
        .filter((x) => x.hit + x.read > count * 0.05)
        .sort((a, b) => b.read - a.read || b.hit - a.hit);
      console.log(
        `round ${r} ${side}: ${result.eventsPerSecond} ev/s p99 ${result.p99Ms} ms; WAL/event ${per(Number(after.wal?.bytes), Number(before.wal?.bytes))} B, ` +
          `FPI/event ${per(Number(after.wal?.fpi), Number(before.wal?.fpi))}, records/event ${per(Number(after.wal?.records), Number(before.wal?.records))} (server-wide); ` +
          `checkpoints ${Number(after.bg?.timed) + Number(after.bg?.req) - Number(before.bg?.timed) - Number(before.bg?.req)}`,
      );
      for (const x of lines)
        console.log(
          `    ${x.name.padEnd(50)} hit/event ${(x.hit / count).toFixed(2)}  read/event ${(x.read / count).toFixed(3)}`,
        );
    }
  }
  const file = writeResult('intake-io', startedAt, { context: runContext(), rounds, count, results, failures });
  console.log(`written to ${file}`);
} finally {
  await services.empty.stop();
  await services.filled.stop();
  await server.drop(emptyName);
  await server.stop();
}
for (const failure of failures) console.error(`FAILED: ${failure}`);
process.exit(failures.length === 0 ? 0 : 1);
