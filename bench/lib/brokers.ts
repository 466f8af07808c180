// The machine's brokers as outbox benchmark targets: a stream or an exchange and queue of the run's
// own (durable, as production would have them), the OUTBOX_TARGET_URL that publishes to it, how many
// messages it holds, and its removal (the Redis dedup markers included).
import { randomBytes } from 'node:crypto';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect as natsConnect } from '@nats-io/transport-node';
import { connect as amqpConnect } from 'amqplib';
import { Redis } from 'ioredis';

export type BrokerName = 'nats' | 'rabbitmq' | 'redis';
export const BROKER_NAMES: readonly BrokerName[] = ['nats', 'rabbitmq', 'redis'];

export interface BrokerTarget {
  url: string;
  /** The broker's process name on this machine, for its CPU per message. */
  command: string;
  /** Messages the stream or queue holds now. */
  stored(): Promise<number>;
  dispose(): Promise<void>;
}

const runName = (prefix: string) => `${prefix}${randomBytes(4).toString('hex')}`;

async function natsTarget(): Promise<BrokerTarget> {
  const nc = await natsConnect({ servers: '127.0.0.1:4222' });
  const jsm = await jetstreamManager(nc);
  const stream = runName('BENCH_');
  // File storage, the server's default and what an operator keeps an outbox in.
  await jsm.streams.add({ name: stream, subjects: [`${stream}.>`] });
  return {
    url: `nats://127.0.0.1:4222?stream=${stream}&subject_prefix=${stream}.`,
    command: 'nats-server',
    stored: async () => (await jsm.streams.info(stream)).state.messages,
    dispose: async () => {
      await jsm.streams.delete(stream);
      await nc.close();
    },
  };
}

async function rabbitTarget(): Promise<BrokerTarget> {
  const model = await amqpConnect('amqp://guest:guest@127.0.0.1:5672');
  const channel = await model.createChannel();
  const exchange = runName('bench-outbox-');
  const queue = runName('bench-consumer-');
  // Durable and bound, so persistent messages are routed and written to disk before the confirm.
  await channel.assertExchange(exchange, 'topic', { durable: true });
  await channel.assertQueue(queue, { durable: true });
  await channel.bindQueue(queue, exchange, '#');
  return {
    url: `amqp://guest:guest@127.0.0.1:5672?exchange=${exchange}`,
    command: 'beam.smp',
    stored: async () => (await channel.checkQueue(queue)).messageCount,
    dispose: async () => {
      await channel.deleteQueue(queue);
      await channel.deleteExchange(exchange);
      await model.close();
    },
  };
}

async function redisTarget(): Promise<BrokerTarget> {
  const client = new Redis('redis://127.0.0.1:6379');
  const stream = runName('webhook-inbox-bench-');
  return {
    url: `redis://127.0.0.1:6379?stream=${stream}`,
    command: 'redis-server',
    stored: () => client.xlen(stream),
    dispose: async () => {
      for await (const keys of client.scanStream({ match: `${stream}:dedup:*`, count: 1000 })) {
        if ((keys as string[]).length > 0) await client.unlink(...(keys as string[]));
      }
      await client.unlink(stream);
      await client.quit();
    },
  };
}

export function brokerTarget(name: BrokerName): Promise<BrokerTarget> {
  switch (name) {
    case 'nats':
      return natsTarget();
    case 'rabbitmq':
      return rabbitTarget();
    case 'redis':
      return redisTarget();
  }
}
