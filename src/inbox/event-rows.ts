// The one owner of every write to `webhook_events`: each statement that moves a row from one state to
// another lives here, so the table's life can be read in one place. One piece on purpose, longer than
// the others: splitting it would scatter the state machine this header describes.
//
// | from                                | to                              | by                       | statement            |
// | ----------------------------------- | ------------------------------- | ------------------------ | -------------------- |
// | (none), failed                      | completed, ignored, parked      | sync intake              | insertOrTakeBackAll  |
// | (none), failed                      | received                        | async intake             | insertOrTakeBackAll  |
// | (none), failed                      | failed (attempt_count + 1)      | sync intake, on failure  | recordDeliveryFailure|
// | received, failed, processing (expired lease) | processing             | worker                   | claimDue, leaseLocked|
// | processing                          | received                        | worker (not started)     | releaseClaim         |
// | processing (expired lease)          | received                        | sweeper                  | sweepExpiredBatch    |
// | received, failed, processing (expired lease) | completed, ignored, parked | worker's batch (lockDueBatch) | markApplied |
// | processing, failed, parked, dead_letter | completed, ignored, parked  | worker, operator replay  | markApplied          |
// | processing, failed, parked, dead_letter | failed, dead_letter         | worker, operator replay  | recordApplyFailure   |
// | completed, ignored, dead_letter     | payload and traceparent null, then deleted (kept if it has a digest) | retention purge | purgeStatements |
//
// Why concurrent writers never apply an event twice (the argument every statement here relies on):
// nothing is read before it is written. An INSERT … ON CONFLICT arbitrates on the primary key
// (provider, event_id) and, where the sender's id is not signed, on the partial unique index over
// (provider, content_digest); when another transaction holds an uncommitted conflicting row the
// INSERT waits for it: committed, nothing is inserted; rolled back, ours goes in. Every UPDATE names
// the states it may leave in its WHERE clause (and the lease it must still hold), so when two race
// for a row the second waits for the first one's row lock, re-checks its WHERE against what the first
// left, and matches nothing. Under READ COMMITTED that is enough: of any number of concurrent
// deliveries, workers and replays of one event, exactly one moves it.
//
// SQL templates rather than Drizzle's builders on the per-delivery paths: the builder costs about
// nine times the CPU to render the same one-row insert (decision 0007).
import { and, eq, inArray, lt, type SQL, sql } from 'drizzle-orm';
import type { PgUpdateSetSource } from 'drizzle-orm/pg-core';
import type { Database, Executor, Transaction } from '../db/client.ts';
import { describeCause } from '../db/errors.ts';
import {
  claimCandidates,
  claimInQueueOrder,
  type Lease,
  leaseCleared,
  leaseValues,
  lockInQueueOrder,
} from '../db/lease.ts';
import { executePrepared } from '../db/prepared.ts';
import {
  LAST_ERROR_MAX,
  type RetentionWalk,
  retentionClass,
  retentionWalks,
  type WebhookEventStatus,
  webhookEvents,
} from '../db/schema.ts';
import { DomainRejection } from '../lib/errors.ts';
import type { AuthenticatedEvent } from '../senders/types.ts';

/** An authenticated event and the sender it came from (its `provider`): what a row is made of. */
export interface InboxEvent extends AuthenticatedEvent {
  provider: string;
  /**
   * The payload as the JSON text the sender signed, stored as it is: jsonb keeps every number of it
   * exact (numeric), where a serialized JavaScript value would round those beyond 2^53.
   */
  payloadText: string;
}

export interface StoredEventKey {
  provider: string;
  eventId: string;
}

/** The row a delivery inserted or took back. */
export interface StoredRow {
  /** Failed applications so far. */
  failures: number;
  /** The stored id: a digest match keeps the first delivery's id. */
  eventId: string;
}

/** The states an application that went through leaves a row in. */
export type AppliedStatus = 'completed' | 'ignored' | 'parked';

/** A row an application moved, and for a parked one why (its `last_error`). */
export interface AppliedRow extends StoredEventKey {
  status: AppliedStatus;
  parkReason?: string | undefined;
}

/**
 * What a delivery's row becomes: applied in the delivery's own transaction (sync mode), or stored
 * `received` for the worker, due at `availableAt` (async mode), with the traceparent the worker's
 * apply continues (the delivery span's; with tracing off, the sender's own when valid).
 */
export type Arrival =
  | { status: AppliedStatus }
  | { status: 'received'; availableAt: Date; traceparent?: string | undefined };

