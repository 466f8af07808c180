// bench:storm's replay phase: a captured delivery of a sender that signs no time
// (LINE: 1,000 events, each a duplicate after the first) replayed REPLAY_PER_SECOND times a second
// while genuine acme deliveries arrive at GENUINE_PER_SECOND, against `npm start` with its delivery
// log on. The same genuine traffic is timed first alone (quiet), then under the replay; prints both
// latencies (p50, p99) and their ratios (target ≤ 1.5), whether every genuine delivery kept its
// delivery-log row, and the log lines and bytes the service wrote meanwhile. The replays are sent
// from a thread of their own, so their sending is not timed as the genuine deliveries' latency.
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import postgres from 'postgres';
import { Pool } from 'undici';
import { signedAcmeEvent } from './acme.ts';
import { batchSenders } from './batch-senders.ts';
import type { PreparedRequest } from './load.ts';
import { type Answer, openLoop, pause } from './open-loop.ts';
import { startService } from './service.ts';
import { percentile, round } from './stats.ts';

/** The batch senders' signing secret (bench/lib/batch-senders.ts). */
const LINE_SECRET = 'bench-secret';

export interface ReplayFloodOptions {
  databaseUrl: string;
  workDir: string;
  /** Seconds of each phase (quiet, then under the replay). */
  seconds: number;
  events: number;
  replayPerSecond: number;
  genuinePerSecond: number;
  /** Where the service writes a V8 CPU profile, when one is wanted. */
  cpuProfileDir?: string | undefined;
  /** More node flags for the service (e.g. `--trace-gc`, whose lines go to its output). */
  nodeArgs?: readonly string[];
}

export interface ReplayFloodFigures {
  events: number;
  replayPerSecond: number;
  genuinePerSecond: number;
  seconds: number;
  quiet: { sent: number; answered200: number; p50Ms: number; p99Ms: number };
  replay: { sent: number; answered200: number; p50Ms: number; p99Ms: number };
  replays: { sent: number; answered200: number; p50Ms: number; statuses: Record<string, number> };
  /** The service's log lines of the replay phase, by message, the most frequent first (at most ten). */
  logMessages: Record<string, number>;
  /**
   * The service's pauses for full collections in each phase (a mark-compact's, and each of its
   * incremental-marking steps'), how many and their total, from its /metrics.
   */
  fullCollections: { quiet: Collections; replay: Collections };
  p50Ratio: number;
  p99Ratio: number;
  /** Genuine deliveries of the replay phase with a delivery-log row. */
  genuineLogged: number;
  /** What the service wrote to its output during the replay phase. */
  logLinesDuringReplay: number;
  logBytesDuringReplay: number;
}

export interface Collections {
  count: number;
  pauseMs: number;
}

/** A full collection's samples: its final pause (`major`) or its incremental marking's (`incremental`). */
const FULL_GC = /^nodejs_gc_duration_seconds_(count|sum)\{kind="(?:major|incremental)"\} (\S+)$/;

/** The service's full-collection pauses so far and their total (prom-client's GC histogram on /metrics). */
async function collections(origin: string): Promise<Collections> {
  const text = await (await fetch(`${origin}/metrics`)).text();
  const total = { count: 0, sum: 0 };
  for (const line of text.split('\n')) {
    const match = FULL_GC.exec(line);
    if (match?.[1] === 'count' || match?.[1] === 'sum') total[match[1]] += Number(match[2]);
  }
  return { count: total.count, pauseMs: total.sum * 1000 };
}

const collectionsBetween = (before: Collections, after: Collections): Collections => ({
  count: after.count - before.count,
  pauseMs: round(after.pauseMs - before.pauseMs, 1),
});

function countBy(values: readonly (string | number)[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const value of values) counts[String(value)] = (counts[String(value)] ?? 0) + 1;
  return counts;
}

/** A JSON log line's `msg` (with its `step` for a maintenance step's line). */
function messageOf(line: string): string {
  try {
    const parsed = JSON.parse(line) as { msg?: unknown; step?: unknown };
    return [parsed.msg, parsed.step].filter((part) => typeof part === 'string').join(': ');
  } catch {
    return '(not JSON)';
  }
}

/** One LINE delivery of `events` events, signed as LINE signs (the body's HMAC, no time). */
function capturedLineDelivery(events: number): PreparedRequest {
  const line = batchSenders.find((sender) => sender.name === 'line');
  if (line === undefined) throw new Error('no LINE batch sender');
  const now = Math.floor(Date.now() / 1000);
  const body = line.body(Array.from({ length: events }, () => JSON.stringify(line.event(now))));
  return {
    path: '/webhooks/line',
    headers: { 'content-type': 'application/json', ...line.headers(body, now) },
    body: Buffer.from(body),
  };
}

/**
 * The replay flood, sent from a thread of its own (bench/lib/replay-sender.ts): writing a 420 KB copy
 * several times a second on the thread that times the genuine deliveries would add that work to
 * their measured latency, the service's or not.
 */
async function replaySender(
  origin: string,
  captured: PreparedRequest,
  perSecond: number,
  seconds: number,
): Promise<{ run(): Promise<Answer[]> }> {
  const sender = new Worker(new URL('./replay-sender.ts', import.meta.url), {
    workerData: { origin, path: captured.path, headers: captured.headers, body: captured.body, perSecond, seconds },
  });
  const failed = new Promise<never>((_, reject) => {
    sender.once('error', reject);
    sender.once('exit', (code) => {
      if (code !== 0) reject(new Error(`the replay sender exited with ${code}`));
    });
  });
  await Promise.race([new Promise((resolve) => sender.once('message', resolve)), failed]);
  return {
    run: () => {
      const answers = new Promise<Answer[]>((resolve) => sender.once('message', resolve));
      sender.postMessage('go');
      return Promise.race([answers, failed]);
    },
  };
}

