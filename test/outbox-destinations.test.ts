// Outbox destinations end to end, against a real HTTP sink, the machine's NATS JetStream and Redis:
// a message fans out at enqueue to the destinations whose filters match (a row each, keyed
// `key@name`), reaches exactly those, each once with its own key; one refusing leaves the other
// alone, and an operator retry of its dead row re-sends to it only. Plus the filters' globs, the
// OUTBOX_TARGET_URL shorthand's contract key, and every configuration error named.

import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { StorageType } from '@nats-io/jetstream';
import { nanos } from '@nats-io/nats-core';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../src/config.ts';
import { defaultHandlers, routedHandlers } from '../src/domain/handlers.ts';
import { createLogger } from '../src/lib/logger.ts';
import { relayFor } from '../src/ops/maintenance/drainers.ts';
import {
  configuredRouting,
  type DestinationRouting,
  loggingUnrouted,
  parseDestinations,
  targetLabel,
} from '../src/outbox/destinations.ts';
import { retryDeadMessages } from '../src/outbox/operator.ts';
import { nodeDestinationPublishers } from '../src/outbox/publishers/node.ts';
import type { DrainSummary, Relay } from '../src/outbox/relay.ts';
import { closePublishers, type DestinationPublisher, relayOfEvery } from '../src/outbox/relays.ts';
import { countOutboxMessagesByDestination } from '../src/outbox/stats.ts';
import { acmeEvent, signedHeaders, uniqueId } from './helpers/acme.ts';
import { buildTestApp } from './helpers/app.ts';
import {
  BROKER_TEST_TIMEOUT,
  natsAdmin,
  readNatsStream,
  readRedisStream,
  redisAdmin,
  SHARED_NATS,
  SHARED_REDIS,
} from './helpers/brokers.ts';
import { runCli } from './helpers/cli.ts';
import { configProblems } from './helpers/config-problems.ts';
import { useTestDatabase } from './helpers/database.ts';
import { subscriptionRow } from './helpers/facts.ts';
import { type OutboxRow, outboxRowsByKeyPrefix } from './helpers/outbox.ts';
import { refusingUrl, startSink } from './helpers/sink.ts';

const database = await useTestDatabase();
const { db, sql } = database;
const sink = await startSink();

const redis = redisAdmin(SHARED_REDIS);
const redisStream = uniqueId('webhook-inbox-destinations');
afterAll(async () => {
  const keys = await redis.keys(`${redisStream}*`);
  if (keys.length > 0) await redis.del(...keys);
});

const nats = await natsAdmin(SHARED_NATS);
const natsStream = uniqueId('DESTINATIONS');
await nats.jsm.streams.add({
  name: natsStream,
  subjects: [`${natsStream}.>`],
  storage: StorageType.Memory,
  duplicate_window: nanos(120_000),
});
afterAll(() => nats.jsm.streams.delete(natsStream));

/** Three destinations: an acme subscription event matches the sink and Redis, never NATS. */
const THREE = JSON.stringify([
  { name: 'sink', url: sink.url, topics: ['subscription.*'] },
  { name: 'stream', url: `${SHARED_REDIS}?stream=${redisStream}`, senders: ['acme'], types: ['subscription.*'] },
  {
    name: 'jetstream',
    url: `${SHARED_NATS}?stream=${natsStream}&subject_prefix=${natsStream}.`,
    types: ['customer.subscription.*'],
  },
]);

afterEach(() => {
  sink.respond(() => ({ status: 200, body: '{}' }));
});

/** The service as configured by `variables`: its app (handlers routed) and a relay over every destination. */
async function serviceWith(variables: Record<string, string>) {
  const config = parseConfig(variables);
  const routing = parseDestinations(config);
  // The real clock (rows are enqueued at the database's now()), moved ahead by the test for backoffs.
  let aheadMs = 0;
  const clock = () => Date.now() + aheadMs;
  const logs: string[] = [];
  const logger = createLogger({ level: 'debug', now: () => new Date(clock()), write: (line) => logs.push(line) });
  const test = await buildTestApp(db, { handlers: routedHandlers(defaultHandlers, loggingUnrouted(routing, logger)) });
  const publishers: DestinationPublisher[] = nodeDestinationPublishers(routing, {
    clock,
    logger,
    ...BROKER_TEST_TIMEOUT,
  });
  afterAll(() => closePublishers(publishers));
  const relay = relayFor({ config, db, clock, logger, newId: () => uniqueId('relay'), random: () => 0.5 }, publishers);
  return {
    routing,
    relay,
    logs,
    advance: (ms: number) => {
      aheadMs += ms;
    },
    deliver: async (event: object) => {
      const body = JSON.stringify(event);
      return test.request('/webhooks/acme', { method: 'POST', body, headers: await signedHeaders(body) });
    },
  };
}

