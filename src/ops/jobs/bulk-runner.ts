// The runner of bulk jobs (src/ops/jobs/bulk-jobs.ts): takes a runnable job under a lease and works
// through its selection in key order, a bounded batch at a time. Each batch is ONE transaction that
// renews the lease (and so holds the job's row), applies its items through the operator's own replay
// and retry, or copies them to a destination (each item audited with the job's id), and moves the job's position and counts. A crash
// mid-batch rolls all of that back, so a resumed job takes every item exactly once; a cancel waits
// for the batch in progress and the next batch finds the job cancelled. Before its first batch a job
// waits until every transaction older than it has ended, so no row of its selection can commit
// behind its position (decision 0022); that first batch counts its total again. Between batches it pauses and
// defers to a saturated intake, so a job never starves the webhooks.
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
import type { Metrics } from '../../lib/metrics.ts';
import { DEFAULT_ROUTING, type DestinationRouting } from '../../outbox/destinations.ts';
import { replayEvents } from '../actions/replay.ts';
import { retryOutbox } from '../actions/retry.ts';
import { decodeCursor, encodeCursor, type PageKey } from '../reads/cursor.ts';
import { listEvents } from '../reads/events.ts';
import { listOutbox } from '../reads/outbox-view.ts';
import {
  type BulkJob,
  boundedSpec,
  countSpec,
  type EventJobFilter,
  JOB_AUDIT,
  jobOutcome,
  type OutboxJobFilter,
  openTransactionsBefore,
  storedSpec,
  UNFINISHED,
} from './bulk-jobs.ts';
import { messagesToSend, type SendJobFilter, sendMessages } from './destination-copy.ts';

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

/** Why a run ended: no runnable job left, its budget or batch count spent, its signal aborted, or a database error. */
export type BulkStopReason = 'idle' | 'budget' | 'batches' | 'aborted' | 'error';

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

/** An item a batch could not change, named as its audit row names it, and why. */
interface ItemFailure {
  target: string;
  reason: string;
}

/** Why an item counts as failed when it vanished between the page and the action. */
const GONE = 'deleted by retention after the job read it';

interface BatchDone {
  items: number;
  failed: number;
  /** The failed items with their reasons (a copy's skipped messages are counted, not listed). */
  failures: readonly ItemFailure[];
  /** Where the next batch starts; undefined when this batch reached the end. */
  next: PageKey | undefined;
}

