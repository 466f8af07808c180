// Applying an event that is already stored: what the async worker does with leased rows and what an
// operator's replay does with a failed, parked or dead-lettered one. The same idempotent path as the
// synchronous intake: the row's new status and the domain change commit in one transaction, so an
// event is applied once however many workers, replays or redeliveries race for it.
import { and, eq, inArray, type SQL, sql } from 'drizzle-orm';
import type { Database, Transaction } from '../db/client.ts';
import { describeError, isTransientDatabaseError } from '../db/errors.ts';
import { type WebhookEventStatus, webhookEvents } from '../db/schema.ts';
import type { HandlerMap } from '../domain/handlers.ts';
import { AppError, DomainRejection } from '../lib/errors.ts';
import type { JsonValue } from '../lib/json.ts';
import { enqueuerFor } from '../outbox/enqueue.ts';
import type { WebhookProvider } from '../providers/types.ts';
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

/** Which rows may be applied: taken from these statuses, and, for a worker, still held by its lease. */
export interface StoredFilter {
  from: readonly WebhookEventStatus[];
  /** The worker's lease, when the row must still be held by it (a lost lease means another took over). */
  leaseOwner?: string;
}

export interface ApplyStoredOptions extends StoredFilter {
  onFailure: FailurePolicy;
}

export interface StoredContext {
  db: Database;
  handlers: HandlerMap;
  /** Providers by name, asked whether they now know a parked payload's schema version. */
  providers: ReadonlyMap<string, Pick<WebhookProvider, 'knowsSchemaOf'>>;
}

