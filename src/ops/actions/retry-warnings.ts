// What a retry of dead outbox messages will meet, said before the operator confirms it: a message set
// pending again goes nowhere while its destination's circuit is open (or half-open, its one probe out)
// or an operator has paused it; it waits, pending, until the destination publishes again. A bulk
// retry's count (the admin API's dry run, the dashboard's confirmation, `jobs retry`) carries one
// warning per such destination among the rows it would take.
import type { Executor } from '../../db/client.ts';
import type { DestinationRouting } from '../../outbox/destinations.ts';
import { listDestinations } from '../reads/destinations-view.ts';
import { countOutboxExactly, type OutboxSelection } from '../reads/outbox-view.ts';

export interface RetryWarning {
  destination: string;
  state: 'open' | 'half_open' | 'paused';
  /** How many of the rows the retry would take go to this destination. */
  count: number;
  /** One sentence for a confirmation: what will happen to them, and the destination's reason. */
  text: string;
}

/**
 * One warning per configured destination that is not healthy and holds rows the selection matches
 * (the selection's own destination only, when it names one): an exact count each, read only for the
 * destinations not healthy, of which there are few.
 */
export async function retryWarnings(
  db: Executor,
  routing: DestinationRouting,
  selection: OutboxSelection,
  nowMs: number,
): Promise<RetryWarning[]> {
  const destinations = await listDestinations(db, routing, nowMs, { rate: false });
  const warnings: RetryWarning[] = [];
  for (const destination of destinations) {
    if (destination.state === 'healthy' || destination.waiting === null) continue;
    if (selection.destination !== undefined && selection.destination !== destination.name) continue;
    const count = await countOutboxExactly(db, { ...selection, destination: destination.name });
    if (count === 0) continue;
    const until = destination.state === 'paused' ? 'it is resumed' : 'its circuit closes';
    const subject = destination.state === 'paused' ? 'is paused' : 'has its circuit open';
    warnings.push({
      destination: destination.name,
      state: destination.state,
      count,
      text:
        `destination ${destination.name} ${subject}: ${count} of these message${count === 1 ? '' : 's'} will go ` +
        `back to waiting, pending, until ${until} (${destination.waiting})`,
    });
  }
  return warnings;
}
