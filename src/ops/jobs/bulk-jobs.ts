// Bulk actions by filter, as jobs: replay the inbox events or retry the dead outbox messages that
// one of the operator's list filters matches (src/ops/reads/events.ts, src/ops/reads/outbox-view.ts), or send the
// outbox messages it matches to a destination added later (src/ops/jobs/destination-copy.ts). This module
// owns a job's life outside its runner: counting (a dry run), creating it with its one audit row,
// reading it, cancelling it, its filter as stored, and the selection it walks. What differs between
// kinds is one entry each in src/ops/jobs/job-kinds.ts; working through the items in batches is
// src/ops/jobs/bulk-runner.ts.
//
// A job takes only rows that existed when it was created: its selection ends at its `created_at`
// (to the millisecond), so arrivals never extend it and it terminates. A row's stamp is its
// transaction's start (`now()`), so a transaction older than the job can still commit rows inside
// the selection after the job was created: the runner starts walking only once none is open
// (openTransactionsBefore; decision 0022), and counts the total again then.

import { asc, desc, eq, sql } from 'drizzle-orm';
import { recordOperatorActions } from '../../db/audit.ts';
import type { Database, Executor } from '../../db/client.ts';
import { type BulkJobKind, type BulkJobStatus, bulkJobFailures, bulkJobs, JOB_FAILURES_KEPT } from '../../db/schema.ts';
import { type Clock, isoOrNull } from '../../lib/clock.ts';
import type { Logger } from '../../lib/logger.ts';
import { assertOperatorName } from '../../lib/operator-name.ts';
import { isMessageId } from '../../outbox/operator.ts';
import { parseTimeBound } from '../reads/time-bound.ts';
import { type BulkJobSpec, countSpec, type FilterJson, JOB_KINDS, type JobSpec } from './job-kinds.ts';

export function filterJson(spec: BulkJobSpec): FilterJson {
  const { since, until, ...rest } = spec.filter;
  const entries = Object.entries({ ...rest, since: since?.toISOString(), until: until?.toISOString() });
  return Object.fromEntries(entries.filter((entry): entry is [string, string] => typeof entry[1] === 'string'));
}

/** The spec a stored job was created with (its filter was written by filterJson). */
export function storedSpec<K extends BulkJobKind>(kind: K, stored: unknown): JobSpec<K> {
  const json = (typeof stored === 'object' && stored !== null ? stored : {}) as Partial<FilterJson>;
  const time = (value: string | undefined) => (value === undefined ? undefined : parseTimeBound(value, 0));
  const common = { id: json.id, since: time(json.since), until: time(json.until) };
  return { kind, filter: JOB_KINDS[kind].storedFilter(json, common) };
}

/** The first instant past a job's selection: the millisecond after its `created_at`. */
const selectionEnd = (createdAt: Date) => new Date(createdAt.getTime() + 1);

/**
 * The sessions of this database, other than the caller's, whose transaction began before the
 * selection of a job created at `createdAt` ends. Rows they write are stamped with that start, inside
 * the selection, and become visible only when they commit: a walk that started before they end could
 * already be past the place where those rows land, and would never take them. A transaction without
 * a transaction id yet (it has written nothing so far) is one too, which is why this reads
 * `xact_start` rather than a snapshot's transaction ids. PostgreSQL shows `xact_start` only for the
 * sessions of the caller's role (or to a role with pg_read_all_stats): the service's own sessions.
 */
export async function openTransactionsBefore(db: Executor, createdAt: Date): Promise<number[]> {
  const rows = await db.execute<{ pid: number }>(sql`select pid from pg_stat_activity
    where datname = current_database() and pid <> pg_backend_pid()
      and xact_start < ${selectionEnd(createdAt).toISOString()}::timestamptz`);
  return rows.map((row) => row.pid);
}

/**
 * The filter narrowed to rows that existed at `createdAt`: received (or created) before the next
 * millisecond. The count at creation and every batch of the runner read through the same bound.
 */
export function boundedSpec<K extends BulkJobKind>(spec: JobSpec<K>, createdAt: Date): JobSpec<K> {
  const bound = selectionEnd(createdAt);
  const until = spec.filter.until === undefined || spec.filter.until > bound ? bound : spec.filter.until;
  return { kind: spec.kind, filter: { ...spec.filter, until } };
}

export type BulkJob = typeof bulkJobs.$inferSelect;

export type CreateResult =
  /** A dry run, or a filter that matches nothing: no job, nothing recorded. */
  { kind: 'counted'; count: number } | { kind: 'created'; job: BulkJob };

export interface CreateRequest {
  spec: BulkJobSpec;
  operator: string;
  dryRun?: boolean | undefined;
}

/** The database's now, to the millisecond (the job's `created_at`, what its selection ends at). */
async function databaseNow(db: Executor): Promise<Date> {
  const [row] = await db.execute<{ ms: string }>(
    sql`select floor(extract(epoch from now()) * 1000)::bigint::text as ms`,
  );
  return new Date(Number(row?.ms));
}

/**
 * Counts what the filter matches now; unless it is a dry run or matches nothing, creates the job
 * (`queued`, its total that count) and its one audit row (the filter as `detail`) in one transaction.
 * The count reads every matching entry of the filter's index: exact, not capped like the lists'.
 */
