// Synchronous processing of one authenticated event: claim its id, apply the domain change and
// complete the claim in a single transaction; on a handler failure, roll back and record the failure
// in a transaction of its own.
import { and, eq, sql } from 'drizzle-orm';
import type { PgUpdateSetSource } from 'drizzle-orm/pg-core';
import type { Database, Executor, Transaction } from '../db/client.ts';
import { describeError, isTransientDatabaseError } from '../db/errors.ts';
import { type WebhookEventStatus, webhookEvents } from '../db/schema.ts';
import { type EventHandler, findHandler, type HandlerMap } from '../domain/handlers.ts';
import { AppError } from '../lib/errors.ts';
import { enqueuerFor } from '../outbox/enqueue.ts';
import type { AuthenticatedEvent } from '../providers/types.ts';
import { type Deadline, transactionBefore } from './deadline.ts';

export type Outcome = 'completed' | 'ignored' | 'parked' | 'duplicate';

export interface InboxEvent extends AuthenticatedEvent {
  provider: string;
}

/** What the service will do with an event, decided before any database work. */
export type Plan =
  | { kind: 'apply'; handler: EventHandler<unknown>; payload: unknown }
  | { kind: 'ignored' }
  | { kind: 'parked' };

/** Unknown schema version -> parked; no handler -> ignored; else the handler's own validation. */
export function planFor(handlers: HandlerMap, event: InboxEvent): Plan {
  if (event.unknownSchemaVersion) return { kind: 'parked' };
  const handler = findHandler(handlers, event.provider, event.eventType);
  if (handler === undefined) return { kind: 'ignored' };
  const parsed = handler.schema.safeParse(event.payload);
  if (!parsed.success) throw new AppError('invalid_payload');
  return { kind: 'apply', handler, payload: parsed.data };
}

export const finalStatus = { apply: 'completed', ignored: 'ignored', parked: 'parked' } as const satisfies Record<
  Plan['kind'],
  WebhookEventStatus
>;

/**
 * The stored row this delivery is: by the signed event id, or, where the scheme's id header is not
 * signed, by the digest of the signed bytes and the (equally unsigned) type the row was stored with.
 * Never by an unsigned header alone: a captured body sent under the id of another delivery that
 * failed must not take that row over, nor one sent under another type pick another handler.
 */
export function storedEvent(event: InboxEvent) {
  const provider = eq(webhookEvents.provider, event.provider);
  if (event.contentDigest === undefined) return and(provider, eq(webhookEvents.eventId, event.eventId));
  return and(
    provider,
    eq(webhookEvents.contentDigest, event.contentDigest),
    eq(webhookEvents.eventType, event.eventType),
  );
}

export interface StoredRow {
  attemptCount: number;
  /** The stored id: a digest match keeps the first delivery's id. */
  eventId: string;
}

const storedColumns = { attemptCount: webhookEvents.attemptCount, eventId: webhookEvents.eventId };

/**
 * Applies `onFailed` to the event's row if, and only if, it is `failed`. Runs after an insert found
 * the event already stored. If another delivery is taking the same row back, the UPDATE waits for
 * that row lock, then re-checks its WHERE on the row the other one left: completed, no match (a
 * duplicate); rolled back, still failed, so it is ours. At most one row matches (each key is unique).
 */
export async function takeBackFailed(
  db: Executor,
  event: InboxEvent,
  onFailed: PgUpdateSetSource<typeof webhookEvents>,
): Promise<StoredRow | null> {
  const [takenBack] = await db
    .update(webhookEvents)
    .set(onFailed)
    .where(and(storedEvent(event), eq(webhookEvents.status, 'failed')))
    .returning(storedColumns);
  return takenBack ?? null;
}

