// The outbox's health in three numbers, for /metrics, the admin API, the dashboard and the CLI: how
// many messages wait, how long the oldest has waited (the figure to alert on, more than the count),
// and how many are dead. The counts come from outbox_message_counts, which triggers keep in the
// transaction of every change (drizzle/0006_outbox_counts.sql): in an outage the backlog is too many
// rows to count on every scrape. The oldest is the first entry of the (status, created_at) index.
import { sql } from 'drizzle-orm';
import type { Executor } from '../db/client.ts';

export interface OutboxStats {
  pending: number;
  /** Seconds since the oldest pending message was created; 0 when none is pending. */
  oldestPendingAgeSeconds: number;
  dead: number;
}

/**
 * When the oldest pending message was written: the one definition of the outbox's "oldest pending",
 * counted from its creation (how long its effect has waited), whatever retries delayed it since.
 */
export const oldestPendingCreatedAt = sql`(select min(created_at) from outbox_messages where status = 'pending')`;

/** Messages by status, every connection's counters summed (a status with none is absent). */
export async function countOutboxMessages(db: Executor): Promise<Record<string, number>> {
  const rows = await db.execute<{ status: string; n: number }>(sql`select status::text as status, sum(n)::int as n
    from outbox_message_counts group by 1 having sum(n) <> 0`);
  return Object.fromEntries(rows.map((row) => [row.status, Number(row.n)]));
}

/** Messages by destination and status (drizzle/0010), every connection's counters summed; zeros left out. */
export async function countOutboxMessagesByDestination(
  db: Executor,
): Promise<Array<{ destination: string; status: string; n: number }>> {
  const rows = await db.execute<{ destination: string; status: string; n: number }>(sql`
    select destination, status::text as status, sum(n)::int as n
    from outbox_message_counts group by 1, 2 having sum(n) <> 0 order by 1, 2`);
  return rows.map((row) => ({ destination: row.destination, status: row.status, n: Number(row.n) }));
}

/** The statement behind outboxStats: one row of `pending`, `oldest_ms` (null when none) and `dead`. */
export const outboxStatsQuery = sql`
  select
    (select coalesce(sum(n), 0)::int from outbox_message_counts where status = 'pending') as pending,
    (extract(epoch from ${oldestPendingCreatedAt}) * 1000)::float8 as oldest_ms,
    (select coalesce(sum(n), 0)::int from outbox_message_counts where status = 'dead') as dead`;

export type OutboxStatsRow = {
  pending: number;
  oldest_ms: number | null;
  dead: number;
};

/** outboxStatsQuery's row as of `nowMs`. */
export function outboxStatsOf(row: OutboxStatsRow | undefined, nowMs: number): OutboxStats {
  const oldestMs = row?.oldest_ms ?? null;
  return {
    pending: row?.pending ?? 0,
    oldestPendingAgeSeconds: oldestMs === null ? 0 : Math.max(0, (nowMs - oldestMs) / 1000),
    dead: row?.dead ?? 0,
  };
}

export async function outboxStats(db: Executor, nowMs: number): Promise<OutboxStats> {
  const [row] = await db.execute<OutboxStatsRow>(outboxStatsQuery);
  return outboxStatsOf(row, nowMs);
}
