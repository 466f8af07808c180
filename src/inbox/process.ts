// Processing of one delivery's authenticated events on their own (no group commit): insert their rows,
// apply the domain changes and complete the rows in a single transaction; on a handler failure, roll
// back and record the failure in a transaction of its own. Also what both modes decide before any
// database work (the plan).
import type { Database, Transaction } from '../db/client.ts';
import { describeCause, isTransientDatabaseError } from '../db/errors.ts';
import { limitStatements } from '../db/timeouts.ts';
import { applyHandler, type EventHandler, findHandler, type HandlerMap } from '../domain/handlers.ts';
import { AppError, refusedField } from '../lib/errors.ts';
import { inSpan, noTracing, type Span } from '../lib/tracing.ts';
import { type Deadline, transactionBefore } from './deadline.ts';
import {
  type AppliedStatus,
  type ArrivingEvent,
  type InboxEvent,
  insertOrTakeBackAll,
  recordDeliveryFailure,
  type StoredRow,
} from './event-rows.ts';

/** The span of an untraced caller (the CLI's replays, tests): records nothing. */
const noSpan = noTracing.start('untraced');

/** What a delivery's answer says happened to its event. */
export type DeliveryOutcome = 'completed' | 'ignored' | 'parked' | 'duplicate';

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
  if (!parsed.success) throw new AppError('invalid_payload', { why: { field: refusedField(parsed.error) } });
  return { kind: 'apply', handler, payload: parsed.data };
}

export const finalStatus = { apply: 'completed', ignored: 'ignored', parked: 'parked' } as const satisfies Record<
  Plan['kind'],
  AppliedStatus
>;

/**
 * A handler failed; `lastError` is the cause as recorded in the row, and its log line says the same.
 * `eventType` is the failing event's (in a batch, the one whose row was recorded `failed`).
 */
export class ProcessingFailure extends AppError {
  constructor(
    readonly attempt: number,
    cause: unknown,
    lastError: string,
    readonly eventType?: string,
  ) {
    super('processing_failed', { cause, why: { error: lastError } });
  }
}

/**
 * What the intake's transaction did with one event: `queued`, stored `received` for the worker (async
 * mode), or what applying it now did. `attempt`: 1 for the first application, n+1 after n recorded
 * failures; absent for a duplicate.
 */
export type Committed = { outcome: DeliveryOutcome; attempt?: number } | { outcome: 'queued'; attempt: number };

/** One event of a delivery, planned, and what its row becomes: applied now, or `received` for the worker. */
export interface PlannedEvent extends ArrivingEvent {
  plan: Plan;
}

/** Whether the event's handler runs in the delivery's own transaction (sync mode, or nothing to queue). */
export const appliesNow = (item: PlannedEvent) => item.plan.kind === 'apply' && item.arrival.status !== 'received';

/** What a delivery's answer says about one event, from the row its insert wrote (null: a duplicate). */
export function committedAs(item: PlannedEvent, row: StoredRow | null): Committed {
  if (row === null) return { outcome: 'duplicate' };
  const attempt = row.failures + 1;
  return item.arrival.status === 'received'
    ? { outcome: 'queued', attempt }
    : { outcome: item.arrival.status, attempt };
}

/**
 * Runs the event's handler in `tx` inside a `handler` span, a child of `parent` (the delivery's, or
 * the worker's `apply`): what the handler enqueues carries that span's traceparent to every
 * destination. `eventId`: the stored id, where a digest match kept the first delivery's.
 */
export function applyTraced(
  parent: Span,
  tx: Transaction,
  plan: Plan,
  event: InboxEvent,
  eventId = event.eventId,
): Promise<void> {
  if (plan.kind !== 'apply') return Promise.resolve();
  return inSpan(
    parent,
    'handler',
    (span) =>
      applyHandler(plan.handler, tx, { ...event, eventId, traceparent: span.traceparent ?? null }, plan.payload),
    { 'webhook.provider': event.provider, 'webhook.event_type': event.eventType },
  );
}

/**
 * Processes one delivery's events (one, or a sender's batch) in one transaction of their own: inserts
 * every row in one statement, applies the written ones in the sender's order, and commits them all or
 * none. The events must not share a key. When a handler fails, everything rolls back and the failure
 * is recorded on that event's row alone (the others were not stored): the sender's retry of the whole
 * delivery then stores the others and takes the failed one back.
 *
 * `boundByDeadline`: its statements time out when the delivery's deadline passes rather than at the
 * connection's statement_timeout, so a run that waits on a lock gives its connection back as soon as
 * its answer is 503 anyway (the group committer's retry of a batch, where the deadline is part spent).
 */
export async function processDelivery(
  db: Database,
  deadline: Deadline,
  items: readonly PlannedEvent[],
  options: { boundByDeadline?: boolean; span?: Span } = {},
): Promise<Committed[]> {
  let failing = items[0]?.event;
  const delivery = options.span ?? noSpan;
  let commit: Span | undefined;
  try {
    const committed = await transactionBefore(db, deadline, async (tx): Promise<Committed[]> => {
      const [, rows] = await Promise.all([
        options.boundByDeadline === true ? limitStatements(tx, deadline.remainingMs) : undefined,
        inSpan(delivery, 'claim', () => insertOrTakeBackAll(tx, items), { 'inbox.batch.size': 1 }),
      ]);
      const results: Committed[] = [];
      for (const [index, item] of items.entries()) {
        const written = rows[index] ?? null;
        if (written !== null && appliesNow(item)) {
          failing = item.event;
          await applyTraced(delivery, tx, item.plan, item.event, written.eventId);
        }
        results.push(committedAs(item, written));
      }
      commit = delivery.child('commit', { 'inbox.batch.size': 1 });
      return results;
    });
    commit?.end();
    return committed;
  } catch (error) {
    commit?.fail(error);
    commit?.end();
    if (error instanceof AppError) throw error;
    if (isTransientDatabaseError(error)) {
      throw new AppError('unavailable', { cause: error, why: { reason: 'database_unavailable' } });
    }
    const lastError = describeCause(error);
    let attempt: number;
    try {
      attempt = failing === undefined ? 0 : await recordDeliveryFailure(db, failing, lastError);
    } catch (recordError) {
      throw new AppError('unavailable', { cause: recordError, why: { reason: 'database_unavailable' } });
    }
    throw new ProcessingFailure(attempt, error, lastError, failing?.eventType);
  }
}
