// The async inbox worker: in `lanes` lanes, claims due `received` and retryable `failed` rows, and
// `processing` rows whose lease expired (a crashed worker's), and applies and completes them in the
// same transaction, one per batch (the row locks are the lease while it lasts; see takeBatch). A batch
// that cannot go through commits a lease on its rows instead and applies them one event at a time
// (applyStoredEvent), so a failure is recorded against its own event only: `failed` with capped
// full-jitter backoff, or `dead_letter` after INBOX_MAX_ATTEMPTS or at once on a DomainRejection.
// Runtime-neutral, like the outbox relay it follows: the Node schedule, the CLI `work` and the
// Workers cron drive one `work`.
import { sql } from 'drizzle-orm';
import type { Config } from '../config.ts';
import type { Database } from '../db/client.ts';
import { describeError } from '../db/errors.ts';
import { mayStart, takeLease } from '../db/lease.ts';
import { executePrepared } from '../db/prepared.ts';
import type { HandlerMap } from '../domain/handlers.ts';
import { backoffDelayMs, type RandomSource } from '../lib/backoff.ts';
import { type Clock, elapsedMs } from '../lib/clock.ts';
import type { Logger } from '../lib/logger.ts';
import { drainBatches, type QueueSettings, retryAfterPass, type StopReason } from '../lib/loops.ts';
import type { Metrics } from '../lib/metrics.ts';
import { noTracing, type Tracer } from '../lib/tracing.ts';
import { sendersByName } from '../senders/registry.ts';
import {
  type ClaimedEvent,
  type DueRow,
  leaseLocked,
  lockDueBatch,
  releaseClaim,
  storedKeyString,
} from './event-rows.ts';
import { deferToIntake, type IntakeLoad } from './intake-load.ts';
import {
  applyLockedRows,
  applyStoredEvent,
  type StoredContext,
  type StoredOutcome,
  type StoredResult,
} from './stored.ts';
import { type ReportLine, reportApplication, type Tally } from './worker-report.ts';

export interface InboxWorkerSettings extends QueueSettings {
  /**
   * Lanes, each claiming and applying one batch at a time; at most the worker pool's connections, so
   * the worker never queues on itself.
   */
  lanes: number;
  /** Longest one application may take (the pool's statement timeout); an apply starts only if the lease covers it. */
  applyTimeoutMs: number;
  /**
   * Longest the first lane's batch waits for a saturated intake (see IntakeLoad) before it goes ahead
   * anyway; the other lanes wait for the intake, or for the end of the pass.
   */
  maxDeferMs: number;
}

/**
 * Tuning, not contract. A batch is applied in one transaction: 200 events share one commit and, with
 * their handlers started together, their domain writes share statements (domain/subscriptions.ts),
 * so most of the per-event cost of a transaction of its own (BEGIN, the row lock, the domain write,
 * the status update, COMMIT and its WAL flush) is spread. Measured against 25 (three async bursts of
 * 8,000 events on a busy machine): about 15% less CPU per applied event in the service and 25% less
 * in PostgreSQL. 200 against 100 (bursts of 4,000 through wrk beside sync, alternating
 * runs on a noisy machine): a burst applied at 0.95x sync's rate against 0.89x (medians), acceptance
 * unchanged. A batch that rolls back is re-applied one by one, which a rare failure can afford.
 */
export const DEFAULT_WORKER_BATCH_SIZE = 200;
export const DEFAULT_WORKER_LANES = 4;
export const DEFAULT_WORKER_BUDGET_MS = 20_000;
/** Under sustained saturation a batch still goes every second: the backlog moves, if slowly (100 events/s). */
export const DEFAULT_WORKER_MAX_DEFER_MS = 1000;
const DEFER_POLL_MS = 10;

export function inboxWorkerSettings(
  config: Pick<
    Config,
    'INBOX_MAX_ATTEMPTS' | 'INBOX_BACKOFF_BASE_MS' | 'INBOX_BACKOFF_MAX_MS' | 'INBOX_LEASE_MS' | 'HANDLER_DEADLINE_MS'
  >,
  overrides: Partial<InboxWorkerSettings> = {},
): InboxWorkerSettings {
  return {
    maxAttempts: config.INBOX_MAX_ATTEMPTS,
    backoff: { baseMs: config.INBOX_BACKOFF_BASE_MS, maxMs: config.INBOX_BACKOFF_MAX_MS },
    leaseMs: config.INBOX_LEASE_MS,
    // Below the lease (config.ts LEASED_CALLS refuses any other in async mode).
    applyTimeoutMs: config.HANDLER_DEADLINE_MS,
    batchSize: DEFAULT_WORKER_BATCH_SIZE,
    lanes: DEFAULT_WORKER_LANES,
    maxDeferMs: DEFAULT_WORKER_MAX_DEFER_MS,
    budgetMs: DEFAULT_WORKER_BUDGET_MS,
    ...overrides,
  };
}

