// Every piece of background work, in one list, for both runtimes that run it: the Node process runs
// each step on its own timer (schedule.ts, every `intervalMs`), the Worker's cron runs them one after
// another in each invocation (cron.ts). A step declares its name (the `step` field of its log
// lines in both), where it runs, its interval in a process and what it needs (background.ts).
import type { Config } from '../../config.ts';
import { hasPendingMigrations } from '../../db/migrations.ts';
import { purgeByRetention } from '../../inbox/retention.ts';
import { sweepExpiredLeases } from '../../inbox/sweep.ts';
import { workUntilCaughtUp } from '../../inbox/worker.ts';
import { endExpiredPauses } from '../pauses/sender-pauses.ts';
import { type BackgroundStep, StepFailure } from './background.ts';
import { foldCounters } from './counters-fold.ts';
import { bulkRunnerFor, inboxWorkerFor, relayFor } from './drainers.ts';

const SECOND = 1000;
const MINUTE = 60 * SECOND;

/** The budget a run is given: the cron's share, else the process's bound for the step. */
const budgetOf = (step: Pick<BackgroundStep, 'processBudgetMs'>, budgetMs: number | undefined) =>
  budgetMs ?? step.processBudgetMs;

const asyncOnly = (config: Config, intervalMs: number) => (config.PROCESSING_MODE === 'async' ? intervalMs : 0);

/** Fails the run's first line when the origin database is unreachable or behind the code. */
export const databaseReadiness: BackgroundStep = {
  name: 'database_readiness',
  runsIn: 'cron',
  intervalMs: () => 0,
  prepare: ({ db, expectedMigration }) =>
    async function run() {
      if (await hasPendingMigrations(db, expectedMigration)) {
        throw new StepFailure('migrations pending: run `npm run db:migrate` against the origin database');
      }
      return { migrations: 'current' };
    },
};

/** Leases of crashed workers expire into `received` rows first, so the worker step below picks them up. */
export const inboxSweep: BackgroundStep = {
  name: 'inbox_sweep',
  runsIn: 'both',
  intervalMs: (config) => asyncOnly(config, MINUTE),
  processBudgetMs: 10 * SECOND,
  prepare: ({ db, clock }) =>
    async function run({ budgetMs, signal }) {
      const { swept, stoppedBy } = await sweepExpiredLeases(db, {
        nowMs: clock,
        budgetMs: budgetOf(inboxSweep, budgetMs) ?? 0,
        ...(signal === undefined ? {} : { signal }),
      });
      return { swept, stopped_by: stoppedBy };
    },
  // A lease left to expire is a worker that died holding it.
  lineFor: (fields) => (Number(fields.swept) > 0 ? 'warn' : undefined),
};

/**
 * Async mode only (sync mode applies in the request and has no queue): in a process, passes until the
 * queue is worked down, one application per background connection; on the cron, one pass.
 */
export const inboxWork: BackgroundStep = {
  name: 'inbox_work',
  runsIn: 'both',
  intervalMs: (config) => asyncOnly(config, config.WORKER_INTERVAL_MS),
  prepare(parts) {
    if (parts.config.PROCESSING_MODE !== 'async') return async () => ({ skipped: 'sync mode' });
    if (parts.runtime === 'process') {
      const worker = inboxWorkerFor(parts, {
        intakeLoad: parts.intakeLoad,
        settings: { lanes: parts.backgroundLanes },
      });
      return async function run({ signal }) {
        await workUntilCaughtUp(worker, worker.settings.batchSize, signal);
        return undefined;
      };
    }
    return async function run({ budgetMs }) {
      const worker = inboxWorkerFor(parts, { settings: budgetMs === undefined ? {} : { budgetMs } });
      const summary = await worker.work(budgetMs === undefined ? {} : { budgetMs });
      const { claimed, completed, failed, deadLettered, released, stoppedBy } = summary;
      return { claimed, completed, failed, dead_lettered: deadLettered, released, stopped_by: stoppedBy };
    };
  },
};

/**
 * The bulk jobs (replay or retry by filter), batches until the run's budget is spent, deferring to a
 * saturated intake in a process; an unfinished job goes on at the next run. Before the outbox drain,
 * so the messages it retries go out in the same cron run.
 */
export const bulkJobs: BackgroundStep = {
  name: 'bulk_jobs',
  runsIn: 'both',
  intervalMs: () => SECOND,
  processBudgetMs: MINUTE,
  prepare(parts) {
    const runner =
      parts.runtime === 'process'
        ? bulkRunnerFor(parts, { idPrefix: 'jobs', intakeLoad: parts.intakeLoad, metrics: parts.metrics })
        : bulkRunnerFor(parts, { idPrefix: 'cron' });
    return async function run({ budgetMs, signal }) {
      const summary = await runner.run({
        budgetMs: budgetOf(bulkJobs, budgetMs) ?? 0,
        ...(signal === undefined ? {} : { signal }),
      });
      const { jobs, batches, items, failed, finished, stoppedBy } = summary;
      return { jobs, batches, items, failed, finished, stopped_by: stoppedBy };
    };
  },
};

