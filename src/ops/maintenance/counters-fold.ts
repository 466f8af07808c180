// The one owner of the counter tables' folds (webhook_event_counts, outbox_message_counts): every
// connection adds to counters of its own slot (the triggers of drizzle/0004 and 0006), so that no two
// transactions wait on one counter row; a fold merges the slots of connections that are gone, and
// the event counters' finished time buckets, into slot 0, so readers sum a few rows per bucket.
import { sql } from 'drizzle-orm';
import type { Database } from '../../db/client.ts';
import { drainBatches, type StopReason } from '../../lib/loops.ts';

/** A slot is a connection's pid: its rows take no more additions once that connection is gone. */
const connectionGone = sql`slot not in (select pid from pg_stat_activity)`;

/**
 * Merges up to `limit` outbox counters of connections that are gone into slot 0: they have no time
 * buckets, so a live connection's rows are all ones its next statement adds to; slot -2 is the
 * backfill's marker (src/db/event-counts-backfill.ts), never folded.
 */
const outboxSlotsFold = (limit: number) => sql`
  with taken as (
    select ctid from outbox_message_counts
    where slot not in (0, -2) and ${connectionGone}
    limit ${limit} for update skip locked
  ), moved as (
    delete from outbox_message_counts w where w.ctid = any (array(select ctid from taken))
    returning w.status, w.destination, w.n
  ), sums as (
    select status, destination, sum(n)::bigint as n from moved group by 1, 2
  ), merged as (
    insert into outbox_message_counts as w (status, destination, slot, n) select status, destination, 0, n from sums
    on conflict (status, destination, slot) do update set n = w.n + excluded.n
  )
  select (select count(*) from moved)::int as merged`;

/**
 * The event counters' slot rows a fold takes: those of connections that are gone, and of live ones only buckets
 * that ended two minutes ago (a live connection's current buckets, and its all-time one, are the
 * rows its next statement adds to: taking them would make that statement wait for the fold).
 */
const eventSlotsFoldable = sql`slot <> 0 and (${connectionGone}
  or (bucket_seconds > 0 and bucket_start + bucket_seconds * interval '1 second' < now() - interval '2 minutes'))`;

/** Counters merged per fold transaction: each is short, whatever has built up. */
export const FOLD_BATCH = 10_000;
/** Any fixed key: two folds at once would wait on each other's slot-0 rows, so one skips instead. */
const FOLD_LOCK_KEY = 0x57_49_43_46;

/**
 * Merges counters of the connections' slots into slot 0 (see `foldable`), dropping counters that add
 * up to zero, so readers sum a few rows per bucket; the outbox's counters too
 * (outboxSlotsFold). Rows a transaction still holds are skipped (SKIP LOCKED) and folded
 * next time: a fold never waits on the intake, and the intake does not wait on a fold. Answers how
 * many slot rows it merged.
 */
export async function foldCounterSlots(db: Database): Promise<number> {
  return db.transaction(async (tx) => {
    const [lock] = await tx.execute<{ held: boolean }>(sql`select pg_try_advisory_xact_lock(${FOLD_LOCK_KEY}) as held`);
    if (lock?.held !== true) return 0;
    const [row] = await tx.execute<{ merged: number }>(sql`
      with taken as (
        select ctid from webhook_event_counts where ${eventSlotsFoldable} limit ${FOLD_BATCH} for update skip locked
      ), moved as (
        delete from webhook_event_counts w where w.ctid = any (array(select ctid from taken))
        returning w.bucket_seconds, w.bucket_start, w.provider, w.event_type, w.status, w.n
      ), sums as (
        select bucket_seconds, bucket_start, provider, event_type, status, sum(n)::bigint as n
        from moved group by 1, 2, 3, 4, 5
      ), emptied as (
        delete from webhook_event_counts w using sums s
        where w.slot = 0 and (w.bucket_seconds, w.bucket_start, w.provider, w.event_type, w.status)
          = (s.bucket_seconds, s.bucket_start, s.provider, s.event_type, s.status) and w.n + s.n = 0
        returning w.bucket_seconds, w.bucket_start, w.provider, w.event_type, w.status
      ), merged as (
        insert into webhook_event_counts as w (bucket_seconds, bucket_start, provider, event_type, status, slot, n)
        select s.bucket_seconds, s.bucket_start, s.provider, s.event_type, s.status, 0, s.n from sums s
        where s.n <> 0 and not exists (select from emptied d
          where (d.bucket_seconds, d.bucket_start, d.provider, d.event_type, d.status)
            = (s.bucket_seconds, s.bucket_start, s.provider, s.event_type, s.status))
        on conflict (bucket_seconds, bucket_start, provider, event_type, status, slot)
        do update set n = w.n + excluded.n
      )
      select (select count(*) from moved)::int as merged`);
    const [outbox] = await tx.execute<{ merged: number }>(outboxSlotsFold(FOLD_BATCH));
    return (row?.merged ?? 0) + (outbox?.merged ?? 0);
  });
}

/** Folds until no slot rows are left (a bulk load can leave hundreds of thousands), within a budget. */
export async function foldCounters(
  db: Database,
  options: { nowMs: () => number; budgetMs: number; signal?: AbortSignal },
): Promise<{ merged: number; stoppedBy: StopReason }> {
  let merged = 0;
  const { stoppedBy } = await drainBatches({
    ...options,
    batch: async () => {
      const folded = await foldCounterSlots(db);
      merged += folded;
      return { claimed: folded, limit: FOLD_BATCH };
    },
  });
  return { merged, stoppedBy };
}
