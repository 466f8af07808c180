// Asynchronous intake (PROCESSING_MODE=async): the backlog gate. Above INBOX_MAX_BACKLOG `received`
// rows, new events are refused with 503; the events themselves are stored as `received` by the
// intake's insert (committer.ts, or process.ts on its own), committed before the 202.
import { sql } from 'drizzle-orm';
import type { Database } from '../db/client.ts';
import { executePrepared } from '../db/prepared.ts';
import type { Clock } from '../lib/clock.ts';
import { AppError } from '../lib/errors.ts';

/** How long one backlog count is trusted: a burst can overshoot the bound by this much intake. */
export const BACKLOG_CHECK_TTL_MS = 1000;

export interface BacklogGate {
  /** Throws `unavailable` (503 + Retry-After) while more than the bound of `received` rows wait. */
  check(db: Database): Promise<void>;
}

/**
 * The backlog check, cheap enough for every delivery: `select count(*)` over at most bound+1 index
 * entries (the partial claimable index's leading `status` twin, webhook_events_status_received_idx),
 * so its cost does not grow with the backlog it is guarding against; the answer is shared by all
 * requests for BACKLOG_CHECK_TTL_MS, and concurrent requests wait on one query instead of each
 * issuing their own. The clock is the app's, so tests expire the cached count without sleeping. The
 * gate lives as long as the app (a process, or a Workers isolate), and each count runs on the
 * database of the request that found it stale.
 */
export function backlogGate(maxBacklog: number, clock: Clock): BacklogGate {
  let checkedAt = Number.NEGATIVE_INFINITY;
  // Stryker disable next-line BooleanLiteral: never read before the first check's count sets it (a failed count throws first)
  let full = false;
  let inFlight: Promise<void> | undefined;

  const refresh = async (db: Database) => {
    const [row] = await executePrepared<{ n: number }>(
      db,
      sql`
      select count(*)::int as n from (
        select 1 from webhook_events where status = 'received' limit ${maxBacklog + 1}
      ) as backlog`,
    );
    // Stryker disable next-line OptionalChaining: `select count(*)` always answers one row
    full = (row?.n ?? 0) > maxBacklog;
    checkedAt = clock();
  };

  return {
    async check(db) {
      const age = clock() - checkedAt;
      if (age < 0 || age >= BACKLOG_CHECK_TTL_MS) {
        inFlight ??= refresh(db).finally(() => {
          inFlight = undefined;
        });
        try {
          await inFlight;
        } catch (error) {
          throw new AppError('unavailable', { cause: error, why: { reason: 'database_unavailable' } });
        }
      }
      if (full) throw new AppError('unavailable', { why: { reason: 'backlog_full' } });
    },
  };
}
