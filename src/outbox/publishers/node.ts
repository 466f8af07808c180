// The Node relay's publisher, chosen by OUTBOX_TARGET_URL's scheme: the log, HTTP over undici, NATS
// JetStream, RabbitMQ or Redis Streams. The broker clients are Node libraries, so only the Node
// entry and the CLI import this module; the Worker keeps publisherFor (HTTP) or its queue binding.
import { ConfigError } from '../../config.ts';
import type { Logger } from '../../lib/logger.ts';
import { type DestinationRouting, queueBindingOf, targetLabel } from '../destinations.ts';
import { type DestinationPublisher, destinationPublishers } from '../relays.ts';
import { parseOutboxTarget } from '../target.ts';
import { undiciPost } from '../undici-post.ts';
import { amqpPublisher } from './amqp.ts';
import { natsPublisher } from './nats.ts';
import { httpPublisher, logPublisher, type Publisher } from './publisher.ts';
import { redisPublisher } from './redis.ts';

export interface NodePublisherDeps {
  clock: () => number;
  logger: Logger;
  /** OUTBOX_TIMEOUT_MS: a broker connection attempt is bounded like one publish. */
  timeoutMs: number;
}

/**
 * Throws a ConfigError naming `label` (OUTBOX_TARGET_URL, or a destination's url) when its form is
 * wrong; connects on first publish.
 */
export function nodePublisherFor(
  targetUrl: string | undefined,
  deps: NodePublisherDeps,
  label = 'OUTBOX_TARGET_URL',
): Publisher {
  if (targetUrl === undefined) return logPublisher(deps.logger);
  if (queueBindingOf(targetUrl) !== undefined) {
    throw new ConfigError([
      `${label}: queue: targets are Workers Queues bindings; the Node relay cannot publish to one`,
    ]);
  }
  const target = parseOutboxTarget(targetUrl, label);
  const connectTimeoutMs = deps.timeoutMs;
  switch (target.kind) {
    case 'http':
      return httpPublisher({ url: target.url, clock: deps.clock, post: undiciPost });
    case 'nats':
      return natsPublisher({ target, connectTimeoutMs });
    case 'amqp':
      return amqpPublisher({ target, connectTimeoutMs });
    case 'redis':
      return redisPublisher({ target, connectTimeoutMs });
  }
}

/** A publisher per configured destination (destinations.ts); throws a ConfigError naming the first bad one. */
export function nodeDestinationPublishers(
  routing: DestinationRouting,
  deps: NodePublisherDeps,
): DestinationPublisher[] {
  return destinationPublishers(routing, (destination) =>
    nodePublisherFor(destination.url, deps, targetLabel(destination.name)),
  );
}