const rowsOf = (eventId: string) => outboxRowsByKeyPrefix(sql, `acme:${eventId}:`);
const byDestination = async (eventId: string) => {
  const rows = await sql<Array<OutboxRow & { destination: string }>>`
    select id::text as id, destination, deduplication_key, status::text as status, attempts, published_at
    from outbox_messages where deduplication_key like ${`acme:${eventId}:%`}`;
  return new Map(rows.map((row) => [row.destination, row]));
};
const sinkRequestsFor = (eventId: string) =>
  sink.requests.filter((request) => String(request.headers['idempotency-key']).startsWith(`acme:${eventId}:`));
const redisEntriesFor = async (eventId: string) =>
  (await readRedisStream(redis, redisStream)).filter((entry) => entry.brokerKey?.startsWith(`acme:${eventId}:`));

const countsByDestination = async () =>
  new Map((await countOutboxMessagesByDestination(db)).map((row) => [`${row.destination}/${row.status}`, row.n]));
/** What changed between two readings of the counters, the unchanged left out. */
function countChange(before: Map<string, number>, after: Map<string, number>): Record<string, number> {
  const changes: Record<string, number> = {};
  for (const key of new Set([...before.keys(), ...after.keys()])) {
    const change = (after.get(key) ?? 0) - (before.get(key) ?? 0);
    if (change !== 0) changes[key] = change;
  }
  return changes;
}

