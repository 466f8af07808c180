// The Cloudflare Queues publisher, the Worker's broker: the cron's drain sends each message's
// contract body (as JSON) through the producer binding (OUTBOX_QUEUE). The publishes a batch starts
// together are sent together, as `sendBatch` calls of at most 100 messages and 256 KB (the Queues
// limits): collected while the current tick runs and dispatched from a microtask, each caller still
// getting its own outcome, as dataloader batches. Queues has no deduplication: consumers deduplicate
// by `deduplication_key` (docs/outbox-brokers.md). Web standards only.

import { errorName } from '../../lib/errors.ts';
import { permanent, retry, untilAborted } from './broker.ts';
import { messageFields, type Publisher, type PublishOutcome } from './publisher.ts';

/** What the publisher uses of a Workers `Queue` binding (typed here so Node's type world compiles it too). */
export interface QueueProducer {
  sendBatch(messages: Iterable<{ body: unknown; contentType?: 'json' }>): Promise<unknown>;
}

/** Cloudflare Queues limits: messages per sendBatch, bytes per sendBatch, bytes per message. */
export const QUEUE_LIMITS = { batchMessages: 100, batchBytes: 256 * 1024, messageBytes: 128 * 1024 } as const;

/** Room left in each message for what Queues adds to the body (its own framing and metadata). */
const MESSAGE_OVERHEAD_BYTES = 1024;

interface Waiting {
  body: ReturnType<typeof messageFields>;
  bytes: number;
  settle: (outcome: PublishOutcome) => void;
}

/** Splits what waits into sendBatch calls within the limits, in the order it was published. */
function chunk(waiting: readonly Waiting[]): Waiting[][] {
  const chunks: Waiting[][] = [];
  let current: Waiting[] = [];
  let bytes = 0;
  for (const entry of waiting) {
    if (current.length === QUEUE_LIMITS.batchMessages || bytes + entry.bytes > QUEUE_LIMITS.batchBytes) {
      chunks.push(current);
      current = [];
      bytes = 0;
    }
    current.push(entry);
    bytes += entry.bytes;
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}

export function queuePublisher(queue: QueueProducer): Publisher {
  const encoder = new TextEncoder();
  let waiting: Waiting[] = [];

  async function send(entries: readonly Waiting[]): Promise<void> {
    let outcome: PublishOutcome;
    try {
      await queue.sendBatch(entries.map((entry) => ({ body: entry.body, contentType: 'json' as const })));
      outcome = { outcome: 'published' };
    } catch (error) {
      // The binding's own words (a rate limit, a queue over its backlog): no credentials live in them.
      const said = error instanceof Error ? error.message.slice(0, 200) : '';
      outcome = retry(`queues: ${said === '' ? errorName(error) : said}`);
    }
    for (const entry of entries) entry.settle(outcome);
  }

  function dispatch(): void {
    const taken = waiting;
    waiting = [];
    for (const entries of chunk(taken)) void send(entries);
  }

  return {
    kind: 'queues',
    pipelined: true,
    publish(message, signal) {
      const body = messageFields(message);
      const bytes = encoder.encode(JSON.stringify(body)).byteLength;
      if (bytes > QUEUE_LIMITS.messageBytes - MESSAGE_OVERHEAD_BYTES) {
        return Promise.resolve(
          permanent(`queues: the message is ${bytes} bytes; a queue message holds at most 128 KB`),
        );
      }
      const outcome = new Promise<PublishOutcome>((settle) => {
        if (waiting.length === 0) queueMicrotask(dispatch);
        waiting.push({ body, bytes, settle });
      });
      return untilAborted(signal, outcome);
    },
  };
}
