// Synchronous processing of one authenticated event: claim its id, apply the domain change and
// complete the claim in a single transaction; on a handler failure, roll back and record the failure
// in a transaction of its own.
import { eq, sql } from 'drizzle-orm';
import type { Database, Transaction } from '../db/client.ts';
import { describeError, isTransientDatabaseError } from '../db/errors.ts';
import { type WebhookEventStatus, webhookEvents } from '../db/schema.ts';
import type { EventHandler } from '../domain/handlers.ts';
import { AppError } from '../errors.ts';
import { enqueuerFor } from '../outbox/enqueue.ts';
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

/**
 * Inserts the inbox row, or takes back a `failed` one, in the status the transaction will commit
 * with: nobody can see the row before COMMIT, so an intermediate `processing` write would only cost
 * a round trip. Answers the failures recorded so far, or null when the event is already stored in
 * any other state (a duplicate).
 */
async function claimEvent(tx: Transaction, event: InboxEvent, status: WebhookEventStatus): Promise<number | null> {
  const completedAt = status === 'parked' ? null : sql`now()`;
  const claimed = await tx
    .insert(webhookEvents)
    .values({
      provider: event.provider,
      eventId: event.eventId,
      eventType: event.eventType,
      status,
      payload: event.payload,
      completedAt,
    })
    .onConflictDoUpdate({
      target: [webhookEvents.provider, webhookEvents.eventId],
      set: { status: sql`excluded.status`, completedAt: sql`excluded.completed_at`, lastError: null },
      setWhere: eq(webhookEvents.status, 'failed'),
    })
    .returning({ attemptCount: webhookEvents.attemptCount });
  return claimed[0]?.attemptCount ?? null;
}

/** Records a failed application; leaves the row alone if another delivery completed it meanwhile. */
async function recordFailure(db: Database, event: InboxEvent, error: unknown): Promise<number> {
  const lastError = describeError(error);
  const [row] = await db
    .insert(webhookEvents)
    .values({
      provider: event.provider,
      eventId: event.eventId,
      eventType: event.eventType,
      status: 'failed',
      payload: event.payload,
      attemptCount: 1,
      lastError,
    })
    .onConflictDoUpdate({
      target: [webhookEvents.provider, webhookEvents.eventId],
      set: { attemptCount: sql`${webhookEvents.attemptCount} + 1`, lastError },
      setWhere: eq(webhookEvents.status, 'failed'),
    })
    .returning({ attemptCount: webhookEvents.attemptCount });
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
      const failuresSoFar = await claimEvent(tx, event, finalStatus[plan.kind]);
      if (failuresSoFar === null) return { outcome: 'duplicate' };
      if (plan.kind === 'apply') await plan.handler.apply({ tx, event, enqueue: enqueuerFor(tx, event) }, plan.payload);
      return { outcome: finalStatus[plan.kind], attempt: failuresSoFar + 1 };
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
