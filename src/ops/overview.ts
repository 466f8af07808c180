// The figures behind the dashboard's overview, read from the database so every replica (and every
// Workers isolate) draws the same charts: events received per time bucket by their current status,
// and the inbox backlog (events received and not yet done, parked ones aside: they wait for an
// operator, not for the worker) with its oldest age at the end of each bucket, reconstructed from
// received_at and completed_at. The outbox's backlog is the current figure only: the table does not
// record when a message died, so its history cannot be rebuilt.
import { sql } from 'drizzle-orm';
import type { Executor } from '../db/client.ts';
import { waitedAcrossMinutes, webhookEvents } from '../db/schema.ts';
import { outboxStats } from '../outbox/stats.ts';
import { arrivalsPerMinute } from './event-counts.ts';

const waited = waitedAcrossMinutes(webhookEvents);

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
  const arrivals = await arrivalsPerMinute(db, window.fromMs, window.fromMs + window.buckets * window.bucketMs);
  const received = Array.from({ length: window.buckets }, emptyCounts);
  for (const { minute, status, n } of arrivals) {
    const counts = received[Math.floor((minute.getTime() - window.fromMs) / window.bucketMs)];
    const outcome = status === 'received' || status === 'processing' ? 'pending' : status;
    if (counts !== undefined && outcome in counts) counts[outcome as Outcome] += n;
  }

  // An event is in the backlog at a point when it was received by then and not done yet. Each
  // event lists only the bucket ends it may span (from the bucket it arrived in to the one it was
  // done in), so the work grows with events and their waits, not with events times buckets; the
  // exact test then keeps the points it really spans. Each bucket's end is capped at now. Bucket
  // ends are whole minutes, so an event done within the minute it arrived in spans none: only the
  // others are read, from the index that holds just them (webhook_events_waited_idx).
  // (A bucket end capped at now only finds events not done yet: completed_at is never in the future.)
  const backlogRows = await db.execute<{ i: number; events: number; oldest: string | null }>(sql`
    with points as (
      select i, least(${from}::timestamptz + (i + 1) * ${bucketSeconds} * interval '1 second',
        ${new Date(nowMs).toISOString()}::timestamptz) as at
      from generate_series(0, ${window.buckets - 1}) as i
    ), unfinished as (
      select received_at, coalesce(completed_at, 'infinity') as done_at,
        greatest(0, ceil(extract(epoch from received_at - ${from}::timestamptz) / ${bucketSeconds})::int - 1)
          as first_point,
        least(${window.buckets - 1}, floor(extract(epoch from coalesce(completed_at, ${to}::timestamptz)
          - ${from}::timestamptz) / ${bucketSeconds})::int) as last_point
      from webhook_events
      where received_at < ${to}::timestamptz and status <> 'parked'
        and (completed_at is null or completed_at > ${from}::timestamptz)
        and (${waited})
    )
    select p.i, count(*)::int as events, extract(epoch from p.at - min(u.received_at))::text as oldest
    from unfinished u
    cross join lateral generate_series(u.first_point, u.last_point) as c(i)
    join points p on p.i = c.i
    where u.received_at <= p.at and u.done_at > p.at
    group by p.i, p.at`);
  const backlog = Array.from({ length: window.buckets }, () => ({ events: 0, oldestSeconds: 0 }));
  for (const row of backlogRows) {
    backlog[row.i] = { events: row.events, oldestSeconds: Math.max(0, Number(row.oldest ?? 0)) };
  }

  const outbox = await outboxStats(db, nowMs);
  return {
    window,
    received,
    backlog,
    outbox: { pending: outbox.pending, dead: outbox.dead, oldestPendingSeconds: outbox.oldestPendingAgeSeconds },
  };
}