const summary = (answers: readonly Answer[]) => {
  const ok = answers.filter((answer) => answer.status === 200);
  const ms = Float64Array.from(ok.map((answer) => answer.ms));
  return {
    sent: answers.length,
    answered200: ok.length,
    p50Ms: round(percentile(ms, 50)),
    p99Ms: round(percentile(ms, 99)),
  };
};

export async function measureReplayFlood(options: ReplayFloodOptions): Promise<ReplayFloodFigures> {
  const secret = 'replay-flood-acme-secret';
  const stdoutFile = join(options.workDir, 'replay.stdout.log');
  const service = await startService({
    env: {
      NODE_ENV: 'production',
      DATABASE_URL: options.databaseUrl,
      ACME_WEBHOOK_SECRET: secret,
      LINE_WEBHOOK_SECRET: LINE_SECRET,
      // A 1,000-event LINE delivery is about 420 KB, past the 256 KiB default.
      MAX_BODY_BYTES: String(2 * 1024 * 1024),
      LOG_LEVEL: 'info',
      RELAY_INTERVAL_MS: '0',
    },
    stdoutFile,
    stderrFile: join(options.workDir, 'replay.stderr.log'),
    nodeArgs: [
      ...(options.cpuProfileDir === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${options.cpuProfileDir}`]),
      ...(options.nodeArgs ?? []),
    ],
  });
  const genuinePool = new Pool(service.origin, { connections: 16 });
  try {
    const runId = `replay${Date.now()}`;
    let index = 0;
    const genuine = () => signedAcmeEvent({ secret, runId, index: index++, nowSeconds: Math.floor(Date.now() / 1000) });
    const captured = capturedLineDelivery(options.events);
    // The first delivery is genuine: its events are stored, and every replay is then their duplicate.
    const first = await genuinePool.request({
      method: 'POST',
      path: captured.path,
      headers: captured.headers,
      body: captured.body,
    });
    await first.body.dump();
    if (first.statusCode !== 200) throw new Error(`the LINE delivery was answered ${first.statusCode}`);
    // The replays' thread loaded first (its start-up is CPU the phases must not share), a warm-up,
    // then the quiet phase.
    const sender = await replaySender(service.origin, captured, options.replayPerSecond, options.seconds);
    await openLoop(genuinePool, options.genuinePerSecond, 2, genuine);
    const gcBeforeQuiet = await collections(service.origin);
    const quiet = summary(await openLoop(genuinePool, options.genuinePerSecond, options.seconds, genuine));
    const gcBeforeReplay = await collections(service.origin);
    const firstUnderReplay = index;
    const logBefore = statSync(stdoutFile).size;
    const [replays, underReplay] = await Promise.all([
      sender.run(),
      openLoop(genuinePool, options.genuinePerSecond, options.seconds, genuine),
    ]);
    const lastUnderReplay = index;
    const gcAfterReplay = await collections(service.origin);
    const written = readFileSync(stdoutFile).subarray(logBefore);
    const sql = postgres(options.databaseUrl, { max: 1, onnotice: () => {} });
    let logged = 0;
    try {
      const ids = Array.from(
        { length: lastUnderReplay - firstUnderReplay },
        (_, offset) => `evt_${runId}_${firstUnderReplay + offset}`,
      );
      // The delivery log is written every DELIVERY_LOG_FLUSH_MS (250); a loaded machine may lag, so
      // the rows are counted until all are there or the count has not moved for five seconds.
      let stillSince = performance.now();
      while (logged < ids.length && performance.now() - stillSince < 5_000) {
        const [row] = await sql<{ logged: number }[]>`
          select count(distinct event_id)::int as logged from webhook_deliveries
          where provider = 'acme' and event_id = any(${ids})`;
        if ((row?.logged ?? 0) > logged) stillSince = performance.now();
        logged = row?.logged ?? 0;
        if (logged < ids.length) await pause(250);
      }
    } finally {
      await sql.end({ timeout: 5 });
    }
    const replay = summary(underReplay);
    const replaySummary = summary(replays);
    return {
      events: options.events,
      replayPerSecond: options.replayPerSecond,
      genuinePerSecond: options.genuinePerSecond,
      seconds: options.seconds,
      quiet,
      replay,
      replays: {
        sent: replaySummary.sent,
        answered200: replaySummary.answered200,
        p50Ms: replaySummary.p50Ms,
        statuses: countBy(replays.map((answer) => answer.status)),
      },
      fullCollections: {
        quiet: collectionsBetween(gcBeforeQuiet, gcBeforeReplay),
        replay: collectionsBetween(gcBeforeReplay, gcAfterReplay),
      },
      p50Ratio: round(replay.p50Ms / Math.max(0.01, quiet.p50Ms)),
      p99Ratio: round(replay.p99Ms / Math.max(0.01, quiet.p99Ms)),
      genuineLogged: logged,
      logLinesDuringReplay: written.toString('utf8').split('\n').filter(Boolean).length,
      logMessages: Object.fromEntries(
        Object.entries(countBy(written.toString('utf8').split('\n').filter(Boolean).map(messageOf)))
          .sort((a, b) => b[1] - a[1])
          .slice(0, 10),
      ),
      logBytesDuringReplay: written.length,
    };
  } finally {
    await genuinePool.close();
    await service.stop();
  }
}
