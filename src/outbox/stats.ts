// The outbox's health in three numbers, for /metrics, the admin API, the dashboard and the CLI: how
// many messages wait, how long the oldest has waited (the figure to alert on, more than the count),
// and how many are dead. Each count reads an index, never the whole published history.
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

export async function outboxStats(db: Executor, nowMs: number): Promise<OutboxStats> {
  const rows = await db.execute<{ pending: number; oldest_ms: number | null; dead: number }>(sql`
    select
      (select count(*)::int from outbox_messages where status = 'pending') as pending,
      (extract(epoch from ${oldestPendingCreatedAt}) * 1000)::float8 as oldest_ms,
      (select count(*)::int from outbox_messages where status = 'dead') as dead`);
  const row = rows[0];
  const oldestMs = row?.oldest_ms ?? null;
  return {
    pending: row?.pending ?? 0,
    oldestPendingAgeSeconds: oldestMs === null ? 0 : Math.max(0, (nowMs - oldestMs) / 1000),
    dead: row?.dead ?? 0,
  };
}
