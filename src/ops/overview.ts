// The figures behind the dashboard's overview, read from the database so every replica (and every
// Workers isolate) draws the same charts: events received per time bucket by their current status,
// deliveries refused per bucket beside them, and the inbox backlog (events received and not yet
// done, parked ones aside: they wait for an operator, not for the worker) with its oldest age at the
// end of each bucket, reconstructed from received_at and completed_at. The outbox's backlog is the
// current figure only: the table does not record when a message died, so its history cannot be rebuilt.
import { sql } from 'drizzle-orm';
import type { Executor } from '../db/client.ts';
import { doneMinutesLater, webhookEvents } from '../db/schema.ts';
import { outboxStats } from '../outbox/stats.ts';
import { arrivalsPerBucket, countEventsFromCounters } from './event-counts.ts';
import { oldestUnprocessedReceivedAt } from './events.ts';
import { rejectionsPerBucket } from './rejections.ts';

const doneLaterCondition = doneMinutesLater(webhookEvents);

/** The statuses of events not done yet that the backlog counts (parked ones wait for an operator). */
const UNFINISHED = ['received', 'processing', 'failed'] as const;

/** How events are grouped in the charts: the statuses, with the two in-flight ones as `pending`. */
export const OUTCOMES = ['completed', 'ignored', 'pending', 'failed', 'parked', 'dead_letter'] as const;
export type Outcome = (typeof OUTCOMES)[number];

export interface Window {
  /** Start of the first bucket (inclusive), ms since the epoch. */
  fromMs: number;
  bucketMs: number;
  buckets: number;
}

/** The window of `buckets` buckets of `bucketMs` ending at the bucket that holds `nowMs`. */
export function windowEndingAt(nowMs: number, bucketMs: number, buckets: number): Window {
  const end = Math.floor(nowMs / bucketMs) * bucketMs + bucketMs;
  return { fromMs: end - buckets * bucketMs, bucketMs, buckets };
}

export interface Overview {
  window: Window;
  /** Per bucket, events received in it by current outcome. */
  received: Array<Record<Outcome, number>>;
  /** Per bucket, deliveries refused in it (404, 413, 415, 401, 400, 503), from the minute counts. */
  refused: number[];
  /** Per bucket, events not yet done at its end, and how long the oldest of them had waited (s). */
  backlog: Array<{ events: number; oldestSeconds: number }>;
  outbox: { pending: number; dead: number; oldestPendingSeconds: number };
}

const emptyCounts = (): Record<Outcome, number> => ({
  completed: 0,
  ignored: 0,
  pending: 0,
  failed: 0,
  parked: 0,
  dead_letter: 0,
});

export async function readOverview(db: Executor, window: Window, nowMs: number): Promise<Overview> {
  const from = new Date(window.fromMs).toISOString();
  const to = new Date(window.fromMs + window.buckets * window.bucketMs).toISOString();
  const bucketSeconds = window.bucketMs / 1000;
  // From the minute counters (event-counts.ts): buckets are whole minutes, so each minute falls in one.
  const toMs = window.fromMs + window.buckets * window.bucketMs;
  const arrivals = await arrivalsPerBucket(db, { fromMs: window.fromMs, toMs, bucketMs: window.bucketMs });
  const received = Array.from({ length: window.buckets }, emptyCounts);
  for (const { start, status, n } of arrivals) {
    const counts = received[Math.floor((start.getTime() - window.fromMs) / window.bucketMs)];
    const outcome = status === 'received' || status === 'processing' ? 'pending' : status;
    if (counts !== undefined && outcome in counts) counts[outcome as Outcome] += n;
  }

  // An event is in the backlog at a point (a bucket's end, the last one capped at now) when it had
  // arrived by then and was not done yet. Two kinds, each read without touching the other rows:
  // - events not done now (received, processing, failed): the counters give how many arrived in
  //   each minute, so a point has all those that arrived before it; the oldest of them is the
  //   oldest event not done, one index lookup per status;
  // - events done since the window began, in a later minute than they arrived in (points are whole
  //   minutes, so an event done within the minute it arrived in spans none): from the index that
  //   holds just them and their arrival times (parked ones were never done), each listing only the
  //   points it spans, so the work grows with those events and their waits, not with events times
  //   buckets.
  const pointAt = (i: number) => Math.min(window.fromMs + (i + 1) * window.bucketMs, nowMs);
  const before = await countEventsFromCounters(db, { until: new Date(window.fromMs) });
  const notDoneBefore = UNFINISHED.reduce((sum, status) => sum + (before[status] ?? 0), 0);
  const notDoneArrivals = arrivals
    .filter(({ status }) => (UNFINISHED as readonly string[]).includes(status))
    .sort((a, b) => a.start.getTime() - b.start.getTime());
  const [oldest] = await db.execute<{ at: string | null }>(
    sql`select (extract(epoch from ${oldestUnprocessedReceivedAt}) * 1000)::float8::text as at`,
  );
  const oldestNotDoneMs = oldest?.at == null ? null : Number(oldest.at);
  const doneLaterRows = await db.execute<{ i: number; events: number; oldest: string | null }>(sql`
    with points as (
      select i, least(${from}::timestamptz + (i + 1) * ${bucketSeconds} * interval '1 second',
        ${new Date(nowMs).toISOString()}::timestamptz) as at
      from generate_series(0, ${window.buckets - 1}) as i
    ), done_later as (
      select received_at, completed_at,
        greatest(0, ceil(extract(epoch from received_at - ${from}::timestamptz) / ${bucketSeconds})::int - 1)
          as first_point,
        least(${window.buckets - 1},
          floor(extract(epoch from completed_at - ${from}::timestamptz) / ${bucketSeconds})::int) as last_point
      from webhook_events
      where ${doneLaterCondition} and completed_at > ${from}::timestamptz and received_at < ${to}::timestamptz
    )
    select p.i, count(*)::int as events, extract(epoch from p.at - min(u.received_at))::text as oldest
    from done_later u
    join points p on p.i between u.first_point and u.last_point
    where u.received_at <= p.at and u.completed_at > p.at
    group by p.i, p.at`);
  const doneLater = new Map(doneLaterRows.map((row) => [row.i, row]));
  let notDone = notDoneBefore;
  let next = 0;
  const backlog = Array.from({ length: window.buckets }, (_, i) => {
    const at = pointAt(i);
    for (; next < notDoneArrivals.length && (notDoneArrivals[next]?.start.getTime() ?? at) < at; next++) {
      notDone += notDoneArrivals[next]?.n ?? 0;
    }
    const finished = doneLater.get(i);
    const waitedSeconds = [
      finished === undefined ? 0 : Number(finished.oldest ?? 0),
      notDone > 0 && oldestNotDoneMs !== null ? (at - oldestNotDoneMs) / 1000 : 0,
    ];
    return { events: notDone + (finished?.events ?? 0), oldestSeconds: Math.max(0, ...waitedSeconds) };
  });

  const [outbox, refused] = await Promise.all([outboxStats(db, nowMs), rejectionsPerBucket(db, window)]);
  return {
    window,
    received,
    refused,
    backlog,
    outbox: { pending: outbox.pending, dead: outbox.dead, oldestPendingSeconds: outbox.oldestPendingAgeSeconds },
  };
}
