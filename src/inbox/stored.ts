// Applying an event that is already stored: what the async worker does with leased rows and what an
// operator's replay does with a failed, parked or dead-lettered one. The same idempotent path as the
// synchronous intake: the row's new status and the domain change commit in one transaction, so an
// event is applied once however many workers, replays or redeliveries race for it (event-rows.ts).
import type { Executor, Transaction } from '../db/client.ts';
import { isTransientDatabaseError } from '../db/errors.ts';
import type { HandlerMap } from '../domain/handlers.ts';
import { AppError, DomainRejection } from '../lib/errors.ts';
import { parseJsonText } from '../lib/json.ts';
import { noTracing, type Span, type Tracer } from '../lib/tracing.ts';
import type { Sender } from '../senders/types.ts';
import {
  type AppliedRow,
  type AppliedStatus,
  type FailurePolicy,
  type InboxEvent,
  type LockedRow,
  lockForApply,
  markApplied,
  recordApplyFailure,
  type StoredEventKey,
  type StoredFilter,
  storedKeyString,
} from './event-rows.ts';
import { applyTraced, finalStatus, planFor } from './process.ts';

/** What became of the row: its new status, or `skipped` when it was not in a state it may leave. */
export type StoredOutcome = AppliedStatus | 'failed' | 'dead_letter' | 'skipped';

export interface ApplyStoredOptions extends StoredFilter {
  onFailure: FailurePolicy;
  /**
   * Written in the transaction that commits the outcome (the apply's own, or the one that records its
   * failure, or the one that found the row taken), so it commits with the change or nothing does: an
   * operator's audit row. Its failure is not the event's: it is thrown, with everything rolled back.
   */
  alongside?: (tx: Transaction, outcome: StoredOutcome) => Promise<void>;
}

/** A failure of the caller's `alongside` write, kept apart so it is never recorded as the event's. */
class AlongsideFailed extends Error {
  constructor(readonly original: unknown) {
    // Stryker disable next-line StringLiteral: never shown: applyStoredEvent throws `original` in its place
    super('the write alongside the apply failed');
    // Stryker disable next-line StringLiteral: never shown, as above
    this.name = 'AlongsideFailed';
  }
}

async function writeAlongside(options: ApplyStoredOptions, tx: Transaction, outcome: StoredOutcome): Promise<void> {
  if (options.alongside === undefined) return;
  try {
    await options.alongside(tx, outcome);
  } catch (error) {
    throw new AlongsideFailed(error);
  }
}

export interface StoredContext {
  /** A transaction too (a bulk job's batch): each event's apply is then a savepoint of it. */
  db: Executor;
  handlers: HandlerMap;
  /** Providers by name, asked whether they now know a parked payload's schema version. */
  sendersByName: ReadonlyMap<string, Pick<Sender, 'parkReasonOf'>>;
  /**
   * The async worker's: each application continues the trace stored with its row (an `apply` span,
   * or with `noTracing` the stored traceparent passed through to what the handler enqueues). Absent
   * (an operator's replay, a new action rather than the delivery's): no span, and what the handler
   * enqueues carries no traceparent.
   */
  tracer?: Tracer | undefined;
}

/** The span of an application without a tracer (a replay): records nothing, carries no traceparent. */
const untraced = noTracing.start('untraced');

export interface StoredResult {
  outcome: StoredOutcome;
  /** Failed applications so far, this one included. */
  failures?: number;
  /** For `failed` and `dead_letter`: the `last_error` recorded, for the failure's log line. */
  lastError?: string;
}