export interface BulkRunner {
  readonly owner: string;
  run(options: BulkRunOptions): Promise<BulkRunSummary>;
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (ms <= 0 || signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done);
  });

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

  async function replayItems(tx: Transaction, held: BulkJob, filter: EventJobFilter, after: PageKey | undefined) {
    const page = await listEvents(tx, { ...filter, cursor: cursorOf(after), limit: settings.batchSize });
    const byProvider = new Map<string, typeof page.rows>();
    for (const row of page.rows) byProvider.set(row.provider, [...(byProvider.get(row.provider) ?? []), row]);
    const failures: ItemFailure[] = [];
    for (const [provider, rows] of byProvider) {
      let eventIds = rows.map((row) => row.eventId);
      const target = (eventId: string) => `${provider}/${eventId}`;
      while (eventIds.length > 0) {
        const result = await replayEvents(
          { db: tx, handlers: deps.handlers, clock, logger, metrics: deps.metrics },
          { provider, eventIds, operator: held.operator, jobId: held.id },
        );
        if (result.kind === 'replayed') {
          for (const event of result.events) {
            if (event.outcome === 'applied') continue;
            failures.push({ target: target(event.eventId), reason: event.reason ?? `it is ${event.after.status}` });
          }
          break;
        }
        // Deleted by retention since the page was read: not changed, so counted as failed.
        for (const eventId of result.eventIds) failures.push({ target: target(eventId), reason: GONE });
        eventIds = eventIds.filter((id) => !result.eventIds.includes(id));
      }
    }
    return { items: page.rows.length, failed: failures.length, failures, next: nextKey(page.nextCursor, 2) };
  }

  async function retryItems(tx: Transaction, held: BulkJob, filter: OutboxJobFilter, after: PageKey | undefined) {
    const page = await listOutbox(tx, { ...filter, cursor: cursorOf(after), limit: settings.batchSize });
    let ids = page.rows.map((row) => row.id);
    const failures: ItemFailure[] = [];
    while (ids.length > 0) {
      const result = await retryOutbox(
        { db: tx, clock, logger, metrics: deps.metrics },
        { ids, operator: held.operator, jobId: held.id },
      );
      if (result.kind === 'retried') {
        // No longer dead (an operator or another job retried it first): left alone.
        for (const { id, status } of result.skipped) {
          failures.push({ target: id, reason: `it was ${status}: only dead messages are retried` });
        }
        break;
      }
      for (const id of result.ids) failures.push({ target: id, reason: GONE });
      ids = ids.filter((id) => !result.ids.includes(id));
    }
    return { items: page.rows.length, failed: failures.length, failures, next: nextKey(page.nextCursor, 1) };
  }

  /** A page of messages copied to the job's destination; those not copied count as failed (skipped). */
  async function sendItems(tx: Transaction, held: BulkJob, filter: SendJobFilter, after: PageKey | undefined) {
    const to = (deps.routing ?? DEFAULT_ROUTING).destinations.find((destination) => destination.name === filter.to);
    // A job created under another configuration: failing it says so, where copying blind would not.
    if (to === undefined) throw new JobRefused(`destination "${filter.to}" is not configured in this process`);
    const page = await messagesToSend(tx, filter, after, settings.batchSize);
    const { skipped } = await sendMessages(tx, page.rows, {
      to,
      operator: held.operator,
      jobId: held.id,
      at: new Date(deps.clock()),
    });
    return { items: page.rows.length, failed: skipped, failures: [], next: nextKey(page.nextCursor, 1) };
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
      // the job was created are in its selection now, and are counted with the rest, so that
      // `processed` reaches `total` and never passes it.
      const total = after === undefined ? await countSpec(tx, spec) : held.total;
      const done =
        spec.kind === 'replay_events'
          ? await replayItems(tx, held, spec.filter, after)
          : spec.kind === 'retry_outbox'
            ? await retryItems(tx, held, spec.filter, after)
            : await sendItems(tx, held, spec.filter, after);
      const finished = done.next === undefined;
      await keepFailures(tx, held, done.failures);
      const [updated] = await tx
        .update(job)
        .set({
          position: done.next ?? held.position,
          total,
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
    const targetKind = JOB_AUDIT[held.kind].targetKind;
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
    const deadlineMs = clock() + options.budgetMs;
    let current: BulkJob | undefined;
    const stop = (reason: BulkStopReason) => {
      summary.stoppedBy = reason;
      return summary;
    };
    try {
      for (;;) {
        if (options.signal?.aborted) return stop('aborted');
        if (clock() >= deadlineMs) return stop('budget');
        if (options.maxBatches !== undefined && summary.batches >= options.maxBatches) return stop('batches');
        if (current === undefined) {
          current = await claim(options.jobId);
          if (current === undefined) return stop('idle');
          summary.jobs += 1;
          logger.info('bulk job taken', { job_id: current.id, kind: current.kind, processed: current.processed });
          if (current.position === null && !(await settled(current, deadlineMs, options.signal))) {
            return stop(options.signal?.aborted ? 'aborted' : 'budget');
          }
        } else {
          summary.deferredMs += await betweenBatches(options.signal);
          if (options.signal?.aborted) return stop('aborted');
        }
        const jobId = current.id;
        let done: Awaited<ReturnType<typeof runBatch>>;
        try {
          done = await runBatch(jobId);
        } catch (error) {
          current = undefined;
          if ((await batchFailed(jobId, error)) === 'transient') return stop('error');
          continue;
        }
        if (done === undefined) {
          logger.info('bulk job stopped: cancelled, or taken over', { job_id: jobId });
          current = undefined;
          continue;
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
      }
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

/** A job this runner cannot run as it is configured; the message, ours, becomes the job's last_error. */
class JobRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'JobRefused';
  }
}

/** A stored position as a listing's cursor. */
const cursorOf = (key: PageKey | undefined) => (key === undefined ? undefined : encodeCursor(key));

/** The position the next batch starts after: the page's last key, or undefined on the last page. */
function nextKey(nextCursor: string | null, keyCount: number): PageKey | undefined {
  return nextCursor === null ? undefined : decodeCursor(nextCursor, keyCount);
}

/** `bulk_jobs.position` as written by a batch (a PageKey), or undefined before the first one. */
function positionOf(stored: unknown): PageKey | undefined {
  if (typeof stored !== 'object' || stored === null) return undefined;
  const { atMicros, keys } = stored as Partial<PageKey>;
  if (typeof atMicros !== 'string' || !Array.isArray(keys)) return undefined;
  return { atMicros, keys: keys.filter((key): key is string => typeof key === 'string') };
}
