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
    /**
     * What was stored of each of a batch's other events, committed with the failure; absent when
     * nothing but the failure was recorded.
     */
    readonly stored?: ReadonlyMap<InboxEvent, Committed>,
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

/** A handler that threw while its event was applied, and why. */
interface FailedApply {
  cause: unknown;
  /** The cause as recordDeliveryFailure writes it. */
  lastError: string;
}

/**
 * A delivery's run: its deadline, its span, the event whose handler is running (until it returns),
 * and, after a run around failures, the failures counted on each failed row.
 */
interface RunContext {
  deadline: Deadline;
  boundByDeadline: boolean;
  delivery: Span;
  applying?: number | undefined;
  attempts?: number[];
}

/**
 * One transaction over the delivery: inserts the rows of every event not in `failed`, applies the
 * written ones in the sender's order, and records each of `failed` as `failed` (recordDeliveryFailure),
 * so the batch-mates of a failing event commit with the failure itself. Answers each stored event's
 * Committed (the failed ones left out); the failures now counted on each failed row go to `run`.
 */
async function runDelivery(
  tx: Transaction,
  items: readonly PlannedEvent[],
  run: RunContext,
  failed?: ReadonlyMap<number, FailedApply>,
): Promise<Committed[]> {
  const { delivery } = run;
  // Only a run around a failure filters: the all-good path inserts the delivery's own list.
  const stored = failed === undefined ? items : items.filter((_item, index) => !failed.has(index));
  const [, rows] = await Promise.all([
    run.boundByDeadline ? limitStatements(tx, run.deadline.remainingMs) : undefined,
    stored.length === 0
      ? []
      : inSpan(delivery, 'claim', () => insertOrTakeBackAll(tx, stored), { 'inbox.batch.size': 1 }),
  ]);
  const results: Committed[] = [];
  let row = 0;
  for (const [index, item] of items.entries()) {
    if (failed?.has(index) === true) continue;
    const written = rows[row++] ?? null;
    if (written !== null && appliesNow(item)) {
      run.applying = index;
      await applyTraced(delivery, tx, item.plan, item.event, written.eventId);
      run.applying = undefined;
    }
    results.push(committedAs(item, written));
  }
  if (failed === undefined) return results;
  run.attempts = [];
  for (const [index, failure] of failed) {
    // Stryker disable next-line OptionalChaining: `failed` holds indices of `items` only
    const event = items[index]?.event;
    if (event !== undefined) run.attempts.push(await recordDeliveryFailure(tx, event, failure.lastError));
  }
  return results;
}

/**
 * Processes one delivery's events (one, or a sender's batch) in one transaction of their own: inserts
 * every row in one statement, applies the written ones in the sender's order, and commits them all.
 * The events must not share a key. When a handler fails, everything rolls back; a lone event's failure
 * is then recorded on its row in a statement of its own. A batch is run again, its failing event
 * recorded `failed` and every other one stored and applied, in one transaction (and again should
 * another handler fail): its batch-mates never depend on it. Either way the answer is 500
 * (ProcessingFailure), so the sender retries the whole delivery: the stored events are then
 * duplicates, and the failed one is taken back. The all-good path pays nothing for this; the failure
 * path pays a transaction per failing handler.
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
  const delivery = options.span ?? noSpan;
  const run: RunContext = { deadline, boundByDeadline: options.boundByDeadline === true, delivery };
  let commit: Span | undefined;
  try {
    const committed = await transactionBefore(db, deadline, async (tx): Promise<Committed[]> => {
      const results = await runDelivery(tx, items, run);
      commit = delivery.child('commit', { 'inbox.batch.size': 1 });
      return results;
    });
    // Stryker disable next-line OptionalChaining: set by the transaction's callback, which ran to its end to get here
    commit?.end();
    return committed;
  } catch (error) {
    commit?.fail(error);
    commit?.end();
    const failure = recordable(error);
    const failing = run.applying;
    if (failing !== undefined && items.length > 1) {
      throw await storeAroundFailures(db, items, run, new Map([[failing, failure]]));
    }
    // Stryker disable next-line OptionalChaining: a delivery has one event at least, and `failing` is an index of its items
    throw await recordAlone(db, items[failing ?? 0]?.event, failure);
  }
}

/**
 * A failure to record on the event's row; an AppError (the deadline, a refusal) or a database outage
 * is thrown as it is, answered without recording anything.
 */
function recordable(error: unknown): FailedApply {
  if (error instanceof AppError) throw error;
  if (isTransientDatabaseError(error)) {
    throw new AppError('unavailable', { cause: error, why: { reason: 'database_unavailable' } });
  }
  return { cause: error, lastError: describeCause(error) };
}

/** The failure recorded on the event's row alone (the others, if any, are not stored): the 500 to answer. */
async function recordAlone(db: Database, event: InboxEvent | undefined, failure: FailedApply): Promise<AppError> {
  let attempt: number;
  try {
    attempt = event === undefined ? 0 : await recordDeliveryFailure(db, event, failure.lastError);
  } catch (recordError) {
    return new AppError('unavailable', { cause: recordError, why: { reason: 'database_unavailable' } });
  }
  // Stryker disable next-line OptionalChaining: every caller passes an event of the delivery, which has one at least
  return new ProcessingFailure(attempt, failure.cause, failure.lastError, event?.eventType);
}

/**
 * A batch whose handler failed at `failed`: run again with the failing events recorded `failed` and
 * the others stored and applied, once more for each further handler that fails (so at most one run
 * per event). Answers the 500 to throw, carrying what was stored of each batch-mate. Should a run fail
 * any other way (the deadline, the database), the first failure is recorded alone, as a lone event's.
 */
async function storeAroundFailures(
  db: Database,
  items: readonly PlannedEvent[],
  run: RunContext,
  failed: Map<number, FailedApply>,
): Promise<AppError> {
  const [first] = failed;
  // Stryker disable next-line ConditionalExpression: the caller passes one failure at least
  if (first === undefined) throw new Error('unreachable: a failure to store around');
  const [firstAt, firstFailure] = first;
  for (;;) {
    run.applying = undefined;
    try {
      const results = await transactionBefore(db, run.deadline, (tx) => runDelivery(tx, items, run, failed));
      const stored = new Map<InboxEvent, Committed>();
      let at = 0;
      for (const [index, item] of items.entries()) {
        const committed = failed.has(index) ? undefined : results[at++];
        if (committed !== undefined) stored.set(item.event, committed);
      }
      // Stryker disable next-line OptionalChaining: `firstAt` is an index of `items`
      const { eventType } = items[firstAt]?.event ?? {};
      return new ProcessingFailure(
        // Stryker disable next-line OptionalChaining: a run around failures always sets `run.attempts`
        run.attempts?.[0] ?? 0,
        firstFailure.cause,
        firstFailure.lastError,
        eventType,
        stored,
      );
    } catch (error) {
      const failing = run.applying;
      if (failing === undefined || error instanceof AppError || isTransientDatabaseError(error)) {
        return recordAlone(db, items[firstAt]?.event, firstFailure);
      }
      failed.set(failing, { cause: error, lastError: describeCause(error) });
    }
  }
}
