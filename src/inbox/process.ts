// Synchronous processing of one authenticated event: claim its id, apply the domain change and
// complete the claim in a single transaction; on a handler failure, roll back and record the failure
// in a transaction of its own.
import { eq, sql } from 'drizzle-orm';
import type { Database, Transaction } from '../db/client.ts';
import { describeError, isTransientDatabaseError } from '../db/errors.ts';
import { type WebhookEventStatus, webhookEvents } from '../db/schema.ts';
import type { EventHandler } from '../domain/handlers.ts';
import { AppError } from '../errors.ts';
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

const finalStatus = { apply: 'completed', ignored: 'ignored', parked: 'parked' } as const satisfies Record<
  Plan['kind'],
  WebhookEventStatus
>;

/**
 * Inserts the inbox row, or takes back a `failed` one, in the status the transaction will commit
 * with: nobody can see the row before COMMIT, so an intermediate `processing` write would only cost
 * a round trip. Answers the failures recorded so far, or null when the event is already stored in
 * any other state (a duplicate).
 *
 * Written as one SQL template rather than with Drizzle's insert builder: this runs for every
 * delivery, and the builder costs about twenty times more CPU to render the same statement.
 */
async function claimEvent(tx: Transaction, event: InboxEvent, status: WebhookEventStatus): Promise<number | null> {
  // A parked event is not finished: it waits for an operator's replay.
  const completedAt = status === 'parked' ? sql`null` : sql`now()`;
  const claimed = await tx.execute<{ attempt_count: number }>(sql`
    insert into webhook_events (provider, event_id, event_type, status, payload, completed_at)
    values (${event.provider}, ${event.eventId}, ${event.eventType}, ${status}, ${JSON.stringify(event.payload)}, ${completedAt})
    on conflict (provider, event_id) do update
      set status = excluded.status, completed_at = excluded.completed_at, last_error = null
      where webhook_events.status = 'failed'
    returning attempt_count`);
  return claimed[0]?.attempt_count ?? null;
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
  deadline: Deadline,
  event: InboxEvent,
  plan: Plan,
): Promise<Processed> {
  try {
    return await transactionBefore(db, deadline, async (tx): Promise<Processed> => {
      const failuresSoFar = await claimEvent(tx, event, finalStatus[plan.kind]);
      if (failuresSoFar === null) return { outcome: 'duplicate' };
      if (plan.kind === 'apply') await plan.handler.apply({ tx, event }, plan.payload);
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
