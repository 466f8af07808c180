// Synchronous processing of one authenticated event: claim its id, apply the domain change and
// complete the claim in a single transaction; on a handler failure, roll back and record the failure
// in a transaction of its own.
import { and, eq, sql } from 'drizzle-orm';
import type { PgInsertValue, PgUpdateSetSource } from 'drizzle-orm/pg-core';
import type { Database, Executor, Transaction } from '../db/client.ts';
import { describeError, isTransientDatabaseError } from '../db/errors.ts';
import { type WebhookEventStatus, webhookEvents } from '../db/schema.ts';
import type { EventHandler } from '../domain/handlers.ts';
import { AppError } from '../errors.ts';
import type { AuthenticatedEvent } from '../providers/types.ts';
import { transactionBefore } from './deadline.ts';

export type Outcome = 'completed' | 'ignored' | 'parked' | 'duplicate';

export interface InboxEvent extends AuthenticatedEvent {
  provider: string;
}

/** What the service will do with an event, decided before any database work. */
export type Plan =
  | { kind: 'apply'; handler: EventHandler<unknown>; payload: unknown }
  | { kind: 'ignored' }
  | { kind: 'parked' };

const finalStatus = { apply: 'completed', ignored: 'ignored', parked: 'parked' } as const satisfies Record<
  Plan['kind'],
  WebhookEventStatus
>;

type NewRow = PgInsertValue<typeof webhookEvents>;

/**
 * The stored row this delivery is: by the signed event id, or, where the scheme's id header is not
 * signed, by the digest of the signed bytes and the (equally unsigned) type the row was stored with.
 * Never by an unsigned header alone: a captured body sent under the id of another delivery that
 * failed must not take that row over, nor one sent under another type pick another handler.
 */
function storedEvent(event: InboxEvent) {
  const provider = eq(webhookEvents.provider, event.provider);
  if (event.contentDigest === undefined) return and(provider, eq(webhookEvents.eventId, event.eventId));
  return and(
    provider,
    eq(webhookEvents.contentDigest, event.contentDigest),
    eq(webhookEvents.eventType, event.eventType),
  );
}

/**
 * Inserts `row`, or else applies `onFailed` to the event's `failed` row: the claim on both keys.
 * Answers the row's attempt count and event id, or null when the event is stored in any other state.
 *
 * Safe under READ COMMITTED, with nothing read before it is written:
 * - INSERT … ON CONFLICT DO NOTHING names no target, so every unique index arbitrates: the primary
 *   key (provider, event_id) and the partial one on (provider, content_digest). A conflict on either
 *   inserts nothing instead of raising a unique violation. When another transaction holds an
 *   uncommitted conflicting row, the INSERT waits for it: committed, nothing is inserted; rolled back,
 *   our row goes in. Of any number of concurrent deliveries of one event, exactly one inserts, and a
 *   new event costs this one statement.
 * - Only when nothing was inserted does one UPDATE … WHERE status = 'failed' try to take the row back.
 *   It reads the latest committed row; if another delivery is taking the same row back, the UPDATE
 *   waits for that row lock, then re-checks its WHERE on the row the other one left: completed, no
 *   match (a duplicate); rolled back, still failed, so it is ours. Exactly one delivery reclaims.
 * - The row is matched by storedEvent, so at most one row can match (each key is unique).
 */
async function insertOrTakeBackFailed(
  db: Executor,
  event: InboxEvent,
  row: Omit<NewRow, 'provider' | 'eventId' | 'eventType' | 'payload' | 'contentDigest'>,
  onFailed: PgUpdateSetSource<typeof webhookEvents>,
): Promise<{ attemptCount: number; eventId: string } | null> {
  const stored = { attemptCount: webhookEvents.attemptCount, eventId: webhookEvents.eventId };
  const [inserted] = await db
    .insert(webhookEvents)
    .values({
      provider: event.provider,
      eventId: event.eventId,
      eventType: event.eventType,
      payload: event.payload,
      contentDigest: event.contentDigest ?? null,
      ...row,
    })
    .onConflictDoNothing()
    .returning(stored);
  if (inserted !== undefined) return inserted;
  const [takenBack] = await db
    .update(webhookEvents)
    .set(onFailed)
    .where(and(storedEvent(event), eq(webhookEvents.status, 'failed')))
    .returning(stored);
  return takenBack ?? null;
}

/**
 * Inserts the inbox row, or takes back a `failed` one, in the status the transaction will commit
 * with: nobody can see the row before COMMIT, so an intermediate `processing` write would only cost
 * a round trip. Answers the failures recorded so far and the stored event id (a digest match keeps
 * the first delivery's id), or null when the event is already stored in any other state (a duplicate).
 */
function claimEvent(tx: Transaction, event: InboxEvent, status: WebhookEventStatus) {
  const completedAt = status === 'parked' ? null : sql`now()`;
  return insertOrTakeBackFailed(tx, event, { status, completedAt }, { status, completedAt, lastError: null });
}

/** Records a failed application; leaves the row alone if another delivery completed it meanwhile. */
async function recordFailure(db: Database, event: InboxEvent, error: unknown): Promise<number> {
  const lastError = describeError(error);
  const row = await insertOrTakeBackFailed(
    db,
    event,
    { status: 'failed', attemptCount: 1, lastError },
    { attemptCount: sql`${webhookEvents.attemptCount} + 1`, lastError },
  );
  return row?.attemptCount ?? 0;
}

export class ProcessingFailure extends AppError {
  constructor(
    readonly attempt: number,
    cause: unknown,
  ) {
    super('processing_failed', { cause });
  }
}

export interface Processed {
  outcome: Outcome;
  /** 1 for the first application, n+1 after n recorded failures; absent for a duplicate. */
  attempt?: number;
}

export async function processEvent(
  db: Database,
  signal: AbortSignal,
  event: InboxEvent,
  plan: Plan,
): Promise<Processed> {
  try {
    return await transactionBefore(db, signal, async (tx): Promise<Processed> => {
      const claimed = await claimEvent(tx, event, finalStatus[plan.kind]);
      if (claimed === null) return { outcome: 'duplicate' };
      if (plan.kind === 'apply')
        await plan.handler.apply({ tx, event: { ...event, eventId: claimed.eventId } }, plan.payload);
      return { outcome: finalStatus[plan.kind], attempt: claimed.attemptCount + 1 };
    });
  } catch (error) {
    if (error instanceof AppError) throw error;
    if (isTransientDatabaseError(error)) throw new AppError('unavailable', { cause: error });
    let attempt: number;
    try {
      attempt = await recordFailure(db, event, error);
    } catch (recordError) {
      throw new AppError('unavailable', { cause: recordError });
    }
    throw new ProcessingFailure(attempt, error);
  }
}
