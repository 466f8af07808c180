// Brokers for the publisher tests. The machine's shared ones (RabbitMQ 5672, NATS 4222, Redis 6379:
// `.ci/run` starts them) get topology of the test's own, under unique names, removed afterwards; and
// a test that stops a broker mid-drain starts an instance of its own (nats-server, redis-server) on a
// free port, so it never touches what others use. Real consumers read back what was published.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server, type Socket, connect as tcpConnect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type JetStreamManager, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { type NatsConnection, connect as natsConnect } from '@nats-io/transport-node';
import { connect as amqpConnect } from 'amqplib';
import { Redis } from 'ioredis';
import { afterAll } from 'vitest';
import { freePort } from '../../src/entry/setup/free-port.ts';
import { createLogger } from '../../src/lib/logger.ts';
import { nodePublisherFor } from '../../src/outbox/publishers/node.ts';
import type { Publisher } from '../../src/outbox/publishers/publisher.ts';
import type { TestDatabase } from './database.ts';
import { buildTestRelay, insertMessages, outboxRows } from './outbox.ts';
import { patience, WAIT_MS } from './patience.ts';

export const SHARED_NATS = 'nats://127.0.0.1:4222';
export const SHARED_AMQP = 'amqp://guest:guest@127.0.0.1:5672';
export const SHARED_REDIS = 'redis://127.0.0.1:6379';

/** What a consumer read: the body, and the deduplication key where the broker carries it besides the body. */
export interface Consumed {
  body: Record<string, unknown>;
  brokerKey: string | undefined;
  /** Where the topic put it: the subject, the routing key, the stream's key. */
  address: string;
  headers: Record<string, string>;
}

async function untilAccepting(port: number, timeoutMs = WAIT_MS): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = tcpConnect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (open) return;
    if (Date.now() > deadline) throw new Error(`nothing accepts connections on port ${port}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** A broker process of the test's own: stopped abruptly (SIGKILL) and started again on the same port and data. */
export interface OwnBroker {
  port: number;
  url(userinfo?: string): string;
  start(): Promise<void>;
  kill(): Promise<void>;
}

function ownBroker(scheme: string, command: string, args: (port: number, dir: string) => string[]) {
  return async (): Promise<OwnBroker> => {
    const port = await freePort();
    const dir = mkdtempSync(join(tmpdir(), `webhook-inbox-${command}-`));
    let child: ChildProcess | undefined;
    const kill = async () => {
      const running = child;
      child = undefined;
      if (running === undefined || running.exitCode !== null) return;
      const exited = new Promise((resolve) => running.once('exit', resolve));
      running.kill('SIGKILL');
      await exited;
    };
    const broker: OwnBroker = {
      port,
      url: (userinfo) => `${scheme}://${userinfo === undefined ? '' : `${userinfo}@`}127.0.0.1:${port}`,
      start: async () => {
        child = spawn(command, args(port, dir), { stdio: 'ignore' });
        await untilAccepting(port);
      },
      kill,
    };
    await broker.start();
    afterAll(async () => {
      await kill();
      rmSync(dir, { recursive: true, force: true });
    });
    return broker;
  };
}

/**
 * nats-server with JetStream, storing in a folder of its own (kept across a kill and restart); with
 * `auth`, one user who may publish anywhere but to the `deny` subjects.
 */
export const startOwnNats = (auth?: { user: string; pass: string; deny: readonly string[] }) =>
  ownBroker('nats', 'nats-server', (port, dir) => {
    if (auth === undefined) return ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', dir];
    const config = join(dir, 'nats.conf');
    const user = { user: auth.user, password: auth.pass, permissions: { publish: { deny: auth.deny } } };
    // The server's configuration format accepts JSON values.
    writeFileSync(
      config,
      `listen: "127.0.0.1:${port}"\njetstream: ${JSON.stringify({ store_dir: join(dir, 'js') })}\n` +
        `authorization: ${JSON.stringify({ users: [user] })}\n`,
    );
    return ['-c', config];
  })();

/** redis-server with an fsync'd append-only file, so what it acknowledged survives a kill. */
export const startOwnRedis = (password: string) =>
  ownBroker('redis', 'redis-server', (port, dir) => [
    '--bind',
    '127.0.0.1',
    '--port',
    String(port),
    '--dir',
    dir,
    '--save',
    '',
    '--appendonly',
    'yes',
    '--appendfsync',
    'always',
    '--requirepass',
    password,
  ])();

/** A NATS connection for the test (topology and reading back), closed with the file. */
export async function natsAdmin(server: string): Promise<{ nc: NatsConnection; jsm: JetStreamManager }> {
  const nc = await natsConnect({ servers: server, maxReconnectAttempts: -1, reconnectTimeWait: 200 });
  afterAll(() => nc.close());
  return { nc, jsm: await jetstreamManager(nc) };
}

/** Every message of a JetStream stream, read by an ordered consumer from the start. */
export async function readNatsStream(nc: NatsConnection, stream: string): Promise<Consumed[]> {
  const jsm = await jetstreamManager(nc);
  const { state } = await jsm.streams.info(stream);
  if (state.messages === 0) return [];
  const consumer = await jetstream(nc).consumers.get(stream);
  const read: Consumed[] = [];
  const messages = await consumer.fetch({ max_messages: state.messages, expires: WAIT_MS });
  for await (const message of messages) {
    const headers: Record<string, string> = {};
    for (const [name, values] of message.headers ?? []) headers[name] = values[0] ?? '';
    read.push({
      body: message.json(),
      brokerKey: message.headers?.get('Nats-Msg-Id'),
      address: message.subject,
      headers,
    });
    if (read.length === state.messages) break;
  }
  return read;
}

