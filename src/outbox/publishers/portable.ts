// The Worker's publisher for each destination: an http(s) target, a Cloudflare Queues producer
// binding (`queue:BINDING`), or for the `default` destination without OUTBOX_TARGET_URL the
// OUTBOX_QUEUE binding when wrangler.toml has one, else the log. Broker URLs need the Node relay's
// clients (node.ts) and are refused with the fix. Web standards only.
import { ConfigError } from '../../config.ts';
import type { Logger } from '../../lib/logger.ts';
import { type DestinationRouting, queueBindingOf, targetLabel } from '../destinations.ts';
import { type DestinationPublisher, destinationPublishers } from '../relays.ts';
import { publisherFor } from './publisher.ts';
import { type QueueProducer, queuePublisher } from './queues.ts';

/** The binding the `default` destination publishes to when no OUTBOX_TARGET_URL is set. */
export const DEFAULT_QUEUE_BINDING = 'OUTBOX_QUEUE';

export interface PortablePublisherDeps {
  clock: () => number;
  logger: Logger;
  /** The Worker's Queues producer bindings, by binding name. */
  queues: ReadonlyMap<string, QueueProducer>;
}

/** Throws a ConfigError naming the first destination that cannot be published to from here. */
export function portableDestinationPublishers(
  routing: DestinationRouting,
  deps: PortablePublisherDeps,
): DestinationPublisher[] {
  return destinationPublishers(routing, (destination) => {
    const label = targetLabel(destination.name);
    if (destination.url === undefined) {
      const queue = deps.queues.get(DEFAULT_QUEUE_BINDING);
      return queue === undefined ? publisherFor(undefined, deps) : queuePublisher(queue);
    }
    const binding = queueBindingOf(destination.url);
    if (binding === undefined) return publisherFor(destination.url, deps, label);
    const queue = deps.queues.get(binding);
    if (queue === undefined) {
      throw new ConfigError([
        `${label}: no Queues producer binding named ${binding} (wrangler.toml [[queues.producers]])`,
      ]);
    }
    return queuePublisher(queue);
  });
}

/** The env's Queues producer bindings: every binding that can send a batch. */
export function queueBindings(bindings: Readonly<Record<string, unknown>>): Map<string, QueueProducer> {
  const queues = new Map<string, QueueProducer>();
  for (const [name, value] of Object.entries(bindings)) {
    if (typeof value === 'object' && value !== null && 'sendBatch' in value) queues.set(name, value as QueueProducer);
  }
  return queues;
}