export async function createBulkJob(
  context: { db: Database; logger: Logger; clock: Clock },
  request: CreateRequest,
): Promise<CreateResult> {
  assertOperatorName(request.operator);
  const result = await context.db.transaction(async (tx): Promise<CreateResult> => {
    const createdAt = await databaseNow(tx);
    const count = await countSpec(tx, boundedSpec(request.spec, createdAt));
    if (request.dryRun || count === 0) return { kind: 'counted', count };
    const filter = filterJson(request.spec);
    const [job] = await tx
      .insert(bulkJobs)
      .values({ kind: request.spec.kind, operator: request.operator, filter, total: count, createdAt })
      .returning();
    if (job === undefined) throw new Error('insert returned no row');
    const audit = JOB_KINDS[job.kind].audit;
    await recordOperatorActions(tx, new Date(context.clock()), [
      {
        operator: request.operator,
        action: audit.action,
        targetKind: audit.targetKind,
        target: `job/${job.id}`,
        afterStatus: 'queued',
        jobId: job.id,
        detail: filter,
      },
    ]);
    return { kind: 'created', job };
  });
  if (result.kind === 'created') {
    const { job } = result;
    context.logger.info('bulk job created', {
      job_id: job.id,
      kind: job.kind,
      operator: job.operator,
      total: job.total,
    });
  }
  return result;
}

/** A job id is a uuid: anything else names no job (and would fail the query). */
export const isJobId = isMessageId;

export async function getBulkJob(db: Executor, id: string): Promise<BulkJob | undefined> {
  if (!isJobId(id)) return undefined;
  const [job] = await db.select().from(bulkJobs).where(eq(bulkJobs.id, id));
  return job;
}

/** The newest jobs first. */
export function listBulkJobs(db: Executor, limit: number): Promise<BulkJob[]> {
  return db.select().from(bulkJobs).orderBy(desc(bulkJobs.createdAt), desc(bulkJobs.id)).limit(limit);
}

export const UNFINISHED: readonly BulkJobStatus[] = ['queued', 'running'];

export type CancelResult =
  | { kind: 'cancelled'; job: BulkJob }
  /** Done, failed or cancelled before: left as it was, nothing recorded. */
  | { kind: 'finished'; job: BulkJob }
  | { kind: 'not_found' };

/**
 * Cancels a queued or running job, audited in the same transaction. A batch in progress holds the
 * job's row, so the cancel waits for that batch to commit; the runner then stops at its next one.
 */
export async function cancelBulkJob(
  context: { db: Database; logger: Logger; clock: Clock },
  request: { id: string; operator: string },
): Promise<CancelResult> {
  assertOperatorName(request.operator);
  if (!isJobId(request.id)) return { kind: 'not_found' };
  const result = await context.db.transaction(async (tx): Promise<CancelResult> => {
    const [current] = await tx.select().from(bulkJobs).where(eq(bulkJobs.id, request.id)).for('update');
    if (current === undefined) return { kind: 'not_found' };
    if (!UNFINISHED.includes(current.status)) return { kind: 'finished', job: current };
    const [job] = await tx
      .update(bulkJobs)
      .set({
        status: 'cancelled',
        cancelledBy: request.operator,
        finishedAt: sql`now()`,
        lockedUntil: null,
        lockedBy: null,
      })
      .where(eq(bulkJobs.id, request.id))
      .returning();
    if (job === undefined) return { kind: 'not_found' };
    await recordOperatorActions(tx, new Date(context.clock()), [
      {
        operator: request.operator,
        action: 'bulk_cancel',
        targetKind: JOB_KINDS[job.kind].audit.targetKind,
        target: `job/${job.id}`,
        beforeStatus: current.status,
        afterStatus: 'cancelled',
        jobId: job.id,
      },
    ]);
    return { kind: 'cancelled', job };
  });
  if (result.kind === 'cancelled') {
    context.logger.info('bulk job cancelled', { job_id: request.id, operator: request.operator });
  }
  return result;
}

/**
 * How a job stands, as an operator reads it: its status, except that a job done with items its
 * action could not change is `done_with_failures`, never shown as a plain success. Items a kind
 * skips on purpose (a copy's: the destination has them, or its filters refuse them) are no failures.
 */
export type JobOutcome = BulkJobStatus | 'done_with_failures';

export function jobOutcome(job: Pick<BulkJob, 'status' | 'failed' | 'kind'>): JobOutcome {
  return job.status === 'done' && job.failed > 0 && JOB_KINDS[job.kind].failedAre === 'failed'
    ? 'done_with_failures'
    : job.status;
}

/** A failed item of a job and why (bulk_job_failures: the first JOB_FAILURES_KEPT of each job). */
export type JobFailure = typeof bulkJobFailures.$inferSelect;

/** The failed items a job kept, in the order it met them. */
export function listJobFailures(db: Executor, jobId: string): Promise<JobFailure[]> {
  const f = bulkJobFailures;
  return db.select().from(f).where(eq(f.jobId, jobId)).orderBy(asc(f.at), asc(f.target)).limit(JOB_FAILURES_KEPT);
}

/**
 * The event a failed item names (its target, `provider/event_id`), or undefined for a message: a
 * sender's name holds no `/`, so the first one ends it.
 */
export function failedEventKey(failure: Pick<JobFailure, 'targetKind' | 'target'>) {
  if (failure.targetKind !== 'event') return undefined;
  const slash = failure.target.indexOf('/');
  return { provider: failure.target.slice(0, slash), eventId: failure.target.slice(slash + 1) };
}

/** The wire form shared by the admin API and the CLI's `--json` (snake_case, like the table). */
export function jobJson(job: BulkJob) {
  return {
    id: job.id,
    kind: job.kind,
    status: job.status,
    outcome: jobOutcome(job),
    operator: job.operator,
    filter: job.filter as FilterJson,
    total: job.total,
    processed: job.processed,
    failed: job.failed,
    created_at: job.createdAt.toISOString(),
    started_at: isoOrNull(job.startedAt),
    finished_at: isoOrNull(job.finishedAt),
    cancelled_by: job.cancelledBy,
    last_error: job.lastError,
  };
}