/**
 * The WHERE condition that finds a delivery's stored row: by the signed event id, or, where the
 * sender's id header is not signed, by the digest of the signed bytes and the (equally unsigned) type
 * the row was stored with. Never by an unsigned header alone: a captured body sent under the id of
 * another delivery that failed must not take that row over, nor one sent under another type pick
 * another handler.
 */
function whereRowOf(event: InboxEvent): SQL | undefined {
  const provider = eq(webhookEvents.provider, event.provider);
  if (event.contentDigest === undefined) return and(provider, eq(webhookEvents.eventId, event.eventId));
  return and(
    provider,
    eq(webhookEvents.contentDigest, event.contentDigest),
    eq(webhookEvents.eventType, event.eventType),
  );
}

/** An event on its way into its row: what the intake's insert (or take-back) writes. */
export interface ArrivingEvent {
  event: InboxEvent;
  arrival: Arrival;
}

/**
 * What taking a `failed` row back sets, from the arriving row `v` (a VALUES row, or `excluded`).
 * Applied now: the final status, and the old error cleared. Queued: `received`, due again, its
 * attempt count unchanged (a redelivery is not a failure) and its last error kept until the worker
 * applies it, in the trace of this delivery (its traceparent replaces the earlier one's).
 */
const takeBackSet = (v: SQL) => sql`status = ${v}.status,
  completed_at = ${v}.completed_at,
  available_at = case when ${v}.status = 'received' then ${v}.available_at else webhook_events.available_at end,
  last_error = case when ${v}.status = 'received' then webhook_events.last_error else ${v}.last_error end,
  traceparent = ${v}.traceparent`;

/** One arriving row as the JSON parameter carries it. */
interface ArrivingInput {
  provider: string;
  event_id: string;
  event_type: string;
  status: Arrival['status'];
  payload: string;
  content_digest: string | null;
  occurred_at: string | null;
  available_at: string | null;
  /** Only a queued row's, when it has one: absent, the recordset reads null (sync mode's JSON is unchanged). */
  traceparent?: string;
  /** Only a parked row's: why (the rule and the value it met); absent, null, so an applied row pays nothing. */
  last_error?: string;
}

/**
 * The arriving rows as a relation with the table's columns, from one JSON parameter rather than a
 * VALUES list: the statement's text is the same for any batch (prepared once per connection) and no
 * row's parameters are rendered one by one. A parked or queued event is not finished (completed_at).
 */
function arrivingRows(rows: readonly ArrivingEvent[]): SQL {
  const input = rows.map(({ event, arrival }) => {
    const row: ArrivingInput = {
      provider: event.provider,
      event_id: event.eventId,
      event_type: event.eventType,
      status: arrival.status,
      payload: event.payloadText,
      content_digest: event.contentDigest ?? null,
      occurred_at: event.occurredAt?.toISOString() ?? null,
      available_at: null,
    };
    if (arrival.status === 'received') {
      row.available_at = arrival.availableAt.toISOString();
      if (arrival.traceparent !== undefined) row.traceparent = arrival.traceparent;
    } else if (arrival.status === 'parked') {
      row.last_error = parkedBecause(event.parkReason);
    }
    return row;
  });
  return sql`(select provider, event_id, event_type, status, payload::jsonb as payload, content_digest, occurred_at,
      case when status in ('completed', 'ignored') then now() end as completed_at,
      coalesce(available_at, now()) as available_at, traceparent, last_error
    from json_to_recordset(${JSON.stringify(input)}::json) as input(provider text, event_id text, event_type text,
      status webhook_event_status, payload text, content_digest text, occurred_at timestamptz, available_at timestamptz,
      traceparent text, last_error text))`;
}

const COLUMNS = sql`(provider, event_id, event_type, status, payload, content_digest, occurred_at, completed_at, available_at,
  traceparent, last_error)`;

/** A parked row's `last_error`: its reason, bounded as the column is. */
const parkedBecause = (reason: string | undefined) => (reason ?? 'unknown schema version').slice(0, LAST_ERROR_MAX);

/** What the intake's statements return for each row they wrote: the arriving key and the stored row. */
interface WrittenRow {
  provider: string;
  event_id: string;
  stored_id: string;
  attempt_count: number;
}