/** A topic exchange and a queue bound to all of it, under unique names; deleted with the file. */
export async function rabbitTopology(names: { exchange: string; queue: string }) {
  const model = await amqpConnect(SHARED_AMQP);
  const channel = await model.createChannel();
  await channel.assertExchange(names.exchange, 'topic', { durable: false, autoDelete: false });
  await channel.assertQueue(names.queue, { durable: false, autoDelete: false });
  await channel.bindQueue(names.queue, names.exchange, '#');
  afterAll(async () => {
    await channel.deleteQueue(names.queue);
    await channel.deleteExchange(names.exchange);
    await model.close();
  });
  return {
    channel,
    /** Takes every message waiting in the queue (acknowledging them), as a consumer would get them. */
    async drainQueue(): Promise<Consumed[]> {
      const read: Consumed[] = [];
      for (;;) {
        const message = await channel.get(names.queue, { noAck: true });
        if (message === false) return read;
        const headers: Record<string, string> = {
          'content-type': String(message.properties.contentType),
          'delivery-mode': String(message.properties.deliveryMode),
        };
        for (const [name, value] of Object.entries(message.properties.headers ?? {})) headers[name] = String(value);
        read.push({
          body: JSON.parse(message.content.toString('utf8')),
          brokerKey: String(message.properties.messageId),
          address: message.fields.routingKey,
          headers,
        });
      }
    },
  };
}

/** A Redis client for the test, closed with the file. */
export function redisAdmin(url: string): Redis {
  const client = new Redis(url, { maxRetriesPerRequest: 1 });
  afterAll(async () => {
    await client.quit().catch(() => client.disconnect());
  });
  return client;
}

/** Every entry of a Redis stream, as XRANGE gives them to a consumer. */
export async function readRedisStream(client: Redis, stream: string): Promise<Consumed[]> {
  const entries = await client.xrange(stream, '-', '+');
  return entries.map(([, flat]) => {
    const fields: Record<string, string> = {};
    for (let index = 0; index + 1 < flat.length; index += 2) fields[flat[index] as string] = flat[index + 1] as string;
    // `traceparent` is a field beside the contract's, not part of the message's body.
    const { payload, traceparent: _traceparent, ...rest } = fields;
    return {
      body: { ...rest, payload: JSON.parse(payload ?? 'null') },
      brokerKey: fields.deduplication_key,
      address: stream,
      headers: fields,
    };
  });
}

/**
 * A TCP relay in front of a shared broker, for a broker "restart" without stopping what others use:
 * `cut` drops every connection through it and refuses new ones, as a stopped broker would; `restore`
 * accepts again on the same port. `stall` stops carrying bytes either way (connections stay open, new
 * ones are accepted and carry nothing), as a broker that hangs or a network that drops silently.
 */
export interface CuttableLink {
  port: number;
  cut(): Promise<void>;
  restore(): Promise<void>;
  stall(): void;
}

export async function cuttableLink(targetPort: number): Promise<CuttableLink> {
  const port = await freePort();
  const sockets = new Set<Socket>();
  /** Each connection's stop: unpiped both ways, each side stops reading (its bytes wait in the kernel). */
  const stops = new Set<() => void>();
  let stalled = false;
  let server: Server | undefined;
  const listen = async () => {
    const listening = createServer((client) => {
      const upstream = tcpConnect(targetPort, '127.0.0.1');
      for (const socket of [client, upstream]) {
        sockets.add(socket);
        socket.on('close', () => sockets.delete(socket));
        socket.on('error', () => {
          client.destroy();
          upstream.destroy();
        });
      }
      const stop = () => {
        client.unpipe(upstream);
        upstream.unpipe(client);
        client.pause();
        upstream.pause();
      };
      stops.add(stop);
      client.on('close', () => stops.delete(stop));
      if (stalled) stop();
      else client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve) => listening.listen(port, '127.0.0.1', resolve));
    server = listening;
  };
  const cut = async () => {
    const closing = server;
    server = undefined;
    for (const socket of sockets) socket.destroy();
    if (closing !== undefined) await new Promise((resolve) => closing.close(resolve));
  };
  const stall = () => {
    stalled = true;
    for (const stop of stops) stop();
  };
  await listen();
  afterAll(cut);
  return { port, cut, restore: listen, stall };
}

/**
 * A publish's and a connection's timeout in these tests: long enough for a loaded CI machine, so a
 * slow acknowledgement is not mistaken for the failure a test provokes.
 */
export const BROKER_TEST_TIMEOUT = { timeoutMs: patience(5000) } as const;

/** Publishers as the Node entry builds them for target URLs, all closed with the file. */
export function publishersForFile(): (target: string) => Publisher {
  const made: Publisher[] = [];
  afterAll(() => Promise.all(made.map((publisher) => publisher.close?.())));
  const logger = createLogger({ level: 'silent', now: () => new Date() });
  return (target) => {
    const publisher = nodePublisherFor(target, { clock: Date.now, logger, ...BROKER_TEST_TIMEOUT });
    made.push(publisher);
    return publisher;
  };
}

/** One new message drained once by `publisher`: the summary, the row after it, and the relay for later passes. */
export async function drainOneMessage(database: Pick<TestDatabase, 'db' | 'sql'>, publisher: Publisher) {
  const [id] = (await insertMessages(database.sql, 1)) as [string];
  const test = buildTestRelay(database.db, { publisher, settings: BROKER_TEST_TIMEOUT });
  const summary = await test.relay.drain();
  const [row] = await outboxRows(database.sql, [id]);
  return { summary, row, test };
}