/** Plans and applies one locked row in `tx`; throws when it cannot be applied (the caller rolls back). */
async function applyRow(
  context: StoredContext,
  tx: Transaction,
  row: LockedRow,
  span: Span | undefined,
): Promise<Omit<AppliedRow, keyof StoredEventKey>> {
  if (row.payload === null) throw new DomainRejection('payload purged: nothing to apply');
  // Read exactly as stored: an id beyond 2^53 reaches the handler as the same bigint it did on arrival.
  const payload = parseJsonText(row.payload);
  if (payload === undefined) throw new DomainRejection('stored payload is not JSON this service reads');
  const parkReason = context.sendersByName.get(row.provider)?.parkReasonOf?.(payload);
  const event: InboxEvent = {
    provider: row.provider,
    eventId: row.event_id,
    eventType: row.event_type,
    occurredAt: row.occurred_at === null ? null : new Date(row.occurred_at),
    payload,
    payloadText: row.payload,
    // Stryker disable next-line ConditionalExpression,EqualityOperator: nothing on the apply path reads the digest; only the intake's insert does
    ...(row.content_digest === null ? {} : { contentDigest: row.content_digest }),
    unknownSchemaVersion: parkReason !== undefined,
  };
  let plan: ReturnType<typeof planFor>;
  try {
    plan = planFor(context.handlers, event);
  } catch {
    // Stored, but no longer acceptable to its handler: retrying cannot help.
    throw new DomainRejection('payload no longer matches its handler schema');
  }
  await applyTraced(span ?? untraced, tx, plan, event);
  return { status: finalStatus[plan.kind], parkReason };
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
  beforeCommit?: (tx: Transaction, results: ReadonlyMap<string, StoredResult>) => Promise<void>,
): Promise<Map<string, StoredResult>> {
  return context.db.transaction(async (tx) => {
    const locked = await lockForApply(tx, keys, filter);
    const byKey = new Map(locked.map((row) => [storedKeyString(row.provider, row.event_id), row]));
    const rows = keys.flatMap((key) => byKey.get(storedKeyString(key.provider, key.eventId)) ?? []);
    const results = await applyLockedRows(context, tx, rows);
    await beforeCommit?.(tx, results);
    return results;
  });
}

/**
 * One `apply` span per row, a child of the traceparent its delivery stored (the delivery span's, or
 * with tracing off at the intake the sender's own), so the delivery and its later application are
 * one trace; a row without one (tracing off and no sender traceparent, or queued before the column
 * existed) starts a trace of its own. Its `handler` child's traceparent is what the handler
 * enqueues. None without a tracer (a replay).
 */
function applySpans(context: StoredContext, rows: readonly LockedRow[]): (Span | undefined)[] {
  const { tracer } = context;
  if (tracer === undefined) return [];
  return rows.map((row) =>
    tracer.start('apply', {
      parent: row.traceparent,
      kind: 'consumer',
      ...(tracer.enabled
        ? { attributes: { 'webhook.provider': row.provider, 'webhook.event_type': row.event_type } }
        : {}),
    }),
  );
}

/**
 * Applies rows this transaction has locked, in their order, and moves them to their new statuses in
 * one statement. Throws whatever made one row fail (the caller rolls back). Also the worker's batch
 * path, which locks its rows as it claims them (event-rows.ts, lockDueBatch).
 */
export async function applyLockedRows(
  context: StoredContext,
  tx: Transaction,
  rows: readonly LockedRow[],
): Promise<Map<string, StoredResult>> {
  // Started together, in key order: handlers' writes of one tick share statements (subscriptions.ts).
  const spans = applySpans(context, rows);
  const settled = await Promise.allSettled(rows.map((row, index) => applyRow(context, tx, row, spans[index])));
  for (const [index, result] of settled.entries()) {
    if (result.status === 'rejected') spans[index]?.fail(result.reason);
    spans[index]?.end();
  }
  const applied: AppliedRow[] = [];
  for (const [index, result] of settled.entries()) {
    if (result.status === 'rejected') throw result.reason;
    const row = rows[index] as LockedRow;
    applied.push({ provider: row.provider, eventId: row.event_id, ...result.value });
  }
  if (applied.length > 0) await markApplied(tx, applied);
  return new Map(applied.map((row) => [storedKeyString(row.provider, row.eventId), { outcome: row.status }]));
}

export async function applyStoredEvent(
  context: StoredContext,
  key: StoredEventKey,
  options: ApplyStoredOptions,
): Promise<StoredResult> {
  const keyString = storedKeyString(key.provider, key.eventId);
  try {
    const results = await applyLocked(context, [key], options, (tx, applied) =>
      writeAlongside(options, tx, applied.get(keyString)?.outcome ?? 'skipped'),
    );
    return results.get(keyString) ?? { outcome: 'skipped' };
  } catch (error) {
    if (error instanceof AlongsideFailed) throw error.original;
    if (error instanceof AppError || isTransientDatabaseError(error)) throw error;
    const record = async (db: Executor) => {
      const recorded = await recordApplyFailure(db, key, options, options.onFailure, error);
      return recorded === null
        ? { outcome: 'skipped' as const }
        : { outcome: recorded.status, failures: recorded.failures, lastError: recorded.lastError };
    };
    // Without a write alongside, the one UPDATE is its own transaction (the worker's usual path).
    if (options.alongside === undefined) return record(context.db);
    try {
      return await context.db.transaction(async (tx) => {
        const result = await record(tx);
        await writeAlongside(options, tx, result.outcome);
        return result;
      });
    } catch (failure) {
      throw failure instanceof AlongsideFailed ? failure.original : failure;
    }
  }
}
