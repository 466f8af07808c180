// Asynchronous intake (PROCESSING_MODE=async): what the request does instead of applying the event.
// It stores the authenticated, validated event as `received` in one autocommitted statement and
// answers 202 only after that statement has committed; the worker (worker.ts) applies it later. Also
// owns the backlog gate: above INBOX_MAX_BACKLOG `received` rows, new events are refused with 503.
import { sql } from 'drizzle-orm';
import { type Database, executePrepared } from '../db/client.ts';
import type { Clock } from '../lib/clock.ts';
import { AppError } from '../lib/errors.ts';
import type { Deadline } from './deadline.ts';
import { type InboxEvent, insertOrTakeBack } from './event-rows.ts';

/** `queued`: stored new, or a `failed` row re-queued; `duplicate`: stored already in any other state. */
export type AcceptOutcome = 'queued' | 'duplicate';

export interface Accepted {
  outcome: AcceptOutcome;
  /** Failed applications so far (a re-queued `failed` row keeps its count); absent for a duplicate. */
  attempts?: number;
}

/**
 * Stores the event as `received`, due at `availableAt` (the caller's clock, which the worker compares
 * against, so tests that move time see consistent rows), or re-queues its `failed` row; any other
 * state is a duplicate. One autocommitted statement for a new event: the commit before the 202.
 */
export async function queueEvent(db: Database, event: InboxEvent, availableAt: Date): Promise<Accepted> {
  const row = await insertOrTakeBack(db, event, { status: 'received', availableAt });
  return row === null ? { outcome: 'duplicate' } : { outcome: 'queued', attempts: row.attemptCount };
}

/** The backlog gate, then the insert, both inside the request's deadline. */
export function acceptEvent(
  db: Database,
  deadline: Deadline,
  gate: BacklogGate,
  event: InboxEvent,
  clock: Clock,
): Promise<Accepted> {
  // The statement may still commit after the deadline answered 503: the provider's retry then meets
  // a duplicate (200), so an event is never lost, and never answered 2xx before it is stored.
  return deadline.race(gate.check(db).then(() => queueEvent(db, event, new Date(clock()))));
}

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
          throw new AppError('unavailable', { cause: error });
        }
      }
      if (full) throw new AppError('unavailable');
    },
  };
}
