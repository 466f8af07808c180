// The outbox relay, the async inbox worker and the bulk job runner, wired the one way every runner builds them (the Node
// process's schedules, the cron's maintenance steps, the CLI's `drain` and `work`): settings from the
// configuration with the runner's own overrides, the service's handlers, and lease owners that say
// what holds a row. A runner says only what differs: its parts, its publisher, its overrides.
import type { Config } from '../config.ts';
import type { Database } from '../db/client.ts';
import { defaultHandlers } from '../domain/handlers.ts';
import type { IntakeLoad } from '../inbox/intake-load.ts';
import { createWorker, type InboxWorker, type WorkerSettings, workerSettings } from '../inbox/worker.ts';
import type { RandomSource } from '../lib/backoff.ts';
import type { Clock } from '../lib/clock.ts';
import type { Logger } from '../lib/logger.ts';
import type { Metrics } from '../lib/metrics.ts';
import type { Tracer } from '../lib/tracing.ts';
import { createRelay, type Relay, type RelayDeps, type RelaySettings, relaySettings } from '../outbox/relay.ts';
import { type BulkRunner, type BulkRunnerSettings, createBulkRunner } from './bulk-runner.ts';

/** What a runner gives the relay and the worker it runs. */
export interface DrainerParts {
  config: Config;
  db: Database;
  clock: Clock;
  logger: Logger;
  /** Makes the unique part of a lease owner's id. */
  newId: () => string;
  random: RandomSource;
  /** Counts publishes and applications, where the runner exports counters. */
  metrics?: Pick<Metrics, 'countOutbox' | 'countEvent'>;
  /** Spans for publishes and applications, where the runner exports them. */
  tracer?: Tracer | undefined;
}

/**
 * A relay publishing through `publisher`; its lease owner is `<idPrefix>-<id>` (which runner holds a
 * message), or the bare id without a prefix.
 */
export function relayFor(
  parts: DrainerParts,
  publisher: RelayDeps['publisher'],
  options: { idPrefix?: string; settings?: Partial<RelaySettings> } = {},
): Relay {
  const { idPrefix } = options;
  return createRelay({
    db: parts.db,
    publisher,
    clock: parts.clock,
    newId: idPrefix === undefined ? parts.newId : () => `${idPrefix}-${parts.newId()}`,
    random: parts.random,
    logger: parts.logger,
    metrics: parts.metrics,
    ...(parts.tracer === undefined ? {} : { tracer: parts.tracer }),
    settings: relaySettings(parts.config, options.settings),
  });
}

/** An inbox worker applying with the service's handlers; its lease owner is `worker-<id>`. */
export function workerFor(
  parts: DrainerParts,
  options: { intakeLoad?: IntakeLoad | undefined; settings?: Partial<WorkerSettings> } = {},
): InboxWorker {
  return createWorker({
    db: parts.db,
    handlers: defaultHandlers,
    clock: parts.clock,
    newId: () => `worker-${parts.newId()}`,
    random: parts.random,
    logger: parts.logger,
    metrics: parts.metrics,
    intakeLoad: options.intakeLoad,
    tracer: parts.tracer,
    settings: workerSettings(parts.config, options.settings),
  });
}

/** A bulk job runner applying with the service's handlers; its lease owner is `<idPrefix>-<id>` (`jobs-<id>` by default). */
export function bulkRunnerFor(
  parts: Omit<DrainerParts, 'metrics' | 'config' | 'random'>,
  options: {
    idPrefix?: string;
    intakeLoad?: IntakeLoad | undefined;
    metrics?: Pick<Metrics, 'countReplay' | 'countRetry'> | undefined;
    settings?: Partial<BulkRunnerSettings>;
  } = {},
): BulkRunner {
  return createBulkRunner({
    db: parts.db,
    handlers: defaultHandlers,
    clock: parts.clock,
    logger: parts.logger,
    owner: `${options.idPrefix ?? 'jobs'}-${parts.newId()}`,
    metrics: options.metrics,
    intakeLoad: options.intakeLoad,
    ...(options.settings === undefined ? {} : { settings: options.settings }),
  });
}
