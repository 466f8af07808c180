// Applying an event that is already stored: what the async worker does with a leased row and what an
// operator's replay does with a failed, parked or dead-lettered one. The same idempotent path as the
// synchronous intake: the row's new status and the domain change commit in one transaction, so an
// event is applied once however many workers, replays or redeliveries race for it.
import { and, eq, inArray, sql } from 'drizzle-orm';
import type { Database } from '../db/client.ts';
import { describeError, isTransientDatabaseError } from '../db/errors.ts';
import { type WebhookEventStatus, webhookEvents } from '../db/schema.ts';
import type { HandlerMap } from '../domain/handlers.ts';
import { AppError, DomainRejection } from '../errors.ts';
import { enqueuerFor } from '../outbox/enqueue.ts';
import type { WebhookProvider } from '../providers/types.ts';
import type { JsonValue } from './payload.ts';
import { finalStatus, type InboxEvent, planFor } from './process.ts';

export interface StoredEventKey {
  provider: string;
  eventId: string;
}

/** What became of the row: its new status, or `skipped` when it was not in a state it may leave. */
export type StoredOutcome = 'completed' | 'ignored' | 'parked' | 'failed' | 'dead_letter' | 'skipped';

/** Where a failed application goes next: `failed` (retried at `retryAt`), or `dead_letter`. */
export interface FailurePolicy {
  retryAt: Date;
  /**
   * Failed applications after which the row is dead-lettered; a permanent failure (a DomainRejection)
   * dead-letters at once. Absent: never dead-letter (the provider's or operator's retries decide).
   */
  maxAttempts?: number;
}

export interface ApplyStoredOptions {
  /** Statuses the row may be taken from. */
  from: readonly WebhookEventStatus[];
  /** The worker's lease, when the row must still be held by it (a lost lease means another took over). */
  leaseOwner?: string;
  onFailure: FailurePolicy;
}

export interface StoredContext {
  db: Database;
  handlers: HandlerMap;
  /** Providers by name, asked whether they now know a parked payload's schema version. */
  providers: ReadonlyMap<string, Pick<WebhookProvider, 'knowsSchemaOf'>>;
}

type StoredRow = {
  event_type: string;
  payload: JsonValue | null;
  occurred_at: string | null;
  content_digest: string | null;
};

export interface StoredResult {
  outcome: StoredOutcome;
  eventType?: string;
  /** Failed applications after this one. */
  attempts?: number;
}

export async function applyStoredEvent(
  context: StoredContext,
  key: StoredEventKey,
  options: ApplyStoredOptions,
): Promise<StoredResult> {
  let eventType: string | undefined;
  try {
    return await context.db.transaction(async (tx): Promise<StoredResult> => {
      // The row lock serializes every worker, replay and redelivery that wants this event.
      const [row] = await tx.execute<StoredRow>(sql`
        select event_type, payload, occurred_at::text as occurred_at, content_digest from webhook_events
        where provider = ${key.provider} and event_id = ${key.eventId}
          and status::text in (${sql.join(
            options.from.map((status) => sql`${status}`),
            sql`, `,
          )})
          ${options.leaseOwner === undefined ? sql`` : sql`and locked_by = ${options.leaseOwner}`}
        for update`);
      if (row === undefined) return { outcome: 'skipped' };
      eventType = row.event_type;
      if (row.payload === null) throw new DomainRejection('payload purged: nothing to apply');

      const event: InboxEvent = {
        provider: key.provider,
        eventId: key.eventId,
        eventType: row.event_type,
        occurredAt: row.occurred_at === null ? null : new Date(row.occurred_at),
        payload: row.payload,
        ...(row.content_digest === null ? {} : { contentDigest: row.content_digest }),
        unknownSchemaVersion: context.providers.get(key.provider)?.knowsSchemaOf?.(row.payload) === false,
      };
      let plan: ReturnType<typeof planFor>;
      try {
        plan = planFor(context.handlers, event);
      } catch {
        // Stored, but no longer acceptable to its handler: retrying cannot help.
        throw new DomainRejection('payload no longer matches its handler schema');
      }
      if (plan.kind === 'apply') await plan.handler.apply({ tx, event, enqueue: enqueuerFor(tx, event) }, plan.payload);
      const status = finalStatus[plan.kind];
      await tx
        .update(webhookEvents)
        .set({
          status,
          completedAt: status === 'parked' ? null : sql`now()`,
          lastError: null,
          lockedBy: null,
          lockedUntil: null,
        })
        .where(and(eq(webhookEvents.provider, key.provider), eq(webhookEvents.eventId, key.eventId)));
      return { outcome: status, eventType: row.event_type };
    });
  } catch (error) {
    if (error instanceof AppError || isTransientDatabaseError(error)) throw error;
    return recordStoredFailure(context.db, key, options, error, eventType);
  }
}

/**
 * Counts the failure and moves the row on, in one statement of its own after the rollback: the
 * dead-letter decision reads the count it increments, so two recorders cannot both miss the bound.
 */
async function recordStoredFailure(
  db: Database,
  key: StoredEventKey,
  options: ApplyStoredOptions,
  error: unknown,
  eventType: string | undefined,
): Promise<StoredResult> {
  const { maxAttempts, retryAt } = options.onFailure;
  const deadLetter =
    maxAttempts === undefined
      ? sql`false`
      : sql`(${error instanceof DomainRejection} or ${webhookEvents.attemptCount} + 1 >= ${maxAttempts})`;
  const [updated] = await db
    .update(webhookEvents)
    .set({
      status: sql`case when ${deadLetter} then 'dead_letter' else 'failed' end::webhook_event_status`,
      attemptCount: sql`${webhookEvents.attemptCount} + 1`,
      lastError: describeError(error),
      availableAt: retryAt,
      completedAt: sql`case when ${deadLetter} then now() end`,
      lockedBy: null,
      lockedUntil: null,
    })
    .where(
      and(
        eq(webhookEvents.provider, key.provider),
        eq(webhookEvents.eventId, key.eventId),
        inArray(webhookEvents.status, [...options.from]),
        options.leaseOwner === undefined ? undefined : eq(webhookEvents.lockedBy, options.leaseOwner),
      ),
    )
    .returning({ status: webhookEvents.status, attempts: webhookEvents.attemptCount });
  const known = eventType === undefined ? {} : { eventType };
  if (updated === undefined) return { outcome: 'skipped', ...known };
  return { outcome: updated.status === 'dead_letter' ? 'dead_letter' : 'failed', attempts: updated.attempts, ...known };
}