type LockedRow = {
  provider: string;
  event_id: string;
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

/** Terminal or parked: what an application that went through leaves the row in. */
type AppliedStatus = (typeof finalStatus)[keyof typeof finalStatus];

/**
 * Locks the rows among `keys` that pass the filter, for the rest of the transaction: the row lock
 * serializes every worker, replay and redelivery that wants one event, and keeps a lease-expiry
 * claimer (FOR UPDATE SKIP LOCKED) off the rows while they are being applied.
 */
async function lockRows(tx: Transaction, keys: readonly StoredEventKey[], filter: StoredFilter): Promise<LockedRow[]> {
  const rowKeys = sql.join(
    keys.map((key) => sql`(${key.provider}, ${key.eventId})`),
    sql`, `,
  );
  const statuses = sql.join(
    filter.from.map((status) => sql`${status}`),
    sql`, `,
  );
  return tx.execute<LockedRow>(sql`
    select provider, event_id, event_type, payload, occurred_at::text as occurred_at, content_digest
    from webhook_events
    where (provider, event_id) in (${rowKeys}) and status::text in (${statuses})
      ${filter.leaseOwner === undefined ? sql`` : sql`and locked_by = ${filter.leaseOwner}`}
    for update`);
}

/** Plans and applies one locked row in `tx`; throws when it cannot be applied (the caller rolls back). */
async function applyRow(context: StoredContext, tx: Transaction, row: LockedRow): Promise<AppliedStatus> {
  if (row.payload === null) throw new DomainRejection('payload purged: nothing to apply');
  const event: InboxEvent = {
    provider: row.provider,
    eventId: row.event_id,
    eventType: row.event_type,
    occurredAt: row.occurred_at === null ? null : new Date(row.occurred_at),
    payload: row.payload,
    ...(row.content_digest === null ? {} : { contentDigest: row.content_digest }),
    unknownSchemaVersion: context.providers.get(row.provider)?.knowsSchemaOf?.(row.payload) === false,
  };
  let plan: ReturnType<typeof planFor>;
  try {
    plan = planFor(context.handlers, event);
  } catch {
    // Stored, but no longer acceptable to its handler: retrying cannot help.
    throw new DomainRejection('payload no longer matches its handler schema');
  }
  if (plan.kind === 'apply') await plan.handler.apply({ tx, event, enqueue: enqueuerFor(tx, event) }, plan.payload);
  return finalStatus[plan.kind];
}

/** Moves every applied row to its new status and ends its lease, in one statement. */
async function markApplied(
  tx: Transaction,
  applied: readonly (LockedRow & { status: AppliedStatus })[],
): Promise<void> {
  const values: SQL = sql.join(
    applied.map((row) => sql`(${row.provider}::text, ${row.event_id}::text, ${row.status}::text)`),
    sql`, `,
  );
  // A parked event is not finished: it waits for an operator's replay.
  await tx.execute(sql`
    update webhook_events as w
    set status = v.status::webhook_event_status,
        completed_at = case when v.status = 'parked' then null else now() end,
        last_error = null, locked_by = null, locked_until = null
    from (values ${values}) as v(provider, event_id, status)
    where w.provider = v.provider and w.event_id = v.event_id`);
}

/**
 * Locks, applies and completes the rows in one transaction, in the order of `keys`. Rows that no
 * longer pass the filter are left out (skipped). Throws whatever made one row fail, having rolled
 * all of them back.
 */
async function applyLocked(
  context: StoredContext,
  keys: readonly StoredEventKey[],
  filter: StoredFilter,
): Promise<Map<string, StoredResult>> {
  return context.db.transaction(async (tx) => {
    const locked = await lockRows(tx, keys, filter);
    const byKey = new Map(locked.map((row) => [storedKeyString(row.provider, row.event_id), row]));
    const applied: (LockedRow & { status: AppliedStatus })[] = [];
    for (const key of keys) {
      const row = byKey.get(storedKeyString(key.provider, key.eventId));
      if (row === undefined) continue;
      applied.push({ ...row, status: await applyRow(context, tx, row) });
    }
    if (applied.length > 0) await markApplied(tx, applied);
    return new Map(
      applied.map((row) => [
        storedKeyString(row.provider, row.event_id),
        { outcome: row.status, eventType: row.event_type },
      ]),
    );
  });
}

export function storedKeyString(provider: string, eventId: string): string {
  // A NUL cannot occur in either column (jsonb and text reject it), so the pair maps back uniquely.
  return `${provider}\u0000${eventId}`;
}

export async function applyStoredEvent(
  context: StoredContext,
  key: StoredEventKey,
  options: ApplyStoredOptions,
): Promise<StoredResult> {
  try {
    const results = await applyLocked(context, [key], options);
    return results.get(storedKeyString(key.provider, key.eventId)) ?? { outcome: 'skipped' };
  } catch (error) {
    if (error instanceof AppError || isTransientDatabaseError(error)) throw error;
    return recordStoredFailure(context.db, key, options, error);
  }
}

export type BatchResult =
  | { applied: true; results: ReadonlyMap<string, StoredResult> }
  /** Rolled back: nothing in the batch happened. */
  | { applied: false; error: unknown };

/**
 * The worker's fast path: several leased events applied in one transaction, one statement each plus
 * three for the lot (lock, status, commit), instead of five round trips and a commit per event.
 * Each event still commits with its own domain change; the batch only shares the commit. Any failure
 * rolls the whole batch back and says so: the caller then applies each event on its own with
 * applyStoredEvent, which records the one that fails (and only that one) in its own transaction.
 * Keys missing from the answer were no longer held under `leaseOwner` (skipped).
 */
export async function applyStoredBatch(
  context: StoredContext,
  keys: readonly StoredEventKey[],
  leaseOwner: string,
): Promise<BatchResult> {
  try {
    return { applied: true, results: await applyLocked(context, keys, { from: ['processing'], leaseOwner }) };
  } catch (error) {
    return { applied: false, error };
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
    .returning({
      status: webhookEvents.status,
      attempts: webhookEvents.attemptCount,
      eventType: webhookEvents.eventType,
    });
  if (updated === undefined) return { outcome: 'skipped' };
  return {
    outcome: updated.status === 'dead_letter' ? 'dead_letter' : 'failed',
    attempts: updated.attempts,
    eventType: updated.eventType,
  };
}
