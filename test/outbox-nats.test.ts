// The NATS JetStream publisher against real servers: the shared broker suite on the machine's NATS
// (a stream of this file's own), refusals that go dead at once with a last_error naming the fix, and
// a server of the test's own killed mid-drain: nothing lost, nothing published that the stream did
// not acknowledge, and the relay carries on by itself once the server is back; and `npm start`
// publishing a delivery's message to a stream.
// Needs a process: a nats-server of its own is stopped and started, and the built service publishes to it.
import { DiscardPolicy, StorageType } from '@nats-io/jetstream';
import { nanos } from '@nats-io/transport-node';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { subjectMatches } from '../src/outbox/publishers/nats.ts';
import { acmeEvent, deliverAcme, uniqueId } from './helpers/acme.ts';
import {
  BROKER_TEST_TIMEOUT,
  cuttableLink,
  drainOneMessage,
  natsAdmin,
  publishersForFile,
  readNatsStream,
  SHARED_NATS,
  startOwnNats,
} from './helpers/brokers.ts';
import { useTestDatabase } from './helpers/database.ts';
import { buildTestRelay, insertMessages, outboxRows } from './helpers/outbox.ts';
import { WAIT_MS } from './helpers/patience.ts';
import { startListeningService } from './helpers/process.ts';
import {
  drainThroughOutage,
  OUTAGE_PROBES,
  publishAcrossOutage,
  timeoutsCountOnlyWhenConnected,
} from './shared/broker-outages.ts';
import { brokerPublisherContract } from './shared/broker-publisher-contract.ts';

const database = await useTestDatabase();
const { sql } = database;
const shared = await natsAdmin(SHARED_NATS);
const stream = uniqueId('OUTBOX');
const prefix = `${stream}.`;
await shared.jsm.streams.add({
  name: stream,
  subjects: [`${prefix}>`],
  storage: StorageType.Memory,
  duplicate_window: nanos(120_000),
});
afterAll(() => shared.jsm.streams.delete(stream));

const publisherOn = publishersForFile();

brokerPublisherContract(database, {
  name: 'NATS JetStream',
  target: `${SHARED_NATS}?stream=${stream}&subject_prefix=${prefix}`,
  consume: async () => {
    const read = await readNatsStream(shared.nc, stream);
    await shared.jsm.streams.purge(stream);
    return read;
  },
  storesOnce: true,
  addressOf: (topic) => `${prefix}${topic}`,
  checkEnvelope: (message, row) => {
    expect(message.headers).toMatchObject({
      'Outbox-Id': row.id,
      'Outbox-Topic': row.topic,
      'Outbox-Created-At': row.created_at.toISOString(),
    });
  },
  checkTransportKey: (message, _key, transportKey) => {
    expect(message.brokerKey).toBe(transportKey);
  },
});

describe('subjectMatches', () => {
  it('matches as NATS does: `*` one token, `>` one or more trailing tokens, else token for token', () => {
    for (const [pattern, subject] of [
      ['outbox.>', 'outbox.a'],
      ['outbox.>', 'outbox.a.b'],
      ['outbox.*', 'outbox.a'],
      ['outbox.*.c', 'outbox.b.c'],
      ['outbox.a', 'outbox.a'],
    ] as const) {
      expect(subjectMatches(pattern, subject), `${pattern} ${subject}`).toBe(true);
    }
    for (const [pattern, subject] of [
      ['outbox.>', 'outbox'],
      ['outbox.*', 'outbox'],
      ['outbox.*', 'outbox.a.b'],
      ['outbox.a', 'outbox.a.b'],
      ['outbox.a.b', 'outbox.a'],
      ['outbox.a', 'outbox.b'],
    ] as const) {
      expect(subjectMatches(pattern, subject), `${pattern} ${subject}`).toBe(false);
    }
  });
});

