// `npx tsx bench/overview-profile.tsx`: where the dashboard overview's time goes on a database that
// exists (bench:scale's `bench_scale_<events>`, kept with BENCH_SCALE_REUSE=1): readOverview and every
// other read the overview route makes, alone and together as the route sends them, and rendering the
// page, p50 and p99 of N one at a time after 3 warm-up calls; with EXPLAIN=1 also every statement
// readOverview sends, planned and run five times on one connection, the last EXPLAIN (ANALYZE,
// BUFFERS) printed. Environment: PROFILE_URL (the database), RANGE=hour|day (day), N (30). The
// timings go to bench/results/overview-profile-*.json.
import postgres from 'postgres';
import { OverviewPage } from '../src/admin/dashboard/overview-page.tsx';
import { connectDatabase } from '../src/db/client.ts';
import { activePauses } from '../src/ops/pauses/sender-pauses.ts';
import { listDestinations } from '../src/ops/reads/destinations-view.ts';
import { listEvents } from '../src/ops/reads/events.ts';
import { readOverview, windowEndingAt } from '../src/ops/reads/overview.ts';
import { intFromEnv } from './lib/env.ts';
import { runContext, writeResult } from './lib/results.ts';
import { round } from './lib/stats.ts';

const url = process.env.PROFILE_URL ?? 'postgres://postgres@127.0.0.1:5432/bench_scale_10000000';
const { db, close } = connectDatabase({ url, maxConnections: 10, statementTimeoutMs: 30_000 });
const range = process.env.RANGE === 'hour' ? { bucketMs: 60_000, buckets: 60 } : { bucketMs: 15 * 60_000, buckets: 96 };
const N = intFromEnv('N', 30, 1);
const startedAt = new Date();
const timings: Array<{ label: string; p50Ms: number; p99Ms: number }> = [];

const pct = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)] ?? 0;
};
async function time(label: string, fn: () => Promise<unknown>) {
  const xs: number[] = [];
  for (let i = 0; i < 3; i++) await fn();
  for (let i = 0; i < N; i++) {
    const t0 = performance.now();
    await fn();
    xs.push(performance.now() - t0);
  }
  console.log(`${label.padEnd(40)} p50 ${pct(xs, 0.5).toFixed(1)} p99 ${pct(xs, 0.99).toFixed(1)} ms`);
  timings.push({ label, p50Ms: round(pct(xs, 0.5), 1), p99Ms: round(pct(xs, 0.99), 1) });
}

/** No configured destination: the route's read of their state and backlog, for none. */
const noDestinations = { destinations: [], route: () => [] };
const nowMs = Date.now();
const window = windowEndingAt(nowMs, range.bucketMs, range.buckets);
await time('readOverview', () => readOverview(db, window, nowMs));
await time('page reads (as the route)', () =>
  Promise.all([
    readOverview(db, window, nowMs),
    activePauses(db, nowMs),
    listDestinations(db, noDestinations, nowMs, { rate: false }),
    ...(['failed', 'parked', 'dead_letter'] as const).map((status) => listEvents(db, { status, limit: 10 })),
  ]),
);
await time('activePauses', () => activePauses(db, nowMs));
await time('listDestinations', () => listDestinations(db, noDestinations, nowMs, { rate: false }));
await time('listEvents failed', () => listEvents(db, { status: 'failed', limit: 10 }));
await time('listEvents parked', () => listEvents(db, { status: 'parked', limit: 10 }));
await time('listEvents dead', () => listEvents(db, { status: 'dead_letter', limit: 10 }));
const overview = await readOverview(db, window, nowMs);
const counts = { events: overview.counts };
await time('render OverviewPage', async () =>
  String(
    await (
      <OverviewPage
        range={process.env.RANGE === 'hour' ? 'hour' : 'day'}
        overview={overview}
        latency={Array.from({ length: window.buckets }, () => null)}
        counts={counts.events}
        attention={[]}
        paused={[]}
        destinations={[]}
      />
    ).toString(),
  ),
);

if (process.env.EXPLAIN === '1') {
  const captured: Array<{ query: string; params: unknown[] }> = [];
  const spy = postgres(url, {
    max: 1,
    fetch_types: false,
    connection: { jit: 'off', max_parallel_workers_per_gather: 0 },
    debug: (_c, query, params) => {
      if (!query.startsWith('explain')) captured.push({ query, params: params as unknown[] });
    },
  });
  const { drizzle } = await import('drizzle-orm/postgres-js');
  const sdb = drizzle({ client: spy, casing: 'snake_case' });
  await readOverview(sdb as never, window, nowMs);
  for (const { query, params } of captured) {
    for (let i = 0; i < 4; i++) await spy.unsafe(`explain (analyze, buffers) ${query}`, params as never[]);
    const plan = await spy.unsafe(`explain (analyze, buffers) ${query}`, params as never[]);
    console.log(`\n=== ${query.replace(/\s+/g, ' ').slice(0, 160)}`);
    for (const row of plan) console.log(Object.values(row)[0]);
  }
  await spy.end();
}
await close();
const file = writeResult('overview-profile', startedAt, { context: runContext(), range, n: N, timings });
console.log(`written to ${file}`);
