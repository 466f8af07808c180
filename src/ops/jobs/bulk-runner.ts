// The runner of bulk jobs (src/ops/jobs/bulk-jobs.ts): takes a runnable job under a lease and works
// through its selection in key order, a bounded batch at a time. Each batch is ONE transaction that
// renews the lease (and so holds the job's row), acts on a page of its items as its kind says
// (src/ops/jobs/job-kinds.ts: the operator's own replay or retry, or a copy to a destination, each item
// audited with the job's id), and moves the job's position and counts. A crash
// mid-batch rolls all of that back, so a resumed job takes every item exactly once; a cancel waits
// for the batch in progress and the next batch finds the job cancelled. Before its first batch a job
// waits until every transaction older than it has ended, so no row of its selection can commit
// behind its position (decision 0022); that first batch counts its total again. Between batches it pauses and
// defers to a saturated intake, so a job never starves the webhooks. The batches run on the loop every
// drainer shares (lib/loops.ts drainSlice: budget, signal, batch count).
//
// Run by the Node entry on a schedule, by the Worker's cron as a bounded slice, and by `jobs run`.
import { and, eq, isNull, lt, or, sql } from 'drizzle-orm';
import type { Database, Transaction } from '../../db/client.ts';
import { describeError, isTimeout, isTransientDatabaseError } from '../../db/errors.ts';
import { leaseCleared, takeLease } from '../../db/lease.ts';
import { bulkJobFailures, bulkJobs, JOB_FAILURES_KEPT, LAST_ERROR_MAX } from '../../db/schema.ts';
import type { HandlerMap } from '../../domain/handlers.ts';
import { deferToIntake, type IntakeLoad } from '../../inbox/intake-load.ts';
import type { Clock } from '../../lib/clock.ts';
import type { Logger } from '../../lib/logger.ts';
import { type BatchProgress, drainSlice, type SliceStopReason, sleep } from '../../lib/loops.ts';
import type { Metrics } from '../../lib/metrics.ts';
import { DEFAULT_ROUTING, type DestinationRouting } from '../../outbox/destinations.ts';
import type { PageKey } from '../reads/cursor.ts';
import { type BulkJob, boundedSpec, jobOutcome, openTransactionsBefore, storedSpec, UNFINISHED } from './bulk-jobs.ts';
import { type BatchDone, countSpec, type ItemFailure, JOB_KINDS, JobRefused, runSpecBatch } from './job-kinds.ts';

export interface BulkRunnerSettings {
  /** Items per batch (one transaction). */
  batchSize: number;
  /** A runner's hold on its job, renewed by every batch; a crashed runner's job resumes after it. */
  leaseMs: number;
  /** The pause between two batches of a job. */
  pauseMs: number;
  /** Longest a batch waits for a saturated intake before it goes ahead anyway. */
  maxDeferMs: number;
}

export const BULK_BATCH_SIZE = 50;
export const DEFAULT_BULK_SETTINGS: BulkRunnerSettings = {
  batchSize: BULK_BATCH_SIZE,
  leaseMs: 30_000,
  pauseMs: 50,
  maxDeferMs: 2_000,
};

const DEFER_POLL_MS = 20;
/** How often a job about to start looks again for transactions older than it. */
const SETTLE_POLL_MS = 50;

/**
 * Times in a row a job's batch may meet a statement timeout before the job is failed. A timeout is
 * transient for an outage's sake, but an item whose handler always outlasts the timeout would hold the
 * job at the same batch forever, retried at every lapse of its lease.
 */
export const MAX_BATCH_TIMEOUTS = 3;

export interface BulkRunnerDeps {
  db: Database;
  handlers: HandlerMap;
  clock: Clock;
  logger: Logger;
  /** This runner's lease owner (`locked_by`). */
  owner: string;
  metrics?: Pick<Metrics, 'countReplay' | 'countRetry'> | undefined;
  /** The configured destinations: where a send_to_destination job sends, with its filters. */
  routing?: DestinationRouting | undefined;
  /** The Node process's intake load (async mode), to defer to between batches. */
  intakeLoad?: IntakeLoad | undefined;
  settings?: Partial<BulkRunnerSettings>;
}

