// The relay as a scheduled maintenance step (the Worker's cron): one drain within the step's budget,
// publishing with fetch to OUTBOX_TARGET_URL, or, without one, to the OUTBOX_QUEUE binding when the
// Worker has it (else to the log). Counts only in its report, never ids or payloads.
import type { MaintenanceStep } from '../ops/maintenance.ts';
import { queuePublisher } from './publishers/queues.ts';
import { publisherFor } from './publishers.ts';
import { createRelay, relaySettings } from './relay.ts';

/**
 * A Worker invocation may hold six connections at once and the database client takes up to five:
 * a few publishes in flight keep the rest waiting in the runtime instead of failing.
 */
const SCHEDULED_PUBLISH_CONCURRENCY = 4;

export const outboxDrain: MaintenanceStep = {
  name: 'outbox_drain',
  async run({ config, db, clock, logger, outboxQueue }, budgetMs) {
    const relay = createRelay({
      db,
      publisher:
        config.OUTBOX_TARGET_URL === undefined && outboxQueue !== undefined
          ? queuePublisher(outboxQueue)
          : publisherFor(config.OUTBOX_TARGET_URL, { clock, logger }),
      clock,
      newId: () => `cron-${crypto.randomUUID()}`,
      random: Math.random,
      logger,
      settings: relaySettings(config, { budgetMs, concurrency: SCHEDULED_PUBLISH_CONCURRENCY }),
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