export interface InboxWorkerDeps {
  db: Database;
  handlers: HandlerMap;
  /** Providers by name, for parked payloads' schema check; every known scheme when absent. */
  sendersByName?: StoredContext['sendersByName'];
  clock: Clock;
  /** Makes this worker's id, written to `locked_by`. */
  newId: () => string;
  random: RandomSource;
  logger: Logger;
  metrics?: Pick<Metrics, 'countEvent'>;
  /** The in-process intake's load, when there is one: batches wait while it is saturated. */
  intakeLoad?: IntakeLoad;
  settings: InboxWorkerSettings;
  /** An `apply` span per event, continuing its delivery's trace (stored.ts); absent: `noTracing`. */
  tracer?: Tracer | undefined;
}

/** What a batch's transaction committed. */
type Taken =
  | { applied: true; results: ReadonlyMap<string, StoredResult> }
  /** `leased`: the rows' lease, for one-at-a-time application (after `failure`, if any); else nothing. */
  | { applied: false; leased?: true; failure?: unknown };

const claimedEvent = (row: DueRow): ClaimedEvent => ({
  provider: row.provider,
  eventId: row.event_id,
  eventType: row.event_type,
  failures: row.attempt_count,
});

export interface WorkSummary extends Tally {
  batches: number;
  stoppedBy: StopReason;
  elapsedMs: number;
}

/** One pass at a time per worker (its lease owner is its id); run several workers for parallelism. */
export interface InboxWorker {
  readonly id: string;
  readonly settings: InboxWorkerSettings;
  work(options?: { signal?: AbortSignal; budgetMs?: number }): Promise<WorkSummary>;
}

