// The sweeper: `processing` rows whose lease has expired (their worker crashed or hung) go back to
// `received`, claimable by any worker, without counting a failure (nothing says the event was at
// fault). Workers also claim such rows themselves; the sweeper makes them visible as `received` again
// where no worker runs often (the Workers cron) and for operators reading statuses.
import { and, eq, lt, sql } from 'drizzle-orm';
import type { Database } from '../db/client.ts';
import { leaseCleared } from '../db/lease.ts';
import { webhookEvents } from '../db/schema.ts';
import { drainBatches } from '../lib/loops.ts';

export const SWEEP_BATCH_SIZE = 1000;

export interface SweepSummary {
  swept: number;
  batches: number;
  stoppedBy: 'drained' | 'budget' | 'aborted';
}

/**
 * Batches of up to SWEEP_BATCH_SIZE, each one statement. FOR UPDATE SKIP LOCKED in the candidate
 * subquery: a row whose worker is still inside its apply transaction (lease overrun, not a crash)
 * holds its row lock, so it is skipped rather than waited for, and that worker's guarded writes stay
 * valid. `nowMs` is the caller's clock, like every lease comparison.
 */
export async function sweepExpiredLeases(
  db: Database,
  options: { nowMs: () => number; budgetMs: number; signal?: AbortSignal },
): Promise<SweepSummary> {
  const table = webhookEvents;
  let swept = 0;
  const progress = await drainBatches({
    nowMs: options.nowMs,
    budgetMs: options.budgetMs,
    signal: options.signal,
    batch: async () => {
      const expired = db
        .select({ provider: table.provider, eventId: table.eventId })
        .from(table)
        .where(and(eq(table.status, 'processing'), lt(table.lockedUntil, new Date(options.nowMs()))))
        .limit(SWEEP_BATCH_SIZE)
        .for('update', { skipLocked: true });
      const rows = await db
        .update(table)
        .set({ status: 'received', ...leaseCleared })
        .where(sql`(${table.provider}, ${table.eventId}) in (${expired})`)
        .returning({ eventId: table.eventId });
      swept += rows.length;
      return { claimed: rows.length, limit: SWEEP_BATCH_SIZE };
    },
  });
  return { swept, ...progress };
}