describe('fan-out to the destinations that match', () => {
  it('a message matching two of three destinations reaches exactly those two, each once, with its own key', async () => {
    const service = await serviceWith({ OUTBOX_DESTINATIONS: THREE });
    const event = acmeEvent();
    const countsBefore = await countsByDestination();
    expect((await service.deliver(event)).status).toBe(200);
    // The counters (drizzle/0010) follow each destination's rows.
    expect(countChange(countsBefore, await countsByDestination())).toEqual({
      'sink/pending': 1,
      'stream/pending': 1,
    });

    const rows = await byDestination(event.id);
    expect([...rows.keys()].sort()).toEqual(['sink', 'stream']);
    const key = `acme:${event.id}:subscription.changed`;
    expect(rows.get('sink')?.deduplication_key).toBe(`${key}@sink`);
    expect(rows.get('stream')?.deduplication_key).toBe(`${key}@stream`);

    const summary = await service.relay.drain();
    expect(summary).toMatchObject({ claimed: 2, published: 2, retried: 0, dead: 0 });
    expect([...(await byDestination(event.id)).values()].map((row) => row.status)).toEqual(['published', 'published']);

    const [delivered, ...moreDelivered] = sinkRequestsFor(event.id);
    expect(moreDelivered).toHaveLength(0);
    expect(delivered?.headers['idempotency-key']).toBe(`${key}@sink`);
    expect(JSON.parse(delivered?.body ?? '{}')).toMatchObject({
      deduplication_key: `${key}@sink`,
      topic: 'subscription.changed',
    });

    const entries = await redisEntriesFor(event.id);
    expect(entries.map((entry) => entry.brokerKey)).toEqual([`${key}@stream`]);
    expect(await readNatsStream(nats.nc, natsStream)).toEqual([]);
    expect(countChange(countsBefore, await countsByDestination())).toEqual({
      'sink/published': 1,
      'stream/published': 1,
    });
  });

  it('one destination refusing while another accepts: the refused row retries and dies alone, and an operator retry re-sends to it only', async () => {
    const service = await serviceWith({ OUTBOX_DESTINATIONS: THREE });
    const event = acmeEvent();
    sink.respond(() => ({ status: 500, body: '{}' }));
    await service.deliver(event);

    expect(await service.relay.drain()).toMatchObject({ claimed: 2, published: 1, retried: 1 });
    let rows = await byDestination(event.id);
    expect(rows.get('sink')).toMatchObject({ status: 'pending', attempts: 1 });
    expect(rows.get('stream')).toMatchObject({ status: 'published', attempts: 0 });
    const publishedAt = rows.get('stream')?.published_at;

    // A refusal no retry can get past: dead at once, the other destination untouched.
    sink.respond(() => ({ status: 400, body: '{}' }));
    service.advance(3_600_000);
    expect(await service.relay.drain()).toMatchObject({ claimed: 1, dead: 1, published: 0 });
    rows = await byDestination(event.id);
    expect(rows.get('sink')).toMatchObject({ status: 'dead', attempts: 2 });
    expect(rows.get('stream')).toMatchObject({ status: 'published', published_at: publishedAt });

    const deadId = rows.get('sink')?.id ?? '';
    const retried = await retryDeadMessages(db, { ids: [deadId], operator: 'test', now: new Date() });
    expect(retried).toMatchObject({ kind: 'retried', ids: [deadId] });
    sink.respond(() => ({ status: 200, body: '{}' }));
    service.advance(1000);
    expect(await service.relay.drain()).toMatchObject({ claimed: 1, published: 1 });

    const key = `acme:${event.id}:subscription.changed`;
    expect(sinkRequestsFor(event.id).map((request) => request.headers['idempotency-key'])).toEqual([
      `${key}@sink`,
      `${key}@sink`,
      `${key}@sink`,
    ]);
    expect((await redisEntriesFor(event.id)).map((entry) => entry.brokerKey)).toEqual([`${key}@stream`]);
    rows = await byDestination(event.id);
    expect(rows.get('sink')?.status).toBe('published');
    expect(rows.get('stream')?.published_at).toEqual(publishedAt);
  });

  it('one destination out of reach backs off alone: its rows wait uncounted, the others keep publishing', async () => {
    const down = await refusingUrl();
    const service = await serviceWith({
      OUTBOX_DESTINATIONS: JSON.stringify([
        { name: 'sink', url: sink.url },
        { name: 'down', url: down },
      ]),
      // Its next probe ten seconds away (half the base, random 0.5): the second drain comes well before.
      OUTBOX_BACKOFF_BASE_MS: '20000',
    });
    const first = acmeEvent();
    await service.deliver(first);
    expect(await service.relay.drain()).toMatchObject({ published: 1, unavailable: 1, stoppedBy: 'drained' });
    let rows = await byDestination(first.id);
    expect(rows.get('sink')?.status).toBe('published');
    expect(rows.get('down')).toMatchObject({ status: 'pending', attempts: 0 });

    // While `down` waits for its next probe, a new message to `sink` still goes out at once.
    const second = acmeEvent();
    await service.deliver(second);
    expect(await service.relay.drain()).toMatchObject({ claimed: 1, published: 1, unavailable: 0 });
    rows = await byDestination(second.id);
    expect(rows.get('sink')?.status).toBe('published');
    expect(rows.get('down')).toMatchObject({ status: 'pending', attempts: 0 });
    expect(sinkRequestsFor(first.id)).toHaveLength(1);
    expect(sinkRequestsFor(second.id)).toHaveLength(1);
  });

  it('no matching destination writes no row, and the domain change is still applied', async () => {
    const only = JSON.stringify([{ name: 'billing', url: sink.url, senders: ['stripe'] }]);
    const service = await serviceWith({ OUTBOX_DESTINATIONS: only });
    const event = acmeEvent();
    expect((await service.deliver(event)).status).toBe(200);
    expect(await rowsOf(event.id)).toEqual([]);
    const unrouted = service.logs
      .map((line) => JSON.parse(line) as { msg: string })
      .filter((line) => line.msg === 'outbox message matches no destination, not written');
    expect(unrouted).toEqual([
      expect.objectContaining({
        level: 'debug',
        msg: 'outbox message matches no destination, not written',
        topic: 'subscription.changed',
        sender: 'acme',
        type: 'subscription.updated',
      }),
    ]);
    expect((await subscriptionRow(sql, String(event.data.id)))?.status).toBe('active');
  });

  it('a destination added later gets only what is enqueued after it; nothing is replayed', async () => {
    const before = await serviceWith({ OUTBOX_DESTINATIONS: JSON.stringify([{ name: 'sink', url: sink.url }]) });
    const earlier = acmeEvent();
    await before.deliver(earlier);
    const after = await serviceWith({
      OUTBOX_DESTINATIONS: JSON.stringify([
        { name: 'sink', url: sink.url },
        { name: 'stream', url: `${SHARED_REDIS}?stream=${redisStream}` },
      ]),
    });
    const later = acmeEvent();
    await after.deliver(later);
    await after.relay.drain();
    expect([...(await byDestination(earlier.id)).keys()]).toEqual(['sink']);
    expect([...(await byDestination(later.id)).keys()].sort()).toEqual(['sink', 'stream']);
    expect(await redisEntriesFor(earlier.id)).toEqual([]);
    expect(await redisEntriesFor(later.id)).toHaveLength(1);
  });

  it('the OUTBOX_TARGET_URL shorthand is the `default` destination, every message, with the contract key', async () => {
    const service = await serviceWith({
      OUTBOX_TARGET_URL: sink.url,
      OUTBOX_DESTINATIONS: JSON.stringify([{ name: 'stream', url: `${SHARED_REDIS}?stream=${redisStream}` }]),
    });
    const event = acmeEvent();
    await service.deliver(event);
    const key = `acme:${event.id}:subscription.changed`;
    const rows = await byDestination(event.id);
    expect(rows.get('default')?.deduplication_key).toBe(key);
    expect(rows.get('stream')?.deduplication_key).toBe(`${key}@stream`);
    await service.relay.drain();
    expect(sinkRequestsFor(event.id).map((request) => request.headers['idempotency-key'])).toEqual([key]);
  });
});