export function createInboxWorker(deps: InboxWorkerDeps): InboxWorker {
  const { db, clock, logger, settings } = deps;
  const id = deps.newId();
  const context: StoredContext = {
    db,
    handlers: deps.handlers,
    sendersByName: deps.sendersByName ?? sendersByName,
    // A tracer always, `noTracing` by default: the stored traceparent then still reaches the outbox.
    tracer: deps.tracer ?? noTracing,
  };

  const report = (event: ClaimedEvent, outcome: StoredOutcome, summary: Tally, line: ReportLine) =>
    reportApplication({ worker: id, logger, metrics: deps.metrics }, event, outcome, summary, line);

  /** The one-event path: records this event's own failure, or releases it after a database error. */
  async function applyOne(event: ClaimedEvent, summary: Tally, dueBy: Date) {
    const started = performance.now();
    const attempt = event.failures + 1;
    // The retry time is computed before the apply from the attempt it would be, and only used on failure.
    const retryAt = new Date(retryAfterPass(dueBy, clock() + backoffDelayMs(settings.backoff, attempt, deps.random)));
    let result: StoredResult;
    try {
      result = await applyStoredEvent(
        context,
        { provider: event.provider, eventId: event.eventId },
        { from: ['processing'], leaseOwner: id, onFailure: { retryAt, maxAttempts: settings.maxAttempts } },
      );
    } catch (error) {
      // A database error (transient by definition here): no attempt is counted; the row goes back
      // to the queue after a backoff, or, when even that fails, waits for its lease to expire.
      summary.released += 1;
      logger.warn('inbox event released after a database error', {
        worker: id,
        provider: event.provider,
        event_id: event.eventId,
        event_type: event.eventType,
        attempt,
        error: describeError(error),
        duration_ms: elapsedMs(started),
      });
      await releaseClaim(db, id, event, retryAt).catch(() => {});
      return;
    }
    report(event, result.outcome, summary, {
      attempt,
      duration_ms: elapsedMs(started),
      retryAt,
      error: result.lastError,
    });
  }

  /**
   * Claims, applies and completes one batch in one transaction (lockDueBatch), so a batch costs one
   * BEGIN and one COMMIT, and each row is written once, to its final status. When the batch cannot go
   * through (a handler throws, the database errors, two lanes deadlock on a shared row), it rolls
   * back to the savepoint taken after the claim, still holding the row locks, records its lease on
   * the rows and commits that; then each event is applied on its own under the lease (applyOne), so
   * only the event that failed is counted as failed and every other one is applied once. A lone
   * event goes that way at once: it has no commit to share, and alone its failure is recorded
   * without a rollback first. Answers the rows claimed.
   */
  async function takeBatch(
    summary: Tally,
    dueBy: Date,
    pass: { deadlineMs: number; signal?: AbortSignal | undefined },
  ): Promise<number> {
    const lease = takeLease(id, clock(), settings.leaseMs);
    let events: ClaimedEvent[] = [];
    let taken: Taken;
    const started = performance.now();
    try {
      taken = await db.transaction(async (tx): Promise<Taken> => {
        // The savepoint is sent with the claim (one round trip), and taken after it: a rollback to it
        // keeps the claim's row locks.
        const [rows] = await Promise.all([
          lockDueBatch(tx, lease, dueBy, settings.batchSize),
          executePrepared(tx, sql`savepoint batch`),
        ]);
        events = rows.map(claimedEvent);
        // Not started: ending the transaction gives the rows back as they were, uncounted.
        if (rows.length === 0 || !mayStart(lease, clock(), settings.applyTimeoutMs, pass)) return { applied: false };
        let failure: unknown;
        if (rows.length > 1) {
          try {
            return { applied: true, results: await applyLockedRows(context, tx, rows) };
          } catch (error) {
            failure = error;
            await executePrepared(tx, sql`rollback to savepoint batch`);
          }
        }
        await leaseLocked(tx, lease, events);
        return { applied: false, leased: true, failure };
      });
    } catch (error) {
      // The claim itself failed: the pass fails, as any database outage fails it.
      if (events.length === 0) throw error;
      // Nothing committed: the rows are as they were, due at once.
      summary.claimed += events.length;
      summary.released += events.length;
      logger.warn('inbox batch released after a database error', {
        worker: id,
        batch_size: events.length,
        error: describeError(error),
      });
      return events.length;
    }
    summary.claimed += events.length;
    if (taken.applied) {
      const line = { duration_ms: elapsedMs(started), batch_size: events.length };
      for (const event of events) {
        const outcome = taken.results.get(storedKeyString(event.provider, event.eventId))?.outcome ?? 'skipped';
        report(event, outcome, summary, { ...line, attempt: event.failures + 1 });
      }
    } else if (taken.leased === true) {
      if (events.length > 1) {
        logger.info('inbox batch rolled back, applying its events one at a time', {
          worker: id,
          batch_size: events.length,
          error: describeError(taken.failure),
        });
      }
      for (const event of events) await applyOne(event, summary, dueBy);
    } else {
      summary.released += events.length;
    }
    return events.length;
  }

  async function work(options: { signal?: AbortSignal; budgetMs?: number } = {}): Promise<WorkSummary> {
    const startedMs = clock();
    const summary: Tally = {
      claimed: 0,
      completed: 0,
      ignored: 0,
      parked: 0,
      failed: 0,
      deadLettered: 0,
      skipped: 0,
      released: 0,
      deferredMs: 0,
    };
    // Only rows due when the pass began: one rescheduled during it waits for a later pass.
    const dueBy = new Date(startedMs);
    const budgetMs = options.budgetMs ?? settings.budgetMs;
    // Each lane claims a batch and applies it as one transaction, again and again: no lane waits for
    // another's batch, and lanes split the rows (SKIP LOCKED) as separate workers would.
    const lane = (laneIndex: number) =>
      drainBatches({
        nowMs: clock,
        budgetMs,
        signal: options.signal,
        batch: async (deadlineMs) => {
          if (deps.intakeLoad !== undefined) {
            // While the intake stays saturated only the first lane goes ahead, a batch per
            // maxDeferMs: the backlog moves, at the cost of one lane's share of the cores, not four.
            const waitedMs = await deferToIntake(deps.intakeLoad, {
              maxWaitMs: laneIndex === 0 ? Math.min(settings.maxDeferMs, deadlineMs - clock()) : deadlineMs - clock(),
              pollMs: DEFER_POLL_MS,
              signal: options.signal,
            });
            summary.deferredMs += waitedMs;
            if (options.signal?.aborted || clock() >= deadlineMs) {
              return { claimed: 0, limit: settings.batchSize, notStarted: true };
            }
          }
          const claimed = await takeBatch(summary, dueBy, { deadlineMs, signal: options.signal });
          return { claimed, limit: settings.batchSize };
        },
      });
    const lanes = await Promise.all(Array.from({ length: Math.max(1, settings.lanes) }, (_, index) => lane(index)));
    const stopped = lanes.map((progress) => progress.stoppedBy);
    const progress = {
      batches: lanes.reduce((sum, progress) => sum + progress.batches, 0),
      stoppedBy: stopped.includes('aborted') ? 'aborted' : stopped.includes('budget') ? 'budget' : 'drained',
    } as const;
    const result: WorkSummary = { ...summary, ...progress, elapsedMs: clock() - startedMs };
    if (result.claimed > 0) logger.info('inbox worked', { worker: id, ...result });
    return result;
  }

  return { id, settings, work };
}

/**
 * Passes back to back while each claims at least a full batch, or waited for a saturated intake,
 * then returns, for the caller's schedule to wait its interval. Each pass only takes rows due when it
 * began, so under a steady load every pass ends with the rows that arrived while it ran still
 * waiting; a worker that then idled a whole interval would fall behind a load it could carry. A pass
 * that waited for the intake ends as soon as a burst does, having taken little of it (its rows
 * arrived after the pass began): idling the interval then (a second by default) left the whole burst
 * waiting, and a burst of 4,000 events was applied in 4.2 s after being accepted in 3.2. A pass that
 * claimed less than a batch without waiting is keeping up, and the interval only adds latency, not
 * backlog.
 */
export async function workUntilCaughtUp(
  worker: Pick<InboxWorker, 'work'>,
  batchSize: number,
  signal?: AbortSignal,
): Promise<void> {
  while (!signal?.aborted) {
    const { claimed, deferredMs } = await worker.work(signal === undefined ? {} : { signal });
    if (claimed < batchSize && !(deferredMs > 0)) return;
  }
}