export interface BulkRunOptions {
  /** Stop taking batches after this long. */
  budgetMs: number;
  signal?: AbortSignal | undefined;
  /** Stop after this many batches (a bounded slice). */
  maxBatches?: number | undefined;
  /** Work on this job only. */
  jobId?: string | undefined;
}

/**
 * Why a run ended: no runnable job left (its loop's `drained`), its budget or batch count spent, its
 * signal aborted, or a database error.
 */
export type BulkStopReason = Exclude<SliceStopReason, 'drained'> | 'idle' | 'error';

export interface BulkRunSummary {
  /** Jobs taken (a job resumed counts again). */
  jobs: number;
  batches: number;
  /** Items taken, and of them those the action could not change. */
  items: number;
  failed: number;
  /** Jobs this run finished (done). */
  finished: number;
  /** Time spent waiting for a saturated intake between batches. */
  deferredMs: number;
  stoppedBy: BulkStopReason;
}

export interface BulkRunner {
  readonly owner: string;
  run(options: BulkRunOptions): Promise<BulkRunSummary>;
}

export function createBulkRunner(deps: BulkRunnerDeps): BulkRunner {
  const settings = { ...DEFAULT_BULK_SETTINGS, ...deps.settings };
  const { db, clock, logger, owner } = deps;
  const job = bulkJobs;
  const heldByUs = (id: string) => and(eq(job.id, id), eq(job.lockedBy, owner));
  /** Statement timeouts each job's batches met in a row here (MAX_BATCH_TIMEOUTS). */
  const timeoutsInARow = new Map<string, number>();

  /** The oldest runnable job nobody holds (or whose holder's lease lapsed), now leased to us. */
  async function claim(only: string | undefined): Promise<BulkJob | undefined> {
    const lease = takeLease(owner, clock(), settings.leaseMs);
    const candidate = db
      .select({ id: job.id })
      .from(job)
      .where(
        and(
          sql`${job.status} in ('queued', 'running')`,
          or(isNull(job.lockedUntil), lt(job.lockedUntil, lease.takenAt)),
          only === undefined ? undefined : eq(job.id, only),
        ),
      )
      .orderBy(job.createdAt)
      .limit(1)
      .for('update', { skipLocked: true });
    const [claimed] = await db
      .update(job)
      .set({
        status: 'running',
        startedAt: sql`coalesce(${job.startedAt}, now())`,
        lockedUntil: lease.until,
        lockedBy: owner,
      })
      .where(sql`${job.id} = (${candidate})`)
      .returning();
    return claimed;
  }

  /**
   * One batch in one transaction, or undefined when the job is no longer ours to run: cancelled, or
   * taken by another runner after our lease lapsed. The first statement renews the lease and locks
   * the job's row until the commit, so no other runner and no cancel can interleave with the batch.
   */
  async function runBatch(jobId: string): Promise<(BatchDone & { job: BulkJob }) | undefined> {
    return db.transaction(async (tx) => {
      const lease = takeLease(owner, clock(), settings.leaseMs);
      const [held] = await tx
        .update(job)
        .set({ lockedUntil: lease.until })
        .where(and(heldByUs(jobId), eq(job.status, 'running')))
        .returning();
      if (held === undefined) return undefined;
      const spec = boundedSpec(storedSpec(held.kind, held.filter), held.createdAt);
      const after = positionOf(held.position);
      // The first batch follows the wait for older transactions (settled): rows they committed since
      // the job was created are in its selection now, and are counted with the rest. A row that comes
      // into the selection later, ahead of the position (a message that goes dead, an event that
      // fails, after the first batch), is taken as well: `total` then grows to what was processed,
      // so that `processed` never passes it.
      const counted = after === undefined ? await countSpec(tx, spec) : held.total;
      const { handlers, metrics } = deps;
      const routing = deps.routing ?? DEFAULT_ROUTING;
      const batch = { tx, job: held, after, batchSize: settings.batchSize, handlers, clock, logger, metrics, routing };
      const done = await runSpecBatch(batch, spec);
      const finished = done.next === undefined;
      await keepFailures(tx, held, done.failures);
      const [updated] = await tx
        .update(job)
        .set({
          position: done.next ?? held.position,
          total: sql`greatest(${counted}::int, ${job.processed} + ${done.items}::int)`,
          processed: sql`${job.processed} + ${done.items}`,
          failed: sql`${job.failed} + ${done.failed}`,
          ...(finished ? { status: 'done' as const, finishedAt: sql`now()`, ...leaseCleared } : {}),
        })
        .where(eq(job.id, jobId))
        .returning();
      if (updated === undefined) throw new Error('the held job row vanished');
      return { ...done, job: updated };
    });
  }

  /**
   * Writes the batch's failed items with their reasons, up to the job's JOB_FAILURES_KEPT: the held
   * row's `failed` is what the batches before kept room for, and nobody else writes while we hold it.
   */
  async function keepFailures(tx: Transaction, held: BulkJob, failures: readonly ItemFailure[]): Promise<void> {
    const kept = failures.slice(0, Math.max(0, JOB_FAILURES_KEPT - held.failed));
    if (kept.length === 0) return;
    const targetKind = JOB_KINDS[held.kind].audit.targetKind;
    await tx
      .insert(bulkJobFailures)
      .values(
        kept.map((failure) => ({
          jobId: held.id,
          targetKind,
          target: failure.target,
          reason: failure.reason.slice(0, LAST_ERROR_MAX),
        })),
      )
      .onConflictDoNothing();
  }

  /** A batch that failed: a database outage leaves the job to its lease (resumed later); anything else fails it. */
  async function batchFailed(jobId: string, error: unknown): Promise<'transient' | 'failed'> {
    const reason = error instanceof JobRefused ? error.message : describeError(error);
    const timeouts = isTimeout(error) ? (timeoutsInARow.get(jobId) ?? 0) + 1 : 0;
    timeoutsInARow.delete(jobId);
    if (timeouts > 0 && timeouts < MAX_BATCH_TIMEOUTS) timeoutsInARow.set(jobId, timeouts);
    if (isTransientDatabaseError(error) && timeouts < MAX_BATCH_TIMEOUTS) {
      logger.warn('bulk job batch failed; the job resumes when its lease lapses', { job_id: jobId, error: reason });
      return 'transient';
    }
    const lastError =
      timeouts >= MAX_BATCH_TIMEOUTS ? `a batch timed out ${timeouts} times in a row: ${reason}` : reason;
    logger.error('bulk job failed', { job_id: jobId, error: lastError });
    await db
      .update(job)
      .set({ status: 'failed', lastError: lastError.slice(0, LAST_ERROR_MAX), finishedAt: sql`now()`, ...leaseCleared })
      .where(and(heldByUs(jobId), sql`${job.status} in ('queued', 'running')`));
    return 'failed';
  }

  /**
   * Waits, before a job's first batch, until no transaction that began before the job's selection
   * ends is still open (bulk-jobs.ts openTransactionsBefore): then every row stamped inside the
   * selection is committed or rolled back, and the walk cannot pass a place where one lands later.
   * False when the run's budget or signal ends the wait first; the job waits again at its next run.
   */
  async function settled(held: BulkJob, deadlineMs: number, signal: AbortSignal | undefined): Promise<boolean> {
    let logged = false;
    for (;;) {
      const open = await openTransactionsBefore(db, held.createdAt);
      if (open.length === 0) return true;
      if (!logged) {
        logger.info('bulk job waiting for transactions older than it', { job_id: held.id, pids: open.map(String) });
        logged = true;
      }
      if (signal?.aborted || clock() >= deadlineMs) return false;
      await sleep(SETTLE_POLL_MS, signal);
    }
  }

  /** Ends our lease early, so that the next run (here or in another process) resumes at once. */
  async function release(jobId: string): Promise<void> {
    await db
      .update(job)
      .set(leaseCleared)
      .where(and(heldByUs(jobId), sql`${job.status} in ('queued', 'running')`));
  }

  /** The pause between two batches, then the wait for a saturated intake; answers that wait. */
  async function betweenBatches(signal: AbortSignal | undefined): Promise<number> {
    await sleep(settings.pauseMs, signal);
    if (deps.intakeLoad === undefined) return 0;
    return deferToIntake(deps.intakeLoad, { maxWaitMs: settings.maxDeferMs, pollMs: DEFER_POLL_MS, signal });
  }

  /** Nothing left to take now: the loop ends (drained). */
  const NOTHING_LEFT: BatchProgress = { claimed: 0, limit: 1 };
  /** No batch's work was done: the loop looks again, its budget and signal first. */
  const NOT_STARTED: BatchProgress = { claimed: 0, limit: 1, notStarted: true };
  /** A batch done: the loop goes on. */
  const ONE_BATCH: BatchProgress = { claimed: 1, limit: 1 };

  async function run(options: BulkRunOptions): Promise<BulkRunSummary> {
    const summary: BulkRunSummary = {
      jobs: 0,
      batches: 0,
      items: 0,
      failed: 0,
      finished: 0,
      deferredMs: 0,
      stoppedBy: 'idle',
    };
    const { signal } = options;
    let current: BulkJob | undefined;
    /** Why there was nothing left: no runnable job, or a database error (the job resumes after its lease). */
    let nothingLeft: 'idle' | 'error' = 'idle';

    /** The job's next batch (the next job's first, once one is done): lib/loops.ts runs these. */
    async function nextBatch(deadlineMs: number): Promise<BatchProgress> {
      if (current === undefined) {
        current = await claim(options.jobId);
        if (current === undefined) return NOTHING_LEFT;
        summary.jobs += 1;
        logger.info('bulk job taken', { job_id: current.id, kind: current.kind, processed: current.processed });
        // Cut short by the deadline or the signal, which the loop then names.
        if (current.position === null && !(await settled(current, deadlineMs, signal))) return NOT_STARTED;
      } else {
        summary.deferredMs += await betweenBatches(signal);
        if (signal?.aborted) return NOT_STARTED;
      }
      const jobId = current.id;
      let done: Awaited<ReturnType<typeof runBatch>>;
      try {
        done = await runBatch(jobId);
      } catch (error) {
        current = undefined;
        if ((await batchFailed(jobId, error)) !== 'transient') return NOT_STARTED;
        nothingLeft = 'error';
        return NOTHING_LEFT;
      }
      if (done === undefined) {
        logger.info('bulk job stopped: cancelled, or taken over', { job_id: jobId });
        current = undefined;
        return NOT_STARTED;
      }
      timeoutsInARow.delete(jobId);
      summary.batches += 1;
      summary.items += done.items;
      summary.failed += done.failed;
      if (done.next === undefined) {
        summary.finished += 1;
        logger.info('bulk job done', {
          job_id: jobId,
          outcome: jobOutcome(done.job),
          total: done.job.total,
          processed: done.job.processed,
          failed: done.job.failed,
        });
        current = undefined;
      }
      return ONE_BATCH;
    }

    try {
      const { stoppedBy } = await drainSlice({
        nowMs: clock,
        budgetMs: options.budgetMs,
        signal,
        maxBatches: options.maxBatches,
        batch: nextBatch,
      });
      summary.stoppedBy = stoppedBy === 'drained' ? nothingLeft : stoppedBy;
      return summary;
    } finally {
      if (current !== undefined && UNFINISHED.includes(current.status)) {
        await release(current.id).catch((error: unknown) => {
          logger.warn('bulk job lease not released', { job_id: current?.id, error: describeError(error) });
        });
      }
    }
  }

  return { owner, run };
}

/** `bulk_jobs.position` as written by a batch (a PageKey), or undefined before the first one. */
function positionOf(stored: unknown): PageKey | undefined {
  if (typeof stored !== 'object' || stored === null) return undefined;
  const { atMicros, keys } = stored as Partial<PageKey>;
  if (typeof atMicros !== 'string' || !Array.isArray(keys)) return undefined;
  return { atMicros, keys: keys.filter((key): key is string => typeof key === 'string') };
}
