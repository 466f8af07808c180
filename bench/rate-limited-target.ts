// `npm run bench:rate-limited`: what a destination that rate-limits receives (the target: a 20/s
// rate-limited destination receives at least 18 messages a second, sustained for a minute).
//
// Runs the service as `npm start` does (bin/start.js, production mode, default settings but the
// target) on a fresh database holding a backlog of pending messages, against an HTTP target in a
// process of its own that takes RATE_LIMITED_RATE (20) requests a second and answers the rest 429
// with `Retry-After: 1` (bench/lib/rate-limited-target.ts; RATE_LIMITED_KIND `window`, a fixed
// one-second window, or `bucket`, a token bucket; both by default, one run each). After
// RATE_LIMITED_WARMUP (5) seconds from the first message taken, counts for RATE_LIMITED_SECONDS (60)
// seconds the messages the target took and the 429s it answered. Prints the rate received, the
// slowest 10-second stretch, and the 429s a second; the target is 90% of the limit (18/s at 20/s).
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { type BenchDatabase, freshDatabase } from './lib/database.ts';
import { exitWhenDone } from './lib/exit.ts';
import { type LimiterKind, type RateLimitedTarget, startRateLimitedTarget } from './lib/rate-limited-target.ts';
import { runContext, writeResult } from './lib/results.ts';
import { type RunningService, startService } from './lib/service.ts';
import { formatTable, round } from './lib/stats.ts';
import { targetMark, verdict } from './lib/targets.ts';

const rate = Number(process.env.RATE_LIMITED_RATE ?? 20);
const seconds = Number(process.env.RATE_LIMITED_SECONDS ?? 60);
const warmupSeconds = Number(process.env.RATE_LIMITED_WARMUP ?? 5);
const kinds = (process.env.RATE_LIMITED_KIND ?? 'window,bucket').split(',') as LimiterKind[];
/** The share of the target's limit it must receive. */
const TARGET_SHARE = 0.9;
const STRETCH_SECONDS = 10;

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** `count` pending messages due now, oldest first (as bench/outbox.ts seeds them). */
async function seed(url: string, count: number): Promise<void> {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    await sql`
      insert into outbox_messages (topic, deduplication_key, payload, created_at, available_at)
      select 'subscription.changed', 'acme:evt_rate_' || n || ':subscription.changed',
        jsonb_build_object('external_id', 'sub_rate_' || n, 'status', 'active'),
        now() - interval '1 minute' + n * interval '1 microsecond',
        now() - interval '1 minute' + n * interval '1 microsecond'
      from generate_series(1, ${count}::int) as n`;
  } finally {
    await sql.end({ timeout: 5 });
  }
}

interface Figures {
  kind: LimiterKind;
  limitPerSecond: number;
  seconds: number;
  received: number;
  perSecond: number;
  slowestStretchPerSecond: number;
  fastestStretchPerSecond: number;
  refused429: number;
  refused429PerSecond: number;
  loadAverage: number[];
}

async function measure(kind: LimiterKind, tmp: string): Promise<Figures> {
  let database: BenchDatabase | undefined;
  let service: RunningService | undefined;
  let target: RateLimitedTarget | undefined;
  try {
    database = await freshDatabase(join(tmp, `db-${kind}`));
    // More than the run can send, so the relay never runs dry.
    await seed(database.url, Math.ceil(rate * (warmupSeconds + seconds + 30) * 1.5));
    target = await startRateLimitedTarget(rate, kind);
    service = await startService({
      env: {
        NODE_ENV: 'production',
        DATABASE_URL: database.url,
        ACME_WEBHOOK_SECRET: 'rate-limited-bench-secret',
        OUTBOX_TARGET_URL: target.url,
        LOG_LEVEL: 'warn',
      },
      stdoutFile: join(tmp, `service-${kind}.stdout.log`),
      stderrFile: join(tmp, `service-${kind}.stderr.log`),
    });
    let first: number | undefined;
    while (first === undefined) {
      first = (await target.counts()).accepted[0];
      if (first === undefined) await pause(100);
    }
    const from = first + warmupSeconds * 1000;
    const until = from + seconds * 1000;
    const refusedAtStart = await (async () => {
      await pause(Math.max(0, from - Date.now()));
      return (await target.counts()).refused;
    })();
    await pause(Math.max(0, until - Date.now()) + 200);
    const loadAverage = loadavg().map((value) => round(value, 2));
    const counts = await target.counts();
    const taken = counts.accepted.filter((at) => at >= from && at < until);
    const stretches = Array.from({ length: Math.max(1, Math.floor(seconds / STRETCH_SECONDS)) }, (_, index) => {
      const start = from + index * STRETCH_SECONDS * 1000;
      return taken.filter((at) => at >= start && at < start + STRETCH_SECONDS * 1000).length / STRETCH_SECONDS;
    });
    const refused = counts.refused - refusedAtStart;
    return {
      kind,
      limitPerSecond: rate,
      seconds,
      received: taken.length,
      perSecond: round(taken.length / seconds, 2),
      slowestStretchPerSecond: round(Math.min(...stretches), 1),
      fastestStretchPerSecond: round(Math.max(...stretches), 1),
      refused429: refused,
      refused429PerSecond: round(refused / seconds, 2),
      loadAverage,
    };
  } finally {
    await service?.stop();
    await target?.stop();
    await database?.dispose();
  }
}

async function main(): Promise<boolean> {
  const startedAt = new Date();
  const tmp = mkdtempSync(join(tmpdir(), 'webhook-inbox-rate-limited-'));
  chmodSync(tmp, 0o755);
  const failures: string[] = [];
  const misses: string[] = [];
  const runs: Figures[] = [];
  try {
    for (const kind of kinds) {
      if (kind !== 'window' && kind !== 'bucket') throw new Error(`RATE_LIMITED_KIND: no limiter named ${kind}`);
      const figures = await measure(kind, tmp);
      runs.push(figures);
      const met = figures.perSecond >= rate * TARGET_SHARE;
      if (!met) misses.push(`${kind}: ${figures.perSecond}/s received < ${rate * TARGET_SHARE}/s`);
      if (figures.received === 0) failures.push(`${kind}: the target took nothing`);
      console.log(
        `\n${formatTable(
          `a target taking ${rate}/s (${kind}, 429 + Retry-After), ${seconds} s after ${warmupSeconds} s`,
          [
            {
              label: 'received/s',
              value: figures.perSecond,
              note: `${targetMark(met)} (${rate * TARGET_SHARE}/s)`,
            },
            {
              label: `slowest / fastest ${STRETCH_SECONDS} s`,
              value: `${figures.slowestStretchPerSecond} / ${figures.fastestStretchPerSecond}`,
            },
            { label: '429s answered', value: `${figures.refused429} (${figures.refused429PerSecond}/s)` },
            { label: 'load average', value: figures.loadAverage.join(' ') },
          ],
        )}\n`,
      );
    }
    const file = writeResult('rate-limited', startedAt, {
      ...runContext(),
      startedAt: startedAt.toISOString(),
      ok: failures.length === 0,
      failures,
      misses,
      runs,
    });
    console.log(`written to ${file}`);
  } catch (error) {
    failures.push(error instanceof Error ? error.message : String(error));
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  return verdict(failures, misses);
}

exitWhenDone(main);
