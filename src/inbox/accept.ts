// Asynchronous intake (PROCESSING_MODE=async): what the request does instead of applying the event.
// It stores the authenticated, validated event as `received` in one autocommitted statement and
// answers 202 only after that statement has committed; the worker (worker.ts) applies it later. Also
// owns the backlog gate: above INBOX_MAX_BACKLOG `received` rows, new events are refused with 503.
import { sql } from 'drizzle-orm';
import type { Database } from '../db/client.ts';
import type { Clock } from '../deps.ts';
import { AppError } from '../lib/errors.ts';
import type { Deadline } from './deadline.ts';
import { type InboxEvent, takeBackFailed } from './process.ts';

/** `queued`: stored new, or a `failed` row re-queued; `duplicate`: stored already in any other state. */
export type AcceptOutcome = 'queued' | 'duplicate';

export interface Accepted {
  outcome: AcceptOutcome;
  /** Failed applications so far (a re-queued `failed` row keeps its count); absent for a duplicate. */
  attempts?: number;
}

/** Resolves with `work`, or rejects `unavailable` when the request's deadline passes first. */
function beforeDeadline<T>(deadline: Deadline, work: Promise<T>): Promise<T> {
  deadline.throwIfExpired();
  return new Promise<T>((resolve, reject) => {
    // The statement may still commit after we answered 503: the provider's retry then meets a
    // duplicate (200), so an event is never lost, and never answered 2xx before it is stored.
    deadline.onExpire(() => reject(new AppError('unavailable')));
    work.then(resolve, reject).finally(() => deadline.onExpire(undefined));
  });
}

/**
 * Stores the event as `received`, due at `availableAt` (the caller's clock, which the worker compares
 * against, so tests that move time see consistent rows). The same two-key gate as synchronous mode:
 * ON CONFLICT DO NOTHING without a target arbitrates on the primary key and on the content digest
 * index, and a concurrent uncommitted twin makes the INSERT wait for its outcome. A new event costs
 * this one statement, with no transaction around it (autocommit is the commit before the 202).
 *
 * A conflict means the event is stored: a `failed` row is re-queued (received, due now, its attempt
 * count unchanged: a redelivery is not a failure), any other state is a duplicate. The re-queue is
 * guarded on `failed`, so a worker that took the failed row meanwhile wins and this is a duplicate.
 * Where the digest is a second key (GitHub, Shopify) the re-queue is a second statement, matched by
 * the signed digest, never by the unsigned id alone (see takeBackFailed).
 *
 * A SQL template, like the synchronous claim: it runs for every delivery.
 */
export async function enqueueEvent(db: Database, event: InboxEvent, availableAt: Date): Promise<Accepted> {
  const dueAt = availableAt.toISOString();
  const values = sql`(${event.provider}, ${event.eventId}, ${event.eventType}, 'received', ${JSON.stringify(event.payload)},
    ${event.contentDigest ?? null}, ${event.occurredAt?.toISOString() ?? null}, ${dueAt})`;
  if (event.contentDigest === undefined) {
    // A signed id and no digest (outside the digest's partial unique index): the primary key is the
    // only arbiter, so one statement inserts, re-queues a failed row, or finds a duplicate.
    const [row] = await db.execute<{ attempt_count: number }>(sql`
      insert into webhook_events (provider, event_id, event_type, status, payload, content_digest, occurred_at, available_at)
      values ${values}
      on conflict (provider, event_id) do update
        set status = 'received', available_at = excluded.available_at, completed_at = null
        where webhook_events.status = 'failed'
      returning attempt_count`);
    return row === undefined ? { outcome: 'duplicate' } : { outcome: 'queued', attempts: row.attempt_count };
  }
  const [inserted] = await db.execute<{ attempt_count: number }>(sql`
    insert into webhook_events (provider, event_id, event_type, status, payload, content_digest, occurred_at, available_at)
    values ${values}
    on conflict do nothing
    returning attempt_count`);
  if (inserted !== undefined) return { outcome: 'queued', attempts: inserted.attempt_count };
  const requeued = await takeBackFailed(db, event, { status: 'received', availableAt, completedAt: null });
  return requeued === null ? { outcome: 'duplicate' } : { outcome: 'queued', attempts: requeued.attemptCount };
}

/** The backlog gate, then the insert, both inside the request's deadline. */
export function acceptEvent(
  db: Database,
  deadline: Deadline,
  gate: BacklogGate,
  event: InboxEvent,
  clock: Clock,
): Promise<Accepted> {
  return beforeDeadline(
    deadline,
    gate.check().then(() => enqueueEvent(db, event, new Date(clock()))),
  );
}

/** How long one backlog count is trusted: a burst can overshoot the bound by this much intake. */
export const BACKLOG_CHECK_TTL_MS = 1000;

export interface BacklogGate {
  /** Throws `unavailable` (503 + Retry-After) while more than the bound of `received` rows wait. */
  check(): Promise<void>;
}

/**
 * The backlog check, cheap enough for every delivery: `select count(*)` over at most bound+1 index
 * entries (the partial claimable index's leading `status` twin, webhook_events_status_received_idx),
 * so its cost does not grow with the backlog it is guarding against; the answer is shared by all
 * requests for BACKLOG_CHECK_TTL_MS, and concurrent requests wait on one query instead of each
 * issuing their own. The clock is the app's, so tests expire the cached count without sleeping.
 */
export function backlogGate(db: Database, maxBacklog: number, clock: Clock): BacklogGate {
  let checkedAt = Number.NEGATIVE_INFINITY;
  let full = false;
  let inFlight: Promise<void> | undefined;

  const refresh = async () => {
    const [row] = await db.execute<{ n: number }>(sql`
      select count(*)::int as n from (
        select 1 from webhook_events where status = 'received' limit ${maxBacklog + 1}
      ) as backlog`);
    full = (row?.n ?? 0) > maxBacklog;
    checkedAt = clock();
  };

  return {
    async check() {
      const age = clock() - checkedAt;
      if (age < 0 || age >= BACKLOG_CHECK_TTL_MS) {
        inFlight ??= refresh().finally(() => {
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
