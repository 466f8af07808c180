// The sweeper: `processing` rows whose lease has expired (their worker crashed or hung) go back to
// `received`, claimable by any worker, without counting a failure (nothing says the event was at
// fault). Workers also claim such rows themselves; the sweeper makes them visible as `received` again
// where no worker runs often (the Workers cron) and for operators reading statuses.
import type { Database } from '../db/client.ts';
import { drainBatches, type StopReason } from '../lib/loops.ts';
import { sweepExpiredBatch } from './event-rows.ts';

export const SWEEP_BATCH_SIZE = 1000;

export interface SweepSummary {
  swept: number;
  batches: number;
  stoppedBy: StopReason;
}

/** Batches of up to SWEEP_BATCH_SIZE, each one statement; `nowMs` is the caller's clock, like every lease comparison. */
export async function sweepExpiredLeases(
  db: Database,
  options: { nowMs: () => number; budgetMs: number; signal?: AbortSignal },
): Promise<SweepSummary> {
  let swept = 0;
  const progress = await drainBatches({
    nowMs: options.nowMs,
    budgetMs: options.budgetMs,
    signal: options.signal,
    batch: async () => {
      const moved = await sweepExpiredBatch(db, new Date(options.nowMs()), SWEEP_BATCH_SIZE);
      swept += moved;
      return { claimed: moved, limit: SWEEP_BATCH_SIZE };
    },
  });
  return { swept, ...progress };
}