describe('refusals that no retry can get past go dead at once', () => {
  afterEach(async () => {
    await sql`delete from outbox_messages`;
  });

  async function deadWith(target: string): Promise<string | null> {
    const { summary, row } = await drainOneMessage(database, publisherOn(target));
    expect(summary).toMatchObject({ dead: 1, published: 0 });
    expect(row).toMatchObject({ status: 'dead', attempts: 1 });
    return row?.last_error ?? null;
  }

  it('a stream that does not exist', async () => {
    const missing = uniqueId('MISSING');
    expect(await deadWith(`${SHARED_NATS}?stream=${missing}&subject_prefix=${missing}.`)).toBe(
      `nats: stream ${missing} does not exist: create it with subjects ${missing}.>`,
    );
  });

  it('a subject the stream does not take', async () => {
    const other = uniqueId('elsewhere');
    expect(await deadWith(`${SHARED_NATS}?stream=${stream}&subject_prefix=${other}.`)).toBe(
      `nats: stream ${stream} does not take subject ${other}.subscription.changed: add it to the stream's subjects`,
    );
  });

  it('a subject another stream takes', async () => {
    const wrong = uniqueId('WRONG');
    expect(await deadWith(`${SHARED_NATS}?stream=${wrong}&subject_prefix=${prefix}`)).toMatch(
      new RegExp(
        `^nats: stream ${wrong}: the subject belongs to another stream than the one configured \\(error 10060\\)$`,
      ),
    );
    expect(await readNatsStream(shared.nc, stream)).toEqual([]);
  });

  it('credentials the server refuses, and a subject the user may not publish to', async () => {
    const guarded = await startOwnNats({ user: 'relay', pass: 'right-password', deny: ['forbidden.>'] });
    expect(await deadWith(`${guarded.url('relay:wrong-password')}?stream=${stream}`)).toBe(
      'nats: the server refused the credentials in OUTBOX_TARGET_URL',
    );
    expect(await deadWith(`${guarded.url('relay:right-password')}?stream=OUTBOX&subject_prefix=forbidden.`)).toBe(
      'nats: the user in OUTBOX_TARGET_URL may not publish to forbidden.subscription.changed: grant it',
    );
  });
});

describe('a full stream', () => {
  it('refuses a new message (discard: new) until there is room: retried, then published', async () => {
    const full = uniqueId('FULL');
    await shared.jsm.streams.add({
      name: full,
      subjects: [`${full}.>`],
      storage: StorageType.Memory,
      max_msgs: 1,
      discard: DiscardPolicy.New,
    });
    try {
      const ids = await insertMessages(sql, 2);
      const test = buildTestRelay(database.db, {
        publisher: publisherOn(`${SHARED_NATS}?stream=${full}&subject_prefix=${full}.`),
        settings: BROKER_TEST_TIMEOUT,
      });
      expect(await test.relay.drain()).toMatchObject({ published: 1, retried: 1, dead: 0 });
      const waiting = (await outboxRows(sql, ids)).find((row) => row.status === 'pending');
      expect(waiting).toMatchObject({ attempts: 1 });
      expect(waiting?.last_error).toMatch(
        new RegExp(`^nats: stream ${full} refused the message \\(error \\d+: maximum messages exceeded\\)$`),
      );

      // A consumer made room (or the operator raised the limit): the next pass publishes it.
      await shared.jsm.streams.purge(full);
      test.advance(60_000);
      expect(await test.relay.drain()).toMatchObject({ published: 1 });
      expect((await readNatsStream(shared.nc, full)).map((message) => message.brokerKey)).toEqual([
        waiting?.deduplication_key,
      ]);
    } finally {
      await shared.jsm.streams.delete(full);
    }
  });
});

describe('a NATS server killed mid-drain', () => {
  it('loses nothing, marks published only what the stream acknowledged, and recovers by itself', async () => {
    const own = await startOwnNats();
    const admin = await natsAdmin(own.url());
    const ownStream = uniqueId('KILLED');
    await admin.jsm.streams.add({ name: ownStream, subjects: [`${ownStream}.>`], storage: StorageType.File });
    const published = await drainThroughOutage(database, {
      publisher: publisherOn(`${own.url()}?stream=${ownStream}&subject_prefix=${ownStream}.`),
      stop: own.kill,
      restart: own.start,
      lastError: /^(timeout while disconnected|nats: (disconnected, reconnecting|connect E[A-Z]+))$/,
    });

    // Read through a connection made now: the test's first one may still be reconnecting.
    const reader = await natsAdmin(own.url());
    const stored = await readNatsStream(reader.nc, ownStream);
    const keys = stored.map((message) => message.brokerKey);
    // Every row published (what the first drain published was acknowledged, so it survived the
    // kill), each key stored once though some were sent twice.
    expect(new Set(keys).size).toBe(100);
    expect(keys).toHaveLength(100);
    expect(published.every((key) => keys.includes(key))).toBe(true);
  });
});

