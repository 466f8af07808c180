// The one-time counts of the events and outbox messages a database held before their counters
// existed (webhook_event_counts and outbox_message_counts, drizzle/0004 and drizzle/0006), done after
// those migrations have committed and without making writers wait: the triggers count every change
// from then on, and this adds what the rows held before.
//
// One snapshot S gives both figures it needs: the rows as S sees them (before the triggers, plus
// every change S sees) and the counters as S sees them (exactly the changes S sees, since a change
// and its counters commit together). Their difference is what the rows held before the triggers,
// whatever commits meanwhile. It is added under a slot of its own (-1) that no connection writes,
// so it conflicts with nothing; the fold merges it later like any other slot.
import type postgres from 'postgres';

/** serialization_failure: another run removed the marker first and did the count. */
const SERIALIZATION_FAILURE = '40001';

export interface BackfillHooks {
  /** Called once S is taken, before anything is counted (tests commit changes here). */
  afterSnapshot?: () => Promise<void>;
}

/**
 * Runs `count` once, in one REPEATABLE READ snapshot taken by `takeMarker` (which answers how many
 * marker rows it removed): false when there was no marker (already done, or a concurrent run is
 * doing it and removed it first).
 */
async function countOnce(
  sql: postgres.Sql,
  takeMarker: (tx: postgres.TransactionSql) => Promise<number>,
  count: (tx: postgres.TransactionSql) => Promise<unknown>,
  hooks: BackfillHooks,
): Promise<boolean> {
  try {
    return await sql.begin('isolation level repeatable read', async (tx) => {
      // The first statement takes S; the marker's delete makes the count happen exactly once.
      if ((await takeMarker(tx)) === 0) return false;
      await hooks.afterSnapshot?.();
      await count(tx);
      return true;
    });
  } catch (error) {
    if ((error as { code?: string }).code === SERIALIZATION_FAILURE) return false;
    throw error;
  }
}

/**
 * Counts the events stored before the counters, once: answers false when there was nothing to do
 * (no marker row: already done, or the database never had events without counters).
 */
export function backfillEventCounts(sql: postgres.Sql, hooks: BackfillHooks = {}): Promise<boolean> {
  return countOnce(
    sql,
    async (tx) => (await tx`delete from webhook_event_counts where bucket_seconds = -1 returning 1`).length,
    (tx) => tx`
      with minutes as (
        select date_bin('1 minute', received_at, timestamptz '1970-01-01 00:00:00+00') as at, provider, event_type,
          status, count(*) as n
        from webhook_events group by 1, 2, 3, 4
      ), stored as (
        select k.bucket_seconds, k.bucket_start, k.provider, k.event_type, m.status, sum(m.n) as n
        from minutes m cross join lateral webhook_event_count_keys(m.provider, m.event_type, m.at) k
        group by 1, 2, 3, 4, 5
      ), counted as (
        select bucket_seconds, bucket_start, provider, event_type, status, sum(n) as n
        from webhook_event_counts where bucket_seconds >= 0 group by 1, 2, 3, 4, 5
      )
      insert into webhook_event_counts (bucket_seconds, bucket_start, provider, event_type, status, slot, n)
      select bucket_seconds, bucket_start, provider, event_type, status, -1, coalesce(s.n, 0) - coalesce(c.n, 0)
      from stored s full join counted c using (bucket_seconds, bucket_start, provider, event_type, status)
      where coalesce(s.n, 0) <> coalesce(c.n, 0)`,
    hooks,
  );
}

/** The same for outbox_message_counts: its marker is the row of slot -2. */
export function backfillOutboxCounts(sql: postgres.Sql, hooks: BackfillHooks = {}): Promise<boolean> {
  return countOnce(
    sql,
    async (tx) => (await tx`delete from outbox_message_counts where slot = -2 returning 1`).length,
    (tx) => tx`
      with stored as (select status, destination, count(*) as n from outbox_messages group by 1, 2),
      counted as (select status, destination, sum(n) as n from outbox_message_counts group by 1, 2)
      insert into outbox_message_counts (status, destination, slot, n)
      select status, destination, -1, coalesce(s.n, 0) - coalesce(c.n, 0)
      from stored s full join counted c using (status, destination)
      where coalesce(s.n, 0) <> coalesce(c.n, 0)`,
    hooks,
  );
}