/**
 * A Worker invocation may hold six connections at once and the database client takes up to five:
 * a few publishes in flight keep the rest waiting in the runtime instead of failing.
 */
const CRON_PUBLISH_CONCURRENCY = 4;

/** Every destination, each through its own publisher (Node's or the Worker's, as the runtime made them). */
export const outboxDrain: BackgroundStep = {
  name: 'outbox_drain',
  runsIn: 'both',
  intervalMs: (config) => config.RELAY_INTERVAL_MS,
  // A pass that spent its budget left messages due (a backlog, or a paced destination sending at its
  // rate): the next begins at once, so a paced target is not left idle for an interval every budget.
  againAtOnce: (fields) => fields.stopped_by === 'budget',
  prepare(parts) {
    const relay = relayFor(
      parts,
      parts.publishers,
      parts.runtime === 'process'
        ? { idPrefix: 'relay', intakeLoad: parts.intakeLoad }
        : { idPrefix: 'cron', settings: { concurrency: CRON_PUBLISH_CONCURRENCY } },
    );
    return async function run({ budgetMs, signal }) {
      const summary = await relay.drain({
        ...(budgetMs === undefined ? {} : { budgetMs }),
        ...(signal === undefined ? {} : { signal }),
      });
      const { claimed, published, retried, dead, released, deferredMs, stoppedBy } = summary;
      return { claimed, published, retried, dead, released, deferred_ms: deferredMs, stopped_by: stoppedBy };
    };
  },
};

export const retentionPurge: BackgroundStep = {
  name: 'retention_purge',
  runsIn: 'both',
  intervalMs: () => 60 * MINUTE,
  processBudgetMs: MINUTE,
  prepare: ({ config, db, clock }) =>
    async function run({ budgetMs, signal }) {
      const summary = await purgeByRetention(db, config, {
        nowMs: clock,
        budgetMs: budgetOf(retentionPurge, budgetMs) ?? 0,
        ...(signal === undefined ? {} : { signal }),
      });
      return {
        payloads_nulled: summary.payloadsNulled,
        rows_deleted: summary.rowsDeleted,
        rejection_counts_deleted: summary.rejectionCountsDeleted,
        deliveries_deleted: summary.deliveriesDeleted,
        stopped_by: summary.stoppedBy,
      };
    },
  // Hourly: each run's line is the record of what retention removed.
  lineFor: () => 'info',
};

/** The counters of every connection merged into one row per bucket (src/ops/reads/event-counts.ts). */
export const countersFold: BackgroundStep = {
  name: 'counters_fold',
  runsIn: 'both',
  intervalMs: () => MINUTE,
  processBudgetMs: 10 * SECOND,
  prepare: ({ db, clock }) =>
    async function run({ budgetMs, signal }) {
      const { merged, stoppedBy } = await foldCounters(db, {
        nowMs: clock,
        budgetMs: budgetOf(countersFold, budgetMs) ?? 0,
        ...(signal === undefined ? {} : { signal }),
      });
      return { merged, stopped_by: stoppedBy };
    },
};

/** Pauses past their end: the intake ignores them already; this deletes them and audits the resume. */
export const pauseExpiry: BackgroundStep = {
  name: 'pause_expiry',
  runsIn: 'both',
  intervalMs: () => MINUTE,
  prepare: ({ db, clock }) =>
    async function run() {
      const { resumed } = await endExpiredPauses(db, clock());
      return { resumed: resumed.length };
    },
  lineFor: (fields) => (Number(fields.resumed) > 0 ? 'info' : undefined),
};

/** What requests refused, written every second off the request pool (a flood never takes a delivery's connection). */
export const refusedDeliveries: BackgroundStep = {
  name: 'refused_deliveries',
  runsIn: 'process',
  intervalMs: () => SECOND,
  prepare: ({ spooled }) =>
    async function run() {
      await spooled?.flushRefusals();
      return undefined;
    },
};

/** The delivery log's records, within the bound the docs promise (`DELIVERY_LOG_FLUSH_MS`; 0 turns it off). */
export const deliveryLog: BackgroundStep = {
  name: 'delivery_log',
  runsIn: 'process',
  intervalMs: (config) => config.DELIVERY_LOG_FLUSH_MS,
  prepare: ({ spooled }) =>
    async function run() {
      await spooled?.flushDeliveryLog();
      return undefined;
    },
};

/**
 * All background work; adding a step is one line here. The cron runs its steps in this order: the
 * sweep before the worker, the worker and the bulk jobs before the outbox drain, so what they
 * enqueue goes out in the same run.
 */
export const backgroundSteps: readonly BackgroundStep[] = [
  databaseReadiness,
  inboxSweep,
  inboxWork,
  bulkJobs,
  outboxDrain,
  retentionPurge,
  countersFold,
  pauseExpiry,
  refusedDeliveries,
  deliveryLog,
];

/** The Worker's cron runs these. */
export const cronSteps = backgroundSteps.filter((step) => step.runsIn !== 'process');

/** A Node process schedules these. */
export const processSteps = backgroundSteps.filter((step) => step.runsIn !== 'cron');