/**
 * Inserts the inbox row, or takes back a `failed` one, in the status the transaction will commit
 * with: nobody can see the row before COMMIT, so an intermediate `processing` write would only cost
 * a round trip. Answers the stored row, or null when the event is already stored in any other state
 * (a duplicate).
 *
 * Where the scheme's id is not signed (GitHub, Shopify), it is safe under READ COMMITTED, with
 * nothing read before it is written: INSERT … ON CONFLICT DO NOTHING names no target, so every unique
 * index arbitrates, the primary key (provider, event_id) and the
 * partial one on (provider, content_digest); a conflict on either inserts nothing instead of raising
 * a unique violation. When another transaction holds an uncommitted conflicting row, the INSERT waits
 * for it: committed, nothing is inserted; rolled back, our row goes in. So of any number of concurrent
 * deliveries of one event exactly one inserts, and a new event costs this one statement.
 *
 * A SQL template rather than Drizzle's insert builder: this runs for every delivery, and the builder
 * costs about twenty times more CPU to render the same statement.
 */
async function claimEvent(tx: Transaction, event: InboxEvent, status: WebhookEventStatus): Promise<StoredRow | null> {
  // A parked event is not finished: it waits for an operator's replay.
  const completedAt = status === 'parked' ? sql`null` : sql`now()`;
  const values = sql`(${event.provider}, ${event.eventId}, ${event.eventType}, ${status}, ${JSON.stringify(event.payload)},
    ${event.contentDigest ?? null}, ${event.occurredAt?.toISOString() ?? null}, ${completedAt})`;
  if (event.contentDigest === undefined) {
    // The id is signed and the digest column stays null (outside its partial unique index), so the
    // primary key is the only arbiter: one statement inserts, takes back a failed row, or finds a
    // duplicate (in a new event's, and a duplicate's, single round trip).
    const [row] = await tx.execute<{ attempt_count: number; event_id: string }>(sql`
      insert into webhook_events (provider, event_id, event_type, status, payload, content_digest, occurred_at, completed_at)
      values ${values}
      on conflict (provider, event_id) do update
        set status = excluded.status, completed_at = excluded.completed_at, last_error = null
        where webhook_events.status = 'failed'
      returning attempt_count, event_id`);
    return row === undefined ? null : { attemptCount: row.attempt_count, eventId: row.event_id };
  }
  const [inserted] = await tx.execute<{ attempt_count: number; event_id: string }>(sql`
    insert into webhook_events (provider, event_id, event_type, status, payload, content_digest, occurred_at, completed_at)
    values ${values}
    on conflict do nothing
    returning attempt_count, event_id`);
  if (inserted !== undefined) return { attemptCount: inserted.attempt_count, eventId: inserted.event_id };
  return takeBackFailed(tx, event, { status, completedAt, lastError: null });
}

/** Records a failed application; leaves the row alone if another delivery completed it meanwhile. */
async function recordFailure(db: Database, event: InboxEvent, error: unknown): Promise<number> {
  const lastError = describeError(error);
  const [inserted] = await db
    .insert(webhookEvents)
    .values({
      provider: event.provider,
      eventId: event.eventId,
      eventType: event.eventType,
      payload: event.payload,
      contentDigest: event.contentDigest ?? null,
      occurredAt: event.occurredAt,
      status: 'failed',
      attemptCount: 1,
      lastError,
    })
    .onConflictDoNothing()
    .returning(storedColumns);
  const row =
    inserted ?? (await takeBackFailed(db, event, { attemptCount: sql`${webhookEvents.attemptCount} + 1`, lastError }));
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
  deadline: Deadline,
  event: InboxEvent,
  plan: Plan,
): Promise<Processed> {
  try {
    return await transactionBefore(db, deadline, async (tx): Promise<Processed> => {
      const claimed = await claimEvent(tx, event, finalStatus[plan.kind]);
      if (claimed === null) return { outcome: 'duplicate' };
      if (plan.kind === 'apply') {
        const stored = { ...event, eventId: claimed.eventId };
        await plan.handler.apply({ tx, event: stored, enqueue: enqueuerFor(tx, stored) }, plan.payload);
      }
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