/**
 * Inserts each delivery's row in the state the transaction (or, async, the autocommitted statement)
 * will leave it in, or takes back a `failed` one; null for a delivery whose event is already stored
 * in any other state (a duplicate). Nobody sees a row before COMMIT, so an intermediate `processing`
 * write would only cost a round trip.
 *
 * The rows must not share a key (a sender's event id, or its content digest): the caller sends a
 * twin in a later statement, where it meets the committed first one. They are written in key order,
 * so two transactions that insert overlapping sets wait for each other instead of deadlocking.
 *
 * Signed ids only (no digest): one statement inserts, takes back failed rows or finds duplicates.
 * With digests the insert names no conflict target (either unique index arbitrates) and the failed
 * rows are taken back in one more statement, matched by the signed digest, never by an unsigned id.
 */
export async function insertOrTakeBackAll(db: Executor, rows: readonly ArrivingEvent[]): Promise<(StoredRow | null)[]> {
  const byId = new Map<string, StoredRow>();
  const found = (row: WrittenRow) =>
    byId.set(storedKeyString(row.provider, row.event_id), { failures: row.attempt_count, eventId: row.stored_id });
  // Stryker disable next-line ArrowFunction: an answer of undefined makes every batch take the two-statement path, which takes failed signed rows back by their id all the same (one statement more)
  const signedOnly = rows.every((row) => row.event.contentDigest === undefined);
  const inserted = await executePrepared<WrittenRow>(
    db,
    sql`insert into webhook_events ${COLUMNS}
      select * from ${arrivingRows(rows)} as arriving order by provider, event_id
      ${signedOnly ? sql`on conflict (provider, event_id) do update set ${takeBackSet(sql`excluded`)} where webhook_events.status = 'failed'` : sql`on conflict do nothing`}
      returning provider, event_id, event_id as stored_id, attempt_count`,
  );
  for (const row of inserted) found(row);
  // Stryker disable next-line MethodExpression: a row this insert wrote is not `failed`, and a failed twin would have kept it out, so offering it to the take-back changes no row
  const conflicted = rows.filter((row) => !byId.has(storedKeyString(row.event.provider, row.event.eventId)));
  if (!signedOnly && conflicted.length > 0) {
    const taken = await executePrepared<WrittenRow>(
      db,
      sql`
      update webhook_events set ${takeBackSet(sql`v`)}
      from ${arrivingRows(conflicted)} as v
      where webhook_events.status = 'failed' and webhook_events.provider = v.provider
        and ((v.content_digest is null and webhook_events.event_id = v.event_id)
          or (webhook_events.content_digest = v.content_digest and webhook_events.event_type = v.event_type))
      returning v.provider, v.event_id, webhook_events.event_id as stored_id, webhook_events.attempt_count`,
    );
    for (const row of taken) found(row);
  }
  return rows.map((row) => byId.get(storedKeyString(row.event.provider, row.event.eventId)) ?? null);
}

/** The keys a delivery's row is unique under: a twin shares one of them. */
export function rowKeys(event: InboxEvent): string[] {
  const id = storedKeyString(event.provider, event.eventId);
  // Two NULs: an event id cannot start with one, so a digest key never equals an id key.
  return event.contentDigest === undefined ? [id] : [id, `${event.provider}\u0000\u0000${event.contentDigest}`];
}

export function storedKeyString(provider: string, eventId: string): string {
  // A NUL cannot occur in either column (jsonb and text reject it), so the pair maps back uniquely.
  return `${provider}\u0000${eventId}`;
}

const storedColumns = { failures: webhookEvents.attemptCount, eventId: webhookEvents.eventId };

/** Applies `values` to the event's row if, and only if, it is `failed`. At most one row matches. */
async function takeBackFailed(
  db: Executor,
  event: InboxEvent,
  values: PgUpdateSetSource<typeof webhookEvents>,
): Promise<StoredRow | null> {
  const [takenBack] = await db
    .update(webhookEvents)
    .set(values)
    .where(and(whereRowOf(event), eq(webhookEvents.status, 'failed')))
    .returning(storedColumns);
  return takenBack ?? null;
}

/**
 * Records a delivery whose application failed (sync mode), after its transaction rolled back (on its
 * own, or in the transaction that stores its batch-mates): a new `failed` row, or one more attempt
 * on the `failed` row it took back. Leaves the row alone if another
 * delivery completed it meanwhile. Answers the failures now recorded (0 when nothing was).
 * `lastError` is the cause as describeCause words it, so the caller can log the very same text.
 */
