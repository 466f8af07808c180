// Leases on rows that some worker must process outside a transaction (outbox messages, async inbox
// events): how a batch is claimed in one statement and when a leased row may still be
// worked on. Any table with `available_at`, `locked_until` and `locked_by` columns can use it.
//
// Every comparison takes the caller's clock as a parameter instead of the database's now(): tests
// move time to expire leases and backoffs without sleeping, and one drain sees one consistent "now".
import { and, isNull, lt, lte, or, type SQL, type SQLWrapper, sql } from 'drizzle-orm';
import type { PgColumn, PgTable } from 'drizzle-orm/pg-core';
import type { Database, Executor, Transaction } from './client.ts';
import { executePrepared } from './prepared.ts';

export interface LeaseColumns {
  availableAt: PgColumn;
  lockedUntil: PgColumn;
  lockedBy: PgColumn;
}

export interface Lease {
  /** Written to `locked_by`; every later write by the holder is guarded on it. */
  owner: string;
  /** The moment the lease was taken, by the holder's clock. */
  takenAt: Date;
  until: Date;
}

export function takeLease(owner: string, nowMs: number, leaseMs: number): Lease {
  return { owner, takenAt: new Date(nowMs), until: new Date(nowMs + leaseMs) };
}

/** The column values that record a lease (merged into the claiming UPDATE's SET). */
export function leaseValues(lease: Lease): { lockedUntil: Date; lockedBy: string } {
  return { lockedUntil: lease.until, lockedBy: lease.owner };
}

/** The column values that end a lease, whatever the outcome. */
export const leaseCleared = { lockedUntil: null, lockedBy: null } as const;

export interface ClaimCandidates {
  table: PgTable & LeaseColumns;
  /** The key the claiming UPDATE matches on (`id`, or a row constructor for a composite key). */
  key: Record<string, PgColumn>;
  /** The table's own condition, e.g. `status = 'pending'`. */
  where: SQL;
  lease: Lease;
  /** Rows whose `available_at` is later wait: a drain passes its start, so a row it reschedules waits for the next pass. */
  dueBy: Date;
  limit: number;
}

/**
 * The locking half of a claim: up to `limit` due rows nobody holds (no lease, or an expired one),
 * oldest first, locked with FOR UPDATE SKIP LOCKED so concurrent claimers split the rows instead of
 * queueing on each other. Use it as `UPDATE … SET <leaseValues> WHERE key IN (<this>) RETURNING …`:
 * one statement, so a row is never seen as free by two claimers (the second one's re-check of the
 * WHERE clause after the first commits finds the new lease).
 */
export function claimCandidates(db: Executor, spec: ClaimCandidates): SQLWrapper {
  const { table, lease } = spec;
  const leaseFree = or(isNull(table.lockedUntil), lt(table.lockedUntil, lease.takenAt));
  return db
    .select(spec.key)
    .from(table)
    .where(and(spec.where, lte(table.availableAt, spec.dueBy), leaseFree))
    .orderBy(table.availableAt)
    .limit(spec.limit)
    .for('update', { skipLocked: true });
}

/** The planner's bitmap scans and sorts off, for the rest of the transaction (SET LOCAL). */
const queueOrderOnly = sql`select set_config('enable_bitmapscan', 'off', true), set_config('enable_sort', 'off', true)`;
/**
 * The two settings back to the session's own values for the rest of the transaction (SET LOCAL …
 * TO DEFAULT is what they would be had nothing set them). Not set_config(name, reset_val) from
 * pg_settings: that view formats every setting the server has, 1.6 ms a call, against 0.03 ms.
 */
const plannerRestored = [sql`set local enable_bitmapscan to default`, sql`set local enable_sort to default`] as const;

/**
 * Runs a claim (an UPDATE built on claimCandidates) in a transaction of its own in which the planner
 * may neither sort nor use a bitmap scan, so the only plan left is a walk of the queue's partial index
 * in `available_at` order that stops after `limit` rows. Why: the planner sizes the queue from the
 * statistics of the last ANALYZE, and autovacuum analyzes a big table only after a tenth of it has
 * changed (and at most once a minute). When a burst arrives the queue still looks a few rows long,
 * and the plan chosen is a bitmap scan of every waiting row plus a sort, to take the first 25: each
 * claim then reads the whole backlog, and draining it costs the square of its length (measured here:
 * 30 ms to claim 25 of 20,000 rows, against 3 ms in index order). The settings are LOCAL: they end
 * with this transaction, which holds nothing but the claim.
 */
export function claimInQueueOrder<T>(db: Database, claim: (tx: Transaction) => Promise<T>): Promise<T> {
  return db.transaction(async (tx) => {
    await executePrepared(tx, queueOrderOnly);
    return claim(tx);
  });
}

/**
 * `claim` (a locking SELECT of a queue, FOR UPDATE SKIP LOCKED) planned as claimInQueueOrder plans
 * its claims, inside a transaction that goes on to other work: the settings are switched off before
 * it and back after it, all sent at once (one round trip), so that the statements the caller
 * runs next in the same transaction (handlers' writes) are planned as everywhere else.
 */
export async function lockInQueueOrder<Row>(tx: Transaction, claim: SQL): Promise<Row[]> {
  const [, rows] = await Promise.all([
    executePrepared(tx, queueOrderOnly),
    executePrepared<Row>(tx, claim),
    ...plannerRestored.map((restore) => executePrepared(tx, restore)),
  ]);
  return rows;
}

/**
 * Whether a call that may take `callTimeoutMs` can start now and still end inside the lease. A row
 * waiting its turn in a batch can outlive its lease; starting it anyway would let another worker
 * claim it mid-call and deliver it twice at once.
 */
export function leaseCovers(lease: Lease, nowMs: number, callTimeoutMs: number): boolean {
  return nowMs + callTimeoutMs < lease.until.getTime();
}

/**
 * Whether claimed work may start now: its pass neither aborted nor past its deadline, and the lease
 * covering the call. Work that may not start has not happened: its holder gives it back at once,
 * counting no attempt.
 */
export function mayStart(
  lease: Lease,
  nowMs: number,
  callTimeoutMs: number,
  pass: { deadlineMs: number; signal?: AbortSignal | undefined },
): boolean {
  return !pass.signal?.aborted && nowMs < pass.deadlineMs && leaseCovers(lease, nowMs, callTimeoutMs);
}
