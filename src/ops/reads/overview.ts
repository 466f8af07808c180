// The figures behind the dashboard's overview, read from the database so every replica (and every
// Workers isolate) draws the same charts: events received per time bucket by their current status,
// deliveries refused per bucket beside them, and the inbox backlog (events received and not yet
// done, parked ones aside: they wait for an operator, not for the worker) with its oldest age at the
// end of each bucket, reconstructed from received_at and completed_at. The outbox's backlog is the
// current figure only: the table does not record when a message died, so its history cannot be rebuilt.
import { type SQL, sql } from 'drizzle-orm';
import type { Executor } from '../../db/client.ts';
import { doneMinutesLater, webhookEvents } from '../../db/schema.ts';
import { type OutboxStatsRow, outboxStatsOf, outboxStatsQuery } from '../../outbox/stats.ts';
import { countsByStatus } from './counts.ts';
import { arrivalsQuery, countersQuery } from './event-counts.ts';
import { oldestUnprocessedReceivedAt } from './events.ts';
import { rejectionsPerBucketOf, rejectionsPerBucketQuery } from './rejections.ts';

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
  /** Events by status, all time (a status with none is absent). */
  counts: Record<string, number>;
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

/** A statement's rows as one JSON array (text, parsed here: the driver's own parsers stay out of it). */
const jsonRows = (rows: SQL) => sql`(select coalesce(json_agg(r), '[]'::json)::text from (${rows}) as r)`;

interface StatusCount {
  status: string;
  n: number;
}

export async function readOverview(db: Executor, window: Window, nowMs: number): Promise<Overview> {
  const from = new Date(window.fromMs).toISOString();
  const toMs = window.fromMs + window.buckets * window.bucketMs;
  const to = new Date(toMs).toISOString();
  const bucketSeconds = window.bucketMs / 1000;
  // Everything in one statement (one round trip, one snapshot): the parts read a few thousand
  // counter rows and index entries, and waiting for seven answers in turn cost more than reading them.
  // - arrivals per bucket from the minute counters (event-counts.ts): buckets are whole minutes, so
  //   each minute falls in one;
  // - the counters of all time and of what arrived after the window (normally nothing), so that what
  //   arrived before the window is all time less the window's arrivals less those: no hour counters
  //   are read for it;
  // - the oldest event not done, one index lookup per status;
  // - the events done since the window began, in a later minute than they arrived in, each listing the
  //   points (bucket ends) it spans (below);
  // - the outbox's figures and the refusals per bucket.
  const [row] = await db.execute<{
    arrivals: string;
    all_time: string;
    later: string;
    oldest_not_done_ms: number | null;
    done_later: string;
    outbox: string | null;
    refused: string;
  }>(sql`select
    ${jsonRows(arrivalsQuery({ fromMs: window.fromMs, toMs, bucketMs: window.bucketMs }))} as arrivals,
    ${jsonRows(countersQuery({}))} as all_time,
    ${jsonRows(countersQuery({ since: new Date(toMs) }))} as later,
    (extract(epoch from ${oldestUnprocessedReceivedAt}) * 1000)::float8 as oldest_not_done_ms,
    ${jsonRows(sql`
      with done_later as materialized (
        select received_at, completed_at,
          greatest(0, ceil(extract(epoch from received_at - ${from}::timestamptz) / ${bucketSeconds})::int - 1)
            as first_point,
          least(${window.buckets - 1},
            floor(extract(epoch from completed_at - ${from}::timestamptz) / ${bucketSeconds})::int) as last_point
        from webhook_events
        where ${doneLaterCondition} and completed_at > ${from}::timestamptz and received_at < ${to}::timestamptz
      )
      select p.i, count(*)::int as events, extract(epoch from p.at - min(u.received_at))::float8 as oldest
      from done_later u
      cross join lateral (
        select i, least(${from}::timestamptz + (i + 1) * ${bucketSeconds} * interval '1 second',
          ${new Date(nowMs).toISOString()}::timestamptz) as at
        from generate_series(u.first_point, u.last_point) as i
      ) as p
      where u.received_at <= p.at and u.completed_at > p.at
      group by p.i, p.at`)} as done_later,
    (select row_to_json(o)::text from (${outboxStatsQuery}) as o) as outbox,
    ${jsonRows(rejectionsPerBucketQuery(window))} as refused`);
  if (row === undefined) throw new Error('the overview statement returned no row');
  const arrivals = JSON.parse(row.arrivals) as Array<StatusCount & { i: number }>;
  const allTime = JSON.parse(row.all_time) as StatusCount[];
  const later = JSON.parse(row.later) as StatusCount[];
  const doneLater = new Map(
    (JSON.parse(row.done_later) as Array<{ i: number; events: number; oldest: number }>).map((point) => [
      point.i,
      point,
    ]),
  );

  const received = Array.from({ length: window.buckets }, emptyCounts);
  for (const { i, status, n } of arrivals) {
    const counts = received[i];
    const outcome = status === 'received' || status === 'processing' ? 'pending' : status;
    if (counts !== undefined && outcome in counts) counts[outcome as Outcome] += n;
  }

  // An event is in the backlog at a point (a bucket's end, the last one capped at now) when it had
  // arrived by then and was not done yet. Two kinds, each read without touching the other rows:
  // - events not done now (received, processing, failed): the counters give how many arrived in
  //   each minute, so a point has all those that arrived before it; the oldest of them is the
  //   oldest event not done;
  // - events done since the window began, in a later minute than they arrived in (points are whole
  //   minutes, so an event done within the minute it arrived in spans none): from the index that
  //   holds just them and their arrival times (parked ones were never done), each listing only the
  //   points it spans, so the work grows with those events and their waits, not with events times
  //   buckets.
  const unfinished = (status: string) => (UNFINISHED as readonly string[]).includes(status);
  const total = (rows: StatusCount[]) => rows.filter((r) => unfinished(r.status)).reduce((sum, r) => sum + r.n, 0);
  const unfinishedInWindow = Array.from({ length: window.buckets }, () => 0);
  for (const { i, status, n } of arrivals) {
    if (unfinished(status) && i >= 0 && i < window.buckets) unfinishedInWindow[i] = (unfinishedInWindow[i] ?? 0) + n;
  }
  let unfinishedCount = total(allTime) - total(later) - unfinishedInWindow.reduce((sum, n) => sum + n, 0);
  const oldestUnfinishedMs = row.oldest_not_done_ms;
  const backlog = Array.from({ length: window.buckets }, (_, i) => {
    // Points are bucket ends; the last is now, and every arrival so far came before it.
    const at = Math.min(window.fromMs + (i + 1) * window.bucketMs, nowMs);
    unfinishedCount += unfinishedInWindow[i] ?? 0;
    const finished = doneLater.get(i);
    const waitedSeconds = [
      finished?.oldest ?? 0,
      unfinishedCount > 0 && oldestUnfinishedMs !== null ? (at - oldestUnfinishedMs) / 1000 : 0,
    ];
    return { events: unfinishedCount + (finished?.events ?? 0), oldestSeconds: Math.max(0, ...waitedSeconds) };
  });

  const outbox = outboxStatsOf(row.outbox === null ? undefined : (JSON.parse(row.outbox) as OutboxStatsRow), nowMs);
  return {
    window,
    received,
    refused: rejectionsPerBucketOf(JSON.parse(row.refused) as Array<{ i: number; n: number }>, window),
    backlog,
    counts: countsByStatus(allTime),
    outbox: { pending: outbox.pending, dead: outbox.dead, oldestPendingSeconds: outbox.oldestPendingAgeSeconds },
  };
}
