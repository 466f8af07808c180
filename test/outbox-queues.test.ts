// The Cloudflare Queues publisher and the Worker's choice of publisher per destination, in process,
// against a producer binding of the test's own. test/worker/outbox-queue.test.ts and
// outbox-destinations.test.ts run them under workerd with a real binding, where no mutant of these
// modules is active, so this file is what pins their rules (batching within the Queues limits, the
// outcomes, which binding each destination gets).
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../src/config.ts';
import { createLogger } from '../src/lib/logger.ts';
import { DEFAULT_SETTINGS, parseDestinations, routingOf } from '../src/outbox/destinations.ts';
import {
  DEFAULT_QUEUE_BINDING,
  portableDestinationPublishers,
  queueBindings,
} from '../src/outbox/publishers/portable.ts';
import type { OutboxMessage } from '../src/outbox/publishers/publisher.ts';
import { QUEUE_LIMITS, type QueueProducer, queuePublisher } from '../src/outbox/publishers/queues.ts';

type Sent = Array<{ body: unknown; contentType?: 'json' }>;

/** A producer binding that records each sendBatch call, failing with `fail` when it is set. */
function producer(fail?: () => unknown): QueueProducer & { batches: Sent[] } {
  const batches: Sent[] = [];
  return {
    batches,
    async sendBatch(messages) {
      batches.push([...messages]);
      if (fail !== undefined) throw fail();
    },
  };
}

let sequence = 0;
function message(payloadBytes = 10): OutboxMessage {
  sequence += 1;
  return {
    id: `00000000-0000-7000-8000-${String(sequence).padStart(12, '0')}`,
    topic: 'subscription.changed',
    deduplicationKey: `acme:evt_${sequence}:subscription.changed`,
    transportKey: `k${sequence}`,
    payload: { filler: 'x'.repeat(payloadBytes) },
    createdAt: new Date(Date.UTC(2026, 0, 1, 0, 0, sequence % 60)),
  };
}

const live = () => new AbortController().signal;
const bodyBytes = (m: OutboxMessage) =>
  new TextEncoder().encode(
    JSON.stringify({
      id: m.id,
      topic: m.topic,
      deduplication_key: m.deduplicationKey,
      payload: m.payload,
      created_at: m.createdAt.toISOString(),
    }),
  ).byteLength;

describe('the Queues publisher', () => {
  it('sends the publishes of one tick as one batch of contract bodies, in order, each published', async () => {
    const queue = producer();
    const publisher = queuePublisher(queue);
    expect(publisher.kind).toBe('queues');
    expect(publisher.pipelined).toBe(true);
    const messages = [message(), message(), message()];
    const outcomes = await Promise.all(messages.map((m) => publisher.publish(m, live())));
    expect(outcomes).toEqual(messages.map(() => ({ outcome: 'published' })));
    expect(queue.batches).toHaveLength(1);
    expect(queue.batches[0]).toEqual(
      messages.map((m) => ({
        body: {
          id: m.id,
          topic: m.topic,
          deduplication_key: m.deduplicationKey,
          payload: m.payload,
          created_at: m.createdAt.toISOString(),
        },
        contentType: 'json',
      })),
    );
    // A publish in a later tick is a batch of its own.
    await publisher.publish(message(), live());
    expect(queue.batches.map((batch) => batch.length)).toEqual([3, 1]);
  });

  it(`splits a tick's publishes at ${QUEUE_LIMITS.batchMessages} messages a batch`, async () => {
    const queue = producer();
    const publisher = queuePublisher(queue);
    const messages = Array.from({ length: 2 * QUEUE_LIMITS.batchMessages + 1 }, () => message());
    await Promise.all(messages.map((m) => publisher.publish(m, live())));
    expect(queue.batches.map((batch) => batch.length)).toEqual([100, 100, 1]);
    expect(queue.batches.flat().map((sent) => (sent.body as { id: string }).id)).toEqual(messages.map((m) => m.id));
  });

  it('splits before a message that would take a batch past its bytes, and keeps one that fills it exactly', async () => {
    const queue = producer();
    const publisher = queuePublisher(queue);
    // Three messages of a little over a quarter of the batch's bytes, and a fourth that fills it to
    // the byte; a fifth, however small, starts another.
    const probe = message(0);
    const payloadBytes = QUEUE_LIMITS.batchBytes / 4 + 1000 - bodyBytes(probe);
    const fill = [message(payloadBytes), message(payloadBytes), message(payloadBytes)];
    const sizes = fill.map(bodyBytes);
    const last = message(QUEUE_LIMITS.batchBytes - sizes.reduce((a, b) => a + b, 0) - bodyBytes(probe));
    const over = message(0);
    expect([...sizes, bodyBytes(last)].reduce((a, b) => a + b, 0)).toBe(QUEUE_LIMITS.batchBytes);
    await Promise.all([...fill, last, over].map((m) => publisher.publish(m, live())));
    expect(queue.batches.map((batch) => batch.length)).toEqual([4, 1]);
  });

  it('refuses a message too large for a queue as permanent, and takes one at the limit', async () => {
    const queue = producer();
    const publisher = queuePublisher(queue);
    const limit = QUEUE_LIMITS.messageBytes - 1024;
    const atLimit = message(0);
    const fitting = message(limit - bodyBytes(atLimit));
    expect(bodyBytes(fitting)).toBe(limit);
    expect(await publisher.publish(fitting, live())).toEqual({ outcome: 'published' });
    const tooLarge = message(limit - bodyBytes(atLimit) + 1);
    expect(await publisher.publish(tooLarge, live())).toEqual({
      outcome: 'permanent',
      error: `queues: the message is ${limit + 1} bytes; a queue message holds at most 128 KB`,
    });
    expect(queue.batches).toHaveLength(1);
  });

  it('answers a failed sendBatch as a retry for each message of that batch, in the binding’s words', async () => {
    const failing = queuePublisher(producer(() => new Error(`queue over its backlog ${'!'.repeat(300)}`)));
    const outcomes = await Promise.all([message(), message()].map((m) => failing.publish(m, live())));
    const words = `queues: queue over its backlog ${'!'.repeat(300)}`.slice(0, 'queues: '.length + 200);
    expect(outcomes).toEqual([
      { outcome: 'retry', error: words },
      { outcome: 'retry', error: words },
    ]);
    // Something thrown that is not an Error, or an Error without words: named by its kind.
    const silent = queuePublisher(producer(() => new TypeError('')));
    expect(await silent.publish(message(), live())).toMatchObject({ outcome: 'retry', error: 'queues: TypeError' });
    // Its words are never read from something that is not an Error (it may be any value).
    const thrown = queuePublisher(producer(() => 'over quota'));
    expect(await thrown.publish(message(), live())).toMatchObject({ outcome: 'retry', error: 'queues: string' });
  });

  it('answers a timeout once the publish is aborted, counted as an attempt', async () => {
    const never: QueueProducer = { sendBatch: () => new Promise(() => {}) };
    const controller = new AbortController();
    const pending = queuePublisher(never).publish(message(), controller.signal);
    controller.abort();
    expect(await pending).toEqual({ outcome: 'retry', error: 'timeout' });
  });
});