describe('a NATS outage far longer than the backoff (through a proxy the test cuts)', () => {
  it('costs no message an attempt, and every one is published once when the server is back', async () => {
    const own = uniqueId('OUTAGE');
    await shared.jsm.streams.add({ name: own, subjects: [`${own}.>`], storage: StorageType.Memory });
    try {
      const link = await cuttableLink(4222);
      const { probes } = await publishAcrossOutage(database, {
        publisher: publisherOn(`nats://127.0.0.1:${link.port}?stream=${own}&subject_prefix=${own}.`),
        outage: link,
        consume: async () =>
          (await readNatsStream(shared.nc, own)).map((message) => String(message.body.deduplication_key)),
        lastError:
          /^(timeout while disconnected|nats: (disconnected, reconnecting|connection closed before the acknowledgement|connect E[A-Z]+))$/,
      });
      // Each probe would have been a counted attempt before: ten times what killed a message.
      expect(probes).toBeGreaterThanOrEqual(OUTAGE_PROBES);
    } finally {
      await shared.jsm.streams.delete(own);
      await sql`delete from outbox_messages`;
    }
  });
});

describe("a message over the server's max_payload", () => {
  it('is dead at once with an error naming the limit, and the rest of its batch is published', async () => {
    const limit = shared.nc.info?.max_payload;
    expect(limit).toBeGreaterThan(0);
    const [big] = (await insertMessages(sql, 1, { payload: { blob: 'x'.repeat(limit ?? 0) } })) as [string];
    const small = await insertMessages(sql, 2);
    try {
      const test = buildTestRelay(database.db, {
        publisher: publisherOn(`${SHARED_NATS}?stream=${stream}&subject_prefix=${prefix}`),
        settings: BROKER_TEST_TIMEOUT,
      });
      expect(await test.relay.drain()).toMatchObject({ published: 2, dead: 1, retried: 0 });
      const [row] = await outboxRows(sql, [big]);
      expect(row).toMatchObject({ status: 'dead', attempts: 1 });
      expect(row?.last_error).toMatch(
        new RegExp(
          `^nats: the message is \\d+ bytes with its headers, over the server's max_payload of ${limit} bytes$`,
        ),
      );
      for (const other of await outboxRows(sql, small)) expect(other.status).toBe('published');
    } finally {
      await shared.jsm.streams.purge(stream);
      await sql`delete from outbox_messages`;
    }
  });
});

describe('npm start with a NATS target', () => {
  it('publishes what a delivery enqueued to the stream, and stops cleanly', async () => {
    const own = uniqueId('START');
    await shared.jsm.streams.add({ name: own, subjects: [`${own}.>`], storage: StorageType.Memory });
    try {
      const secret = 'nats-start-secret';
      const service = await startListeningService({
        DATABASE_URL: database.url,
        ACME_WEBHOOK_SECRET: secret,
        RELAY_INTERVAL_MS: '100',
        OUTBOX_TARGET_URL: `${SHARED_NATS}?stream=${own}&subject_prefix=${own}.`,
      });
      const nowSeconds = Math.floor(Date.now() / 1000);
      const event = acmeEvent({ created: nowSeconds, data: { id: uniqueId('sub'), status: 'active' } });
      const key = `acme:${event.id}:subscription.changed`;
      try {
        const response = await deliverAcme(service.origin, event, { secret, timestamp: nowSeconds });
        expect(response.status).toBe(200);
        await expect
          .poll(
            async () =>
              (await sql`select status::text as status from outbox_messages where deduplication_key = ${key}`)[0]
                ?.status,
            {
              timeout: WAIT_MS,
            },
          )
          .toBe('published');
      } finally {
        service.child.kill('SIGTERM');
      }
      expect(await service.exited).toEqual({ code: 0, signal: null });
      const stored = await readNatsStream(shared.nc, own);
      expect(stored.map((message) => [message.address, message.brokerKey])).toEqual([
        [`${own}.subscription.changed`, key],
      ]);
    } finally {
      await shared.jsm.streams.delete(own);
    }
  });
});

// Last: what it publishes to the file's stream would be counted by the contract's consumer.
timeoutsCountOnlyWhenConnected(database, 4222, (port) =>
  publisherOn(`nats://127.0.0.1:${port}?stream=${stream}&subject_prefix=${prefix}`),
);
