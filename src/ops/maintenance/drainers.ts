// The outbox relay, the async inbox worker and the bulk job runner, wired the one way every runner builds them (the Node
// process's schedules, the cron's maintenance steps, the CLI's `drain` and `work`): settings from the
// configuration with the runner's own overrides, the service's handlers, and lease owners that say
// what holds a row. A runner says only what differs: its parts, its publisher, its overrides.
import type { Config } from '../../config.ts';
import type { Database } from '../../db/client.ts';
import { configuredHandlers } from '../../domain/handlers.ts';
import { deferToIntake, type IntakeLoad } from '../../inbox/intake-load.ts';
import {
  createInboxWorker,
  type InboxWorker,
  type InboxWorkerSettings,
  inboxWorkerSettings,
} from '../../inbox/worker.ts';
import type { RandomSource } from '../../lib/backoff.ts';
import type { Clock } from '../../lib/clock.ts';
import type { Logger } from '../../lib/logger.ts';
import type { Metrics } from '../../lib/metrics.ts';
import type { Tracer } from '../../lib/tracing.ts';
import { configuredRouting, type DestinationSettings } from '../../outbox/destinations.ts';
import { createRelay, type Relay, type RelayIsolation, type RelaySettings, relaySettings } from '../../outbox/relay.ts';
import { type DestinationPublisher, relayOfEvery } from '../../outbox/relays.ts';
import { type BulkRunner, type BulkRunnerSettings, createBulkRunner } from '../jobs/bulk-runner.ts';

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
  metrics?: Pick<Metrics, 'countPublish' | 'countEvent'>;
  /** Spans for publishes and applications, where the runner exports them. */
  tracer?: Tracer | undefined;
}

/**
 * A relay over every destination, each published through its own publisher by a relay of its own;
 * their lease owners are `<idPrefix>-<id>` (which runner holds a message), or bare ids without a
 * prefix. With one destination (the usual case) it is that destination's relay.
 */
export function relayFor(
  parts: DrainerParts,
  publishers: readonly DestinationPublisher[],
  options: { idPrefix?: string; settings?: Partial<RelaySettings>; intakeLoad?: IntakeLoad | undefined } = {},
): Relay {
  const { idPrefix, intakeLoad } = options;
  const newId = idPrefix === undefined ? parts.newId : () => `${idPrefix}-${parts.newId()}`;
  const shared = relaySettings(parts.config, options.settings);
  // The runner's bound on publishes in flight holds for all its destinations together (a Worker's
  // connections are few), split evenly unless a destination sets its own `concurrency`.
  const evenSplit = Math.max(1, Math.floor(shared.concurrency / publishers.length));
  const relays = publishers.map(({ destination, publisher }) =>
    createRelay({
      db: parts.db,
      destination: destination.name,
      publisher,
      clock: parts.clock,
      newId,
      random: parts.random,
      logger: parts.logger,
      metrics: parts.metrics,
      ...(parts.tracer === undefined ? {} : { tracer: parts.tracer }),
      settings: { ...shared, concurrency: destination.settings.concurrency ?? evenSplit },
      isolation: isolationOf(destination.settings),
      ...(intakeLoad === undefined ? {} : { yieldToIntake: relayDeferral(intakeLoad, parts.clock) }),
    }),
  );
  return relayOfEvery(newId(), relays);
}

/**
 * Longest a relay's batch waits for a saturated intake before it is claimed anyway. Under sustained
 * saturation each destination still sends a batch (500 messages) a second; a burst the intake carries
 * is answered first and published right after it. The messages wait in the outbox, committed: holding
 * the relay back delays them and loses nothing.
 */
export const RELAY_MAX_DEFER_MS = 1000;
const RELAY_DEFER_POLL_MS = 10;

/** The relay's hold-back: waits while the intake stays saturated, up to RELAY_MAX_DEFER_MS a batch. */
function relayDeferral(load: IntakeLoad, clock: Clock) {
  return (deadlineMs: number, signal: AbortSignal | undefined) =>
    deferToIntake(load, {
      maxWaitMs: Math.min(RELAY_MAX_DEFER_MS, deadlineMs - clock()),
      pollMs: RELAY_DEFER_POLL_MS,
      signal,
    });
}

/** A destination's settings as its relay takes them. */
export function isolationOf(settings: DestinationSettings): RelayIsolation {
  return {
    ratePerSecond: settings.rate_per_second,
    breaker: { failures: settings.breaker_failures, cooloffMs: settings.breaker_cooloff_seconds * 1000 },
  };
}

/** An inbox worker applying with the service's handlers; its lease owner is `worker-<id>`. */
export function inboxWorkerFor(
  parts: DrainerParts,
  options: { intakeLoad?: IntakeLoad | undefined; settings?: Partial<InboxWorkerSettings> } = {},
): InboxWorker {
  return createInboxWorker({
    db: parts.db,
    handlers: configuredHandlers(parts.config, parts.logger),
    clock: parts.clock,
    newId: () => `worker-${parts.newId()}`,
    random: parts.random,
    logger: parts.logger,
    metrics: parts.metrics,
    intakeLoad: options.intakeLoad,
    tracer: parts.tracer,
    settings: inboxWorkerSettings(parts.config, options.settings),
  });
}

/** A bulk job runner applying with the service's handlers; its lease owner is `<idPrefix>-<id>` (`jobs-<id>` by default). */
export function bulkRunnerFor(
  parts: Omit<DrainerParts, 'metrics' | 'random'>,
  options: {
    idPrefix?: string;
    intakeLoad?: IntakeLoad | undefined;
    metrics?: Pick<Metrics, 'countReplay' | 'countRetry'> | undefined;
    settings?: Partial<BulkRunnerSettings>;
  } = {},
): BulkRunner {
  return createBulkRunner({
    db: parts.db,
    handlers: configuredHandlers(parts.config, parts.logger),
    routing: configuredRouting(parts.config),
    clock: parts.clock,
    logger: parts.logger,
    owner: `${options.idPrefix ?? 'jobs'}-${parts.newId()}`,
    metrics: options.metrics,
    intakeLoad: options.intakeLoad,
    ...(options.settings === undefined ? {} : { settings: options.settings }),
  });
}