describe('the Worker’s publisher per destination', () => {
  const logger = createLogger({ level: 'error', now: () => new Date(), write: () => {} });
  const deps = (queues: Record<string, QueueProducer>) => ({
    clock: Date.now,
    logger,
    queues: new Map(Object.entries(queues)),
  });

  it('publishes the default destination without a target to OUTBOX_QUEUE when bound, else to the log', () => {
    const bound = portableDestinationPublishers(parseDestinations({}), deps({ [DEFAULT_QUEUE_BINDING]: producer() }));
    expect(bound.map(({ destination, publisher }) => [destination.name, publisher.kind])).toEqual([
      ['default', 'queues'],
    ]);
    const other = portableDestinationPublishers(parseDestinations({}), deps({ OTHER_QUEUE: producer() }));
    expect(other.map(({ publisher }) => publisher.kind)).toEqual(['log']);
  });

  it('gives a queue: target its binding and an http target the HTTP publisher', async () => {
    const orders = producer();
    const routing = parseDestinations({
      OUTBOX_DESTINATIONS: JSON.stringify([
        { name: 'orders', url: 'queue:ORDERS_QUEUE' },
        { name: 'crm', url: 'https://crm.example/hooks' },
      ]),
    });
    const publishers = portableDestinationPublishers(routing, deps({ ORDERS_QUEUE: orders, OUTBOX_QUEUE: producer() }));
    expect(publishers.map(({ destination, publisher }) => [destination.name, publisher.kind])).toEqual([
      ['orders', 'queues'],
      ['crm', 'http'],
    ]);
    await publishers[0]?.publisher.publish(message(), live());
    expect(orders.batches).toHaveLength(1);
  });

  it('refuses a queue: target whose binding the Worker lacks, naming the destination and the binding', () => {
    const routing = routingOf([
      { name: 'orders', url: 'queue:ORDERS_QUEUE', matches: () => true, settings: DEFAULT_SETTINGS },
    ]);
    const attempt = () => portableDestinationPublishers(routing, deps({ OUTBOX_QUEUE: producer() }));
    expect(attempt).toThrow(ConfigError);
    expect(attempt).toThrow(
      'OUTBOX_DESTINATIONS (orders).url: no Queues producer binding named ORDERS_QUEUE (wrangler.toml [[queues.producers]])',
    );
  });

  it('takes as Queues bindings exactly the env entries that can send a batch', () => {
    const queue = producer();
    const found = queueBindings({
      OUTBOX_QUEUE: queue,
      HYPERDRIVE: { connectionString: 'postgres://…' },
      ADMIN_TOKEN: 'a-token',
      NOTHING: null,
      COUNT: 3,
    });
    expect([...found.keys()]).toEqual(['OUTBOX_QUEUE']);
    expect(found.get('OUTBOX_QUEUE')).toBe(queue);
  });
});
