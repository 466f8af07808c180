// The scheduled maintenance steps (the Worker's cron; `runMaintenance` runs them): readiness, the
// lease sweep, one inbox worker pass, a slice of the bulk jobs, one outbox drain, the retention purge,
// the counters' fold and the end of sender pauses that reached their end. Each reports counts
// only, never ids, payloads or messages from the database.
import { hasPendingMigrations } from '../db/migrations.ts';
import { purgeByRetention } from '../inbox/retention.ts';
import { sweepExpiredLeases } from '../inbox/sweep.ts';
import { configuredRouting } from '../outbox/destinations.ts';
import { portableDestinationPublishers } from '../outbox/publishers/portable.ts';
import { bulkRunnerFor, type DrainerParts, relayFor, workerFor } from './drainers.ts';
import { foldCounters } from './event-counts.ts';
import { type MaintenanceDeps, type MaintenanceStep, StepFailure } from './maintenance.ts';
import { endExpiredPauses } from './sender-pauses.ts';

/** Fails the run's first line when the origin database is unreachable or behind the code. */
export const databaseReadiness: MaintenanceStep = {
  name: 'database_readiness',
  async run({ db, expectedMigration }) {
    if (await hasPendingMigrations(db, expectedMigration)) {
      throw new StepFailure('migrations pending: run `npm run db:migrate` against the origin database');
    }
    return { migrations: 'current' };
  },
};

/** Leases of crashed workers expire into `received` rows first, so the worker step below picks them up. */
export const inboxSweep: MaintenanceStep = {
  name: 'inbox_sweep',
  async run({ db, clock }, budgetMs) {
    const { swept, stoppedBy } = await sweepExpiredLeases(db, { nowMs: clock, budgetMs });
    return { swept, stopped_by: stoppedBy };
  },
};

/** A cron run's ids are UUIDs: its isolate shares no counter with the others. */
const drainerParts = (deps: MaintenanceDeps): DrainerParts => ({
  ...deps,
  newId: () => crypto.randomUUID(),
  random: Math.random,
});

/** Async mode only: one worker pass per cron run (sync mode applies in the request and has no queue). */
export const inboxWork: MaintenanceStep = {
  name: 'inbox_work',
  async run(deps, budgetMs) {
    if (deps.config.PROCESSING_MODE !== 'async') return { skipped: 'sync mode' };
    const worker = workerFor(drainerParts(deps), { settings: { budgetMs } });
    const { claimed, completed, failed, deadLettered, released, stoppedBy } = await worker.work({ budgetMs });
    return { claimed, completed, failed, dead_lettered: deadLettered, released, stopped_by: stoppedBy };
  },
};

/**
 * A slice of the bulk jobs (replay or retry by filter) per cron run: batches until its share of the
 * run is spent; an unfinished job goes on at the next run. Before the outbox drain, so the messages
 * it retries go out in the same run.
 */
export const bulkJobsSlice: MaintenanceStep = {
  name: 'bulk_jobs',
  async run(deps, budgetMs) {
    const runner = bulkRunnerFor(drainerParts(deps), { idPrefix: 'cron' });
    const { jobs, batches, items, failed, finished, stoppedBy } = await runner.run({ budgetMs });
    return { jobs, batches, items, failed, finished, stopped_by: stoppedBy };
  },
};

export const retentionPurge: MaintenanceStep = {
  name: 'retention_purge',
  async run({ config, db, clock }, budgetMs) {
    const summary = await purgeByRetention(db, config, { nowMs: clock, budgetMs });
    return {
      payloads_nulled: summary.payloadsNulled,
      rows_deleted: summary.rowsDeleted,
      rejection_counts_deleted: summary.rejectionCountsDeleted,
      deliveries_deleted: summary.deliveriesDeleted,
      stopped_by: summary.stoppedBy,
    };
  },
};

/** The counters of every connection merged into one row per bucket (src/ops/event-counts.ts). */
export const countersFold: MaintenanceStep = {
  name: 'counters_fold',
  async run({ db, clock }, budgetMs) {
    const { merged, stoppedBy } = await foldCounters(db, { nowMs: clock, budgetMs });
    return { merged, stopped_by: stoppedBy };
  },
};

/** Pauses past their end: the intake ignores them already; this deletes them and audits the resume. */
export const pauseExpiry: MaintenanceStep = {
  name: 'pause_expiry',
  async run({ db, clock }) {
    const { resumed } = await endExpiredPauses(db, clock());
    return { resumed: resumed.length };
  },
};

/**
 * A Worker invocation may hold six connections at once and the database client takes up to five:
 * a few publishes in flight keep the rest waiting in the runtime instead of failing.
 */
const SCHEDULED_PUBLISH_CONCURRENCY = 4;

export const outboxDrain: MaintenanceStep = {
  name: 'outbox_drain',
  async run(deps, budgetMs) {
    const { config, clock, logger } = deps;
    // Every destination drains in each run, each through its own publisher (outbox/publishers/portable.ts).
    const publishers = portableDestinationPublishers(configuredRouting(config), {
      clock,
      logger,
      queues: deps.outboxQueues ?? new Map(),
    });
    const relay = relayFor(drainerParts(deps), publishers, {
      idPrefix: 'cron',
      settings: { budgetMs, concurrency: SCHEDULED_PUBLISH_CONCURRENCY },
    });
    const summary = await relay.drain();
    return {
      claimed: summary.claimed,
      published: summary.published,
      retried: summary.retried,
      dead: summary.dead,
      released: summary.released,
      stopped_by: summary.stoppedBy,
    };
  },
};

/**
 * Every scheduled run performs these, in this order; adding a step is one line here. The inbox worker
 * runs before the outbox drain, so the messages it enqueues go out in the same run.
 */
export const maintenanceSteps: readonly MaintenanceStep[] = [
  databaseReadiness,
  inboxSweep,
  inboxWork,
  bulkJobsSlice,
  outboxDrain,
  retentionPurge,
  countersFold,
  pauseExpiry,
];