export async function recordDeliveryFailure(db: Executor, event: InboxEvent, lastError: string): Promise<number> {
  const [inserted] = await db
    .insert(webhookEvents)
    .values({
      provider: event.provider,
      eventId: event.eventId,
      eventType: event.eventType,
      payload: sql`${event.payloadText}::jsonb`,
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
  return row?.failures ?? 0;
}

/** A row the worker claimed. */
export interface ClaimedEvent extends StoredEventKey {
  eventType: string;
  /** Failed applications so far. */
  failures: number;
}

/** Every state the worker may claim from; `processing` only once its lease has expired (claimCandidates). */
const CLAIMABLE = ['received', 'failed', 'processing'] as const;

/** The worker's claiming UPDATE, built on `db` (a claim transaction's): exported so its plan can be checked. */
export function claimDueStatement(db: Executor, lease: Lease, dueBy: Date, limit: number) {
  const table = webhookEvents;
  const candidates = claimCandidates(db, {
    table,
    key: { provider: table.provider, eventId: table.eventId },
    where: inArray(table.status, [...CLAIMABLE]),
    lease,
    dueBy,
    limit,
  });
  return db
    .update(table)
    .set({ status: 'processing', ...leaseValues(lease) })
    .where(sql`(${table.provider}, ${table.eventId}) in (${candidates})`)
    .returning({
      provider: table.provider,
      eventId: table.eventId,
      eventType: table.eventType,
      failures: table.attemptCount,
      availableAt: table.availableAt,
    });
}

/** Claims up to `limit` due rows under `lease`, longest-waiting first. */
export async function claimDue(db: Database, lease: Lease, dueBy: Date, limit: number): Promise<ClaimedEvent[]> {
  // Prepared: the statement's text is the same for every claim.
  const rows = await claimInQueueOrder(db, (tx) =>
    // Stryker disable next-line StringLiteral: Drizzle's postgres.js driver prepares whenever a name is given (name !== undefined) and never sends the name itself
    claimDueStatement(tx, lease, dueBy, limit).prepare('inbox_claim').execute(),
  );
  // Claimed rows come back in no particular order.
  return rows.sort((a, b) => a.availableAt.getTime() - b.availableAt.getTime());
}

/** A due row the worker's batch transaction locked: what applying it needs, and its failures so far. */
export interface DueRow extends LockedRow {
  attempt_count: number;
}

/**
 * The worker's batch claim: up to `limit` rows claimDue would claim, oldest first, locked FOR UPDATE
 * SKIP LOCKED for the rest of `tx` but not written. The row lock is the lease while the transaction
 * lasts: another worker's claim and the sweeper skip the rows, a replay or a redelivery waits, and a
 * worker that dies rolls back and leaves them as they were, due at once. So a batch that goes through
 * writes each row once (to its final status), where a claim committed first writes it twice. A batch
 * that cannot go through records its lease with leaseLocked before it commits. Literal statuses (not
 * parameters), so that even a generic plan of the prepared statement matches the queue's partial
 * index; rows come back in its order (LockRows keeps its input's order).
 */
export function lockDueBatch(tx: Transaction, lease: Lease, dueBy: Date, limit: number): Promise<DueRow[]> {
  return lockInQueueOrder<DueRow>(tx, dueBatchStatement(lease, dueBy, limit));
}

/** lockDueBatch's statement, exported so its plan can be checked. */
export function dueBatchStatement(lease: Lease, dueBy: Date, limit: number): SQL {
  return sql`select provider, event_id, event_type, payload::text as payload, occurred_at::text as occurred_at,
      content_digest, traceparent, attempt_count
    from webhook_events
    where status in ('received', 'failed', 'processing') and available_at <= ${dueBy.toISOString()}
      and (locked_until is null or locked_until < ${lease.takenAt.toISOString()})
    order by available_at
    limit ${limit}
    for update skip locked`;
}

/**
 * Records `lease` on rows `tx` locked with lockDueBatch, as claimDue would have: `processing` under
 * its owner until it expires, so that once `tx` commits the rows are applied one at a time under the
 * lease (and a crash then leaves them to the lease's expiry and the sweeper).
 */
export async function leaseLocked(tx: Transaction, lease: Lease, keys: readonly StoredEventKey[]): Promise<void> {
  const keyRows = keys.map((key) => ({ provider: key.provider, event_id: key.eventId }));
  await executePrepared(
    tx,
    sql`update webhook_events as w
    set status = 'processing', locked_by = ${lease.owner}, locked_until = ${lease.until.toISOString()}
    from json_to_recordset(${JSON.stringify(keyRows)}::json) as k(provider text, event_id text)
    where w.provider = k.provider and w.event_id = k.event_id`,
  );
}

/**
 * Gives a claimed row back without counting an attempt (not started, or the database failed under
 * it): `received` again, due at `availableAt`. Guarded on the lease, so a row someone else holds now
 * is left alone.
 */
export async function releaseClaim(
  db: Database,
  owner: string,
  key: StoredEventKey,
  availableAt?: Date,
): Promise<void> {
  const table = webhookEvents;
  await db
    .update(table)
    .set({ status: 'received', ...leaseCleared, ...(availableAt === undefined ? {} : { availableAt }) })
    .where(
      and(
        sql`${table.provider} = ${key.provider} and ${table.eventId} = ${key.eventId}`,
        sql`${table.status} = 'processing' and ${table.lockedBy} = ${owner}`,
      ),
    );
}

/**
 * One sweep batch: up to `limit` `processing` rows whose lease expired before `now` go back to
 * `received`. SKIP LOCKED: a row whose worker is still inside its apply transaction (lease overrun,
 * not a crash) holds its row lock, so it is skipped rather than waited for, and that worker's guarded
 * writes stay valid. Answers how many rows moved.
 */
export async function sweepExpiredBatch(db: Database, now: Date, limit: number): Promise<number> {
  const table = webhookEvents;
  const expired = db
    .select({ provider: table.provider, eventId: table.eventId })
    .from(table)
    .where(and(eq(table.status, 'processing'), lt(table.lockedUntil, now)))
    .limit(limit)
    .for('update', { skipLocked: true });
  const rows = await db
    .update(table)
    .set({ status: 'received', ...leaseCleared })
    .where(sql`(${table.provider}, ${table.eventId}) in (${expired})`)
    .returning({ eventId: table.eventId });
  return rows.length;
}

/** Which rows an application may take: from these statuses, and, for a worker, still under its lease. */
export interface StoredFilter {
  from: readonly WebhookEventStatus[];
  /** The worker's lease, when the row must still be held by it (a lost lease means another took over). */
  leaseOwner?: string;
}

export type LockedRow = {
  provider: string;
  event_id: string;
  event_type: string;
  /** The stored payload as jsonb prints it, parsed exactly by the caller. */
  payload: string | null;
  occurred_at: string | null;
  content_digest: string | null;
  /** The trace the delivery that queued the row asks its apply to continue (async mode); else null. */
  traceparent: string | null;
};

/**
 * Locks the rows among `keys` that pass the filter, for the rest of the transaction: the row lock
 * serializes every worker, replay and redelivery that wants one event, and keeps a lease-expiry
 * claimer (FOR UPDATE SKIP LOCKED) off the rows while they are being applied.
 */
export async function lockForApply(
  tx: Transaction,
  keys: readonly StoredEventKey[],
  filter: StoredFilter,
): Promise<LockedRow[]> {
  const keyRows = keys.map((key) => ({ provider: key.provider, event_id: key.eventId }));
  return executePrepared<LockedRow>(
    tx,
    sql`
    select provider, event_id, event_type, payload::text as payload, occurred_at::text as occurred_at, content_digest,
      traceparent
    from webhook_events
    where (provider, event_id) in (
        select provider, event_id from json_to_recordset(${JSON.stringify(keyRows)}::json) as k(provider text, event_id text))
      and status::text in (select json_array_elements_text(${JSON.stringify(filter.from)}::json))
      and (${filter.leaseOwner ?? null}::text is null or locked_by = ${filter.leaseOwner ?? null}::text)
    for update`,
  );
}

/**
 * Moves every applied (locked) row to its new status and ends its lease, in one statement: a parked
 * row's `last_error` says why it is parked, any other's is cleared.
 */
export async function markApplied(tx: Transaction, applied: readonly AppliedRow[]): Promise<void> {
  const rows = applied.map((row) =>
    row.status === 'parked'
      ? { provider: row.provider, event_id: row.eventId, status: row.status, last_error: parkedBecause(row.parkReason) }
      : { provider: row.provider, event_id: row.eventId, status: row.status },
  );
  await executePrepared(
    tx,
    sql`
    update webhook_events as w
    set status = v.status,
        completed_at = case when v.status = 'parked' then null else now() end,
        last_error = v.last_error, locked_by = null, locked_until = null
    from json_to_recordset(${JSON.stringify(rows)}::json) as v(provider text, event_id text, status webhook_event_status,
      last_error text)
    where w.provider = v.provider and w.event_id = v.event_id`,
  );
}

/** Where a failed application goes next: `failed` (retried at `retryAt`), or `dead_letter`. */
export interface FailurePolicy {
  retryAt: Date;
  /**
   * Failed applications after which the row is dead-lettered; a permanent failure (a DomainRejection)
   * dead-letters at once. Absent: never dead-letter (the sender's or operator's retries decide).
   */
  maxAttempts?: number;
}

/**
 * Counts a failed application of a stored row and moves it on, in one statement after the rollback
 * (on its own, or in a transaction with what must commit with it, such as an operator's audit row): the dead-letter decision reads the count it increments, so two recorders cannot both miss
 * the bound. Null when the row had left the filter's states (or lease) meanwhile; else the new state
 * and the `last_error` written (for the failure's log line).
 */
export async function recordApplyFailure(
  db: Executor,
  key: StoredEventKey,
  filter: StoredFilter,
  policy: FailurePolicy,
  error: unknown,
): Promise<{ status: 'failed' | 'dead_letter'; failures: number; lastError: string } | null> {
  const lastError = describeCause(error);
  const deadLetter =
    policy.maxAttempts === undefined
      ? sql`false`
      : sql`(${error instanceof DomainRejection} or ${webhookEvents.attemptCount} + 1 >= ${policy.maxAttempts})`;
  const [updated] = await db
    .update(webhookEvents)
    .set({
      status: sql`case when ${deadLetter} then 'dead_letter' else 'failed' end::webhook_event_status`,
      attemptCount: sql`${webhookEvents.attemptCount} + 1`,
      lastError,
      availableAt: policy.retryAt,
      completedAt: sql`case when ${deadLetter} then now() end`,
      ...leaseCleared,
    })
    .where(
      and(
        eq(webhookEvents.provider, key.provider),
        eq(webhookEvents.eventId, key.eventId),
        inArray(webhookEvents.status, [...filter.from]),
        filter.leaseOwner === undefined ? undefined : eq(webhookEvents.lockedBy, filter.leaseOwner),
      ),
    )
    .returning({ status: webhookEvents.status, failures: webhookEvents.attemptCount });
  if (updated === undefined) return null;
  return {
    status: updated.status === 'dead_letter' ? 'dead_letter' : 'failed',
    failures: updated.failures,
    lastError,
  };
}

/**
 * Terminal rows finished before `cutoff` that `walk` reads: its classes of retentionClass, ranges of
 * webhook_events_retention_idx read oldest first, and the condition they stand for.
 */
const finishedBefore = (cutoff: Date, walk: RetentionWalk) => sql`status in ('completed', 'ignored', 'dead_letter')
  and ${retentionClass(webhookEvents)} in (${sql.raw(walk.classes.join(', '))})
  and ${walk.condition(webhookEvents)}
  and coalesce(completed_at, received_at) < ${cutoff.toISOString()}`;

/**
 * The retention purge's two batch statements, each answering `n`, the rows it changed: delete up to
 * `limit` terminal rows finished before `rowCutoff`; null the payloads of up to `limit` finished
 * before `payloadCutoff`. Candidates are locked with SKIP LOCKED: a row some transaction holds is
 * left for the next run instead of waited for.
 */
export const purgeStatements = {
  // A row with a content digest stays (its payload nulled): its sender signs no time, so a captured
  // body stays valid forever, and only the stored digest keeps it from being applied a second time.
  // The event's delivery log (delivery-log.ts) goes with it, in the same statement.
  deleteRows: (rowCutoff: Date, limit: number) => sql`with doomed as (
      select provider, event_id from webhook_events where ${finishedBefore(rowCutoff, retentionWalks.deletable)}
      limit ${limit} for update skip locked
    ), gone as (
      delete from webhook_events e using doomed d
      where e.provider = d.provider and e.event_id = d.event_id returning e.provider, e.event_id
    ), logged as (
      delete from webhook_deliveries l using gone g where l.provider = g.provider and l.event_id = g.event_id
    ) select count(*)::int as n from gone`,
  // The traceparent goes with the payload: once the row is finished no apply will read it, and a row
  // kept for its digest would carry it for good (docs/scaling.md, bytes per event).
  nullPayloads: (payloadCutoff: Date, limit: number) => sql`with stale as (
      select provider, event_id from webhook_events where ${finishedBefore(payloadCutoff, retentionWalks.payloadPresent)}
      limit ${limit} for update skip locked
    ), done as (
      update webhook_events e set payload = null, traceparent = null from stale s
      where e.provider = s.provider and e.event_id = s.event_id returning 1
    ) select count(*)::int as n from done`,
};