describe('webhook-inbox drain', () => {
  it('drains every destination of OUTBOX_DESTINATIONS_FILE, each through its own publisher, and refuses a bad one', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'destinations-')), 'destinations.json');
    writeFileSync(file, JSON.stringify(JSON.parse(THREE), null, 2));
    const service = await serviceWith({ OUTBOX_DESTINATIONS: THREE });
    const event = acmeEvent();
    await service.deliver(event);

    const drained = await runCli(['drain', '--json'], { DATABASE_URL: database.url, OUTBOX_DESTINATIONS_FILE: file });
    expect(drained.code).toBe(0);
    expect(JSON.parse(drained.output)).toMatchObject({ published: 2, dead: 0, stoppedBy: 'drained' });
    expect([...(await byDestination(event.id)).values()].map((row) => row.status)).toEqual(['published', 'published']);
    expect(sinkRequestsFor(event.id)).toHaveLength(1);
    expect(await redisEntriesFor(event.id)).toHaveLength(1);

    writeFileSync(file, JSON.stringify([{ name: 'Sink', url: sink.url }]));
    const refused = await runCli(['drain'], { DATABASE_URL: database.url, OUTBOX_DESTINATIONS_FILE: file });
    expect(refused.code).toBe(1);
    expect(refused.output).toContain('OUTBOX_DESTINATIONS[0].name: lowercase letters');
  });
});

describe('filters', () => {
  // Built in each test, not when the file loads, so a mutation run sees which test reaches the compiled patterns.
  const routing = (): DestinationRouting =>
    parseDestinations(
      parseConfig({
        OUTBOX_DESTINATIONS: JSON.stringify([
          { name: 'all', url: 'http://127.0.0.1:1/' },
          { name: 'orders', url: 'http://127.0.0.1:1/', topics: ['order.*'] },
          { name: 'stripe-subs', url: 'http://127.0.0.1:1/', senders: ['stripe'], types: ['customer.subscription.*'] },
          { name: 'exact', url: 'http://127.0.0.1:1/', topics: ['subscription.changed', 'x.*.y'], senders: ['a*e'] },
        ]),
      }),
    );
  const route = (topic: string, sender: string, type: string) => routing().route({ topic, sender, type });

  it('absent lists match every value; `*` matches any run of characters, dots included; names match exactly', () => {
    expect(route('order.created', 'acme', 'subscription.updated')).toEqual(['all', 'orders']);
    expect(route('order', 'acme', 'x')).toEqual(['all']);
    expect(route('subscription.changed', 'stripe', 'customer.subscription.deleted')).toEqual(['all', 'stripe-subs']);
    expect(route('subscription.changed', 'stripe', 'customer.subscription')).toEqual(['all']);
    expect(route('subscription.changed', 'acme', 'anything')).toEqual(['all', 'exact']);
    expect(route('x.a.b.y', 'ae', 't')).toEqual(['all', 'exact']);
    expect(route('subscription.changedx', 'acme', 't')).toEqual(['all']);
    // A dot in a pattern is a dot, not any character.
    expect(route('orderXcreated', 'acme', 't')).toEqual(['all']);
  });

  it('a pattern matches whole names only, never a part inside a longer one', () => {
    expect(route('x.order.created', 'acme', 't')).toEqual(['all']);
    expect(route('subscription.changed', 'stripe', 'x.customer.subscription.deleted')).toEqual(['all']);
    expect(route('x.a.b.yz', 'ae', 't')).toEqual(['all']);
    expect(route('subscription.changed', 'xae', 't')).toEqual(['all']);
    expect(route('subscription.changed', 'aex', 't')).toEqual(['all']);
  });

  it('keeps the patterns as configured for operators, absent ones absent', () => {
    expect(routing().destinations.map(({ name, filters }) => [name, filters])).toEqual([
      ['all', { topics: undefined, senders: undefined, types: undefined }],
      ['orders', { topics: ['order.*'], senders: undefined, types: undefined }],
      ['stripe-subs', { topics: undefined, senders: ['stripe'], types: ['customer.subscription.*'] }],
      ['exact', { topics: ['subscription.changed', 'x.*.y'], senders: ['a*e'], types: undefined }],
    ]);
  });
});

