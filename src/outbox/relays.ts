// Every destination's relay, drained side by side as one: each destination has its own publisher,
// its own claim (its rows only), its own outage backoff, rate limit, concurrency and circuit breaker
// (built from its Destination's settings in ops/maintenance/drainers.ts), so a destination that is slow or out of
// reach holds back nothing but its own messages.
import type { Destination, DestinationRouting } from './destinations.ts';
import type { Publisher } from './publishers/publisher.ts';
import type { DrainSummary, Relay } from './relay.ts';

/** A destination with the publisher its relay publishes through, made once at start-up. */
export interface DestinationPublisher {
  destination: Destination;
  publisher: Publisher;
}

/** Throws the first ConfigError `make` throws: every destination's target is checked before anything starts. */
export function destinationPublishers(
  routing: DestinationRouting,
  make: (destination: Destination) => Publisher,
): DestinationPublisher[] {
  return routing.destinations.map((destination) => ({ destination, publisher: make(destination) }));
}

/** Shutdown: every publisher closed, one failing to close stopping none of the others. */
export async function closePublishers(publishers: readonly DestinationPublisher[]): Promise<void> {
  await Promise.allSettled(publishers.map(({ publisher }) => publisher.close?.()));
}

/**
 * How a pass over several destinations ended: `unavailable` only when every destination was out of
 * reach; otherwise the first reason any reachable destination stopped for other than being drained
 * (budget, aborted), else `drained`.
 */
function stoppedByAll(summaries: readonly DrainSummary[]): DrainSummary['stoppedBy'] {
  if (summaries.every((summary) => summary.stoppedBy === 'unavailable')) return 'unavailable';
  return (
    summaries.find((summary) => summary.stoppedBy !== 'unavailable' && summary.stoppedBy !== 'drained')?.stoppedBy ??
    'drained'
  );
}

/** One relay over `relays` (one per destination), each draining its destination at the same time. */
export function relayOfEvery(id: string, relays: readonly Relay[]): Relay {
  if (relays.length === 1 && relays[0] !== undefined) return relays[0];
  return {
    id,
    destination: '*',
    async drain(options) {
      const summaries = await Promise.all(relays.map((relay) => relay.drain(options)));
      const sum = (
        field: 'claimed' | 'published' | 'retried' | 'dead' | 'released' | 'unavailable' | 'batches' | 'deferredMs',
      ) => summaries.reduce((total, summary) => total + summary[field], 0);
      return {
        claimed: sum('claimed'),
        published: sum('published'),
        retried: sum('retried'),
        dead: sum('dead'),
        released: sum('released'),
        unavailable: sum('unavailable'),
        batches: sum('batches'),
        deferredMs: sum('deferredMs'),
        stoppedBy: stoppedByAll(summaries),
        elapsedMs: Math.max(0, ...summaries.map((summary) => summary.elapsedMs)),
      };
    },
  };
}