describe('routing without OUTBOX_DESTINATIONS', () => {
  it('is `default` to the log alone, or to OUTBOX_TARGET_URL; parsed once per configuration', () => {
    const alone = parseDestinations({ OUTBOX_TARGET_URL: undefined, OUTBOX_DESTINATIONS: undefined });
    expect(alone.destinations.map(({ name, url }) => [name, url])).toEqual([['default', undefined]]);
    const target = parseDestinations({ OUTBOX_TARGET_URL: 'http://127.0.0.1:1/', OUTBOX_DESTINATIONS: undefined });
    expect(target.destinations.map(({ name, url }) => [name, url])).toEqual([['default', 'http://127.0.0.1:1/']]);
    expect(target.route({ topic: 'any', sender: 'acme', type: 't' })).toEqual(['default']);

    const config = parseConfig({ OUTBOX_TARGET_URL: 'http://127.0.0.1:1/' });
    expect(configuredRouting(config)).toBe(configuredRouting(config));
    expect(targetLabel('default')).toBe('OUTBOX_TARGET_URL');
    expect(targetLabel('orders')).toBe('OUTBOX_DESTINATIONS (orders).url');
  });
});

describe('configuration', () => {
  const problemsOf = (variables: Record<string, string>, readFile?: (path: string) => string) =>
    configProblems(() => parseDestinations(parseConfig(variables, readFile === undefined ? {} : { readFile })));
  const destinations = (list: unknown) => ({ OUTBOX_DESTINATIONS: JSON.stringify(list) });

  it('names every problem, by index and field, never quoting a URL', () => {
    expect(problemsOf({ OUTBOX_DESTINATIONS: '[{' })).toEqual([
      'OUTBOX_DESTINATIONS: not JSON (a list of destinations, docs/outbox.md)',
    ]);
    expect(problemsOf(destinations([]))).toEqual([
      'OUTBOX_DESTINATIONS: lists no destination; unset it to use OUTBOX_TARGET_URL alone',
    ]);
    const problems = problemsOf(
      destinations([
        { name: 'Bad Name', url: 'http://x/' },
        { name: 'default', url: 'http://x/' },
        { name: 'ok', url: 'http://x/', topics: [] },
        { name: 'ok2', url: 'http://x/', colour: 'blue' },
        { name: 'ok3', url: 'http://x/', settings: { rate: 1 } },
      ]),
    );
    expect(problems).toHaveLength(5);
    expect(problems[0]).toMatch(/^OUTBOX_DESTINATIONS\[0\]\.name: lowercase letters/);
    expect(problems[1]).toMatch(/^OUTBOX_DESTINATIONS\[1\]\.name: "default" is OUTBOX_TARGET_URL's/);
    expect(problems[2]).toMatch(/^OUTBOX_DESTINATIONS\[2\]\.topics: an empty list matches nothing/);
    expect(problems[3]).toMatch(/^OUTBOX_DESTINATIONS\[3\]: .*colour/);
    expect(problems[4]).toMatch(/^OUTBOX_DESTINATIONS\[4\]\.settings: .*rate/);
  });

  it('refuses a duplicate name and a bad target, naming the destination and not the URL', () => {
    const problems = problemsOf(
      destinations([
        { name: 'a', url: 'http://x/' },
        { name: 'a', url: 'nats://user:hunter2@127.0.0.1:4222' },
        { name: 'b', url: 'ftp://x/' },
      ]),
    );
    expect(problems).toEqual([
      'OUTBOX_DESTINATIONS[1].name: "a" is used twice',
      expect.stringMatching(/^OUTBOX_DESTINATIONS\[1\]\.url: nats:\/\/ targets need \?stream=/),
      'OUTBOX_DESTINATIONS[2].url: unknown scheme "ftp" (http, https, nats, amqp, amqps, redis, rediss)',
    ]);
    expect(problems.join(' ')).not.toContain('hunter2');
  });

  it('reads OUTBOX_DESTINATIONS_FILE whole (JSON over several lines), and refuses both set', () => {
    const text = JSON.stringify([{ name: 'sink', url: 'http://x/', topics: ['a.*'] }], null, 2);
    const routing = parseDestinations(
      parseConfig({ OUTBOX_DESTINATIONS_FILE: '/etc/d.json' }, { readFile: () => text }),
    );
    expect(routing.destinations.map((destination) => destination.name)).toEqual(['sink']);
    expect(problemsOf({ OUTBOX_DESTINATIONS_FILE: '/etc/d.json', OUTBOX_DESTINATIONS: '[]' }, () => text)).toEqual([
      'OUTBOX_DESTINATIONS_FILE: OUTBOX_DESTINATIONS is set too; keep one of them',
    ]);
  });

  it('a queue: target is refused by the Node relay, which cannot publish to a Workers binding', () => {
    const routing = parseDestinations(parseConfig(destinations([{ name: 'q', url: 'queue:EVENTS' }])));
    const logger = createLogger({ level: 'silent', now: () => new Date() });
    expect(() => nodeDestinationPublishers(routing, { clock: Date.now, logger, timeoutMs: 1000 })).toThrow(
      /OUTBOX_DESTINATIONS \(q\)\.url: queue: targets are Workers Queues bindings/,
    );
  });
});

describe('relayOfEvery', () => {
  const summary = (stoppedBy: DrainSummary['stoppedBy'], n: number): DrainSummary => ({
    claimed: n,
    published: 2 * n,
    retried: 3 * n,
    dead: 4 * n,
    released: 5 * n,
    unavailable: 6 * n,
    batches: 7 * n,
    deferredMs: 8 * n,
    stoppedBy,
    elapsedMs: 10 * n,
  });
  const fakeRelay = (result: DrainSummary, seen: unknown[] = []): Relay => ({
    id: uniqueId('relay'),
    destination: uniqueId('dest'),
    drain: async (options) => {
      seen.push(options);
      return result;
    },
  });

  it('is the one relay when there is one; otherwise sums the drains, takes the longest, and tells why they stopped', async () => {
    const only = fakeRelay(summary('drained', 1));
    expect(relayOfEvery('all', [only])).toBe(only);

    const seen: unknown[] = [];
    const options = { budgetMs: 5 };
    const both = relayOfEvery('all', [fakeRelay(summary('drained', 1), seen), fakeRelay(summary('budget', 2), seen)]);
    expect(both).toMatchObject({ id: 'all', destination: '*' });
    expect(await both.drain(options)).toEqual({ ...summary('budget', 3), elapsedMs: 20 });
    expect(seen).toEqual([options, options]);

    const stopped = async (...reasons: DrainSummary['stoppedBy'][]) =>
      (
        await relayOfEvery(
          'all',
          reasons.map((reason) => fakeRelay(summary(reason, 1))),
        ).drain()
      ).stoppedBy;
    expect(await stopped('unavailable', 'unavailable')).toBe('unavailable');
    expect(await stopped('unavailable', 'drained')).toBe('drained');
    expect(await stopped('unavailable', 'aborted')).toBe('aborted');
    expect(await stopped('drained', 'drained')).toBe('drained');
  });

  it('closes every publisher, one failing to close stopping none of the others', async () => {
    const closed: string[] = [];
    const publisher = (name: string, fails = false): DestinationPublisher =>
      ({
        destination: { name },
        publisher: {
          close: async () => {
            closed.push(name);
            if (fails) throw new Error('already gone');
          },
        },
      }) as unknown as DestinationPublisher;
    await closePublishers([publisher('a', true), publisher('b')]);
    expect(closed).toEqual(['a', 'b']);
  });
});
