// The Redis Streams publisher against real servers: the shared broker suite on the machine's Redis
// (a stream key of this file's own), refusals that go dead at once with a last_error naming the fix,
// a full server retried, a publish timed out (an attempt on a live connection, none while it opens),
// and a redis-server of the test's own killed mid-drain: nothing lost, nothing published that Redis
// did not acknowledge, at most one entry per key, and the relay recovers by itself.
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { dedupMarkerKey } from '../src/outbox/publishers/redis.ts';
import { uniqueId } from './helpers/acme.ts';
import {
  cuttableLink,
  drainOneMessage,
  publishersForFile,
  readRedisStream,
  redisAdmin,
  SHARED_REDIS,
  startOwnRedis,
} from './helpers/brokers.ts';
import { runCli } from './helpers/cli.ts';
import { useTestDatabase } from './helpers/database.ts';
import { insertMessages, outboxRows } from './helpers/outbox.ts';
import { refusingUrl } from './helpers/sink.ts';
import {
  drainThroughOutage,
  OUTAGE_PROBES,
  publishAcrossOutage,
  timeoutsCountOnlyWhenConnected,
} from './shared/broker-outages.ts';
import { brokerPublisherContract } from './shared/broker-publisher-contract.ts';

const database = await useTestDatabase();
const { sql } = database;
const shared = redisAdmin(SHARED_REDIS);
const stream = uniqueId('webhook-inbox-test');
/** Every key this file makes starts with the stream's name: the stream and its dedup markers. */
afterAll(async () => {
  const keys = await shared.keys(`${stream}*`);
  if (keys.length > 0) await shared.del(...keys);
});

const publisherOn = publishersForFile();

brokerPublisherContract(database, {
  name: 'Redis Streams',
  target: `${SHARED_REDIS}?stream=${stream}`,
  consume: async () => {
    const read = await readRedisStream(shared, stream);
    await shared.del(stream);
    return read;
  },
  storesOnce: true,
  addressOf: () => stream,
  checkEnvelope: (message, row) => {
    // The contract's fields, the payload as JSON text.
    expect(Object.keys(message.headers)).toEqual(['id', 'topic', 'deduplication_key', 'created_at', 'payload']);
    expect(message.headers.payload).toBe(JSON.stringify(row.payload));
  },
  checkTransportKey: async (message, key, transportKey) => {
    // The stream's field is the exact key (Redis values are binary-safe); the marker is named by its
    // transport form and holds the entry's id.
    expect(message.brokerKey).toBe(key);
    expect(await shared.exists(dedupMarkerKey(stream, transportKey))).toBe(1);
  },
});

afterEach(async () => {
  await sql`delete from outbox_messages`;
});

const outcomeOf = (target: string) => drainOneMessage(database, publisherOn(target));

describe('the dedup marker', () => {
  it('expires after dedup_window_s, and only an added entry writes one', async () => {
    const own = uniqueId(`${stream}-window`);
    const { row } = await outcomeOf(`${SHARED_REDIS}?stream=${own}&dedup_window_s=120`);
    expect(row?.status).toBe('published');
    const marker = dedupMarkerKey(own, row?.deduplication_key ?? '');
    const ttl = await shared.ttl(marker);
    expect(ttl).toBeGreaterThan(100);
    expect(ttl).toBeLessThanOrEqual(120);
    const [[entryId]] = (await shared.xrange(own, '-', '+')) as [[string, string[]]];
    expect(await shared.get(marker)).toBe(entryId);
  });
});

describe('refusals that no retry can get past go dead at once', () => {
  it('a key that holds something other than a stream, and no marker is left behind', async () => {
    const taken = uniqueId(`${stream}-taken`);
    await shared.set(taken, 'not a stream');
    const { summary, row } = await outcomeOf(`${SHARED_REDIS}?stream=${taken}`);
    expect(summary).toMatchObject({ dead: 1 });
    expect(row).toMatchObject({
      status: 'dead',
      attempts: 1,
      last_error: `redis: key ${taken} holds something other than a stream: choose another ?stream=`,
    });
    // The refused XADD wrote no marker, so the message goes out once the key is fixed and it is retried.
    expect(await shared.exists(dedupMarkerKey(taken, row?.deduplication_key ?? ''))).toBe(0);
  });

  it('credentials the server refuses, and a key the user may not write', async () => {
    const guarded = await startOwnRedis('right-password');
    const { row } = await outcomeOf(`${guarded.url(':wrong-password')}?stream=${stream}`);
    expect(row).toMatchObject({
      status: 'dead',
      attempts: 1,
      last_error: 'redis: the server refused the credentials in OUTBOX_TARGET_URL',
    });

    // An ACL user that may run every command, on keys under `allowed:` only.
    await redisAdmin(guarded.url(':right-password')).acl(
      'SETUSER',
      'relay',
      'on',
      '>relay-password',
      '~allowed:*',
      '+@all',
    );
    const refused = await outcomeOf(`${guarded.url('relay:relay-password')}?stream=${stream}`);
    expect(refused.row).toMatchObject({
      status: 'dead',
      attempts: 1,
      last_error: `redis: the user may not run scripts or write key ${stream} and its :dedup: keys: grant it`,
    });
  });
});

describe('failures worth another try', () => {
  it('a server that is not there: the outage counts no attempt', async () => {
    const port = new URL(await refusingUrl()).port;
    const { summary, row } = await outcomeOf(`redis://127.0.0.1:${port}?stream=${stream}`);
    expect(summary).toMatchObject({ unavailable: 1, retried: 0, stoppedBy: 'unavailable' });
    expect(row).toMatchObject({ status: 'pending', attempts: 0, last_error: 'redis: ECONNREFUSED' });
  });

  it('a server out of memory', async () => {
    const full = await startOwnRedis('full-password');
    const admin = redisAdmin(full.url(':full-password'));
    await admin.config('SET', 'maxmemory', '1');
    const { row } = await outcomeOf(`${full.url(':full-password')}?stream=${stream}`);
    expect(row).toMatchObject({
      status: 'pending',
      attempts: 1,
      last_error: 'redis: out of memory (maxmemory reached): trim the stream or raise the limit',
    });
  });
});

timeoutsCountOnlyWhenConnected(database, 6379, (port) =>
  publisherOn(`redis://127.0.0.1:${port}?stream=${uniqueId(stream)}`),
);

describe('a Redis server killed mid-drain', () => {
  it('loses nothing, marks published only what Redis acknowledged, and recovers by itself', async () => {
    const own = await startOwnRedis('own-password');
    const url = own.url(':own-password');
    const published = await drainThroughOutage(database, {
      publisher: publisherOn(`${url}?stream=${stream}`),
      stop: own.kill,
      restart: own.start,
      lastError:
        /^(timeout while disconnected|redis: (connection lost before the reply|disconnected, reconnecting|E[A-Z]+))$/,
    });

    const entries = await readRedisStream(redisAdmin(url), stream);
    const keys = entries.map((entry) => entry.brokerKey);
    expect(keys).toHaveLength(100);
    expect(new Set(keys).size).toBe(100);
    expect(published.every((key) => keys.includes(key))).toBe(true);
  });
});

describe('a Redis outage far longer than the backoff (through a proxy the test cuts)', () => {
  it('costs no message an attempt, and every one is published once when the server is back', async () => {
    const own = uniqueId(`${stream}-outage`);
    const link = await cuttableLink(6379);
    const { probes } = await publishAcrossOutage(database, {
      publisher: publisherOn(`redis://127.0.0.1:${link.port}?stream=${own}`),
      outage: link,
      consume: async () => (await readRedisStream(shared, own)).map((entry) => String(entry.body.deduplication_key)),
      lastError:
        /^(timeout while disconnected|redis: (connection lost before the reply|disconnected, reconnecting|E[A-Z]+))$/,
    });
    expect(probes).toBeGreaterThanOrEqual(OUTAGE_PROBES);
  });
});

describe('webhook-inbox drain with a Redis target', () => {
  it('publishes, closes its connection so the process ends, and exits 0', async () => {
    const ids = await insertMessages(sql, 3);
    const cliStream = uniqueId(`${stream}-cli`);
    const result = await runCli(['drain'], {
      DATABASE_URL: database.url,
      OUTBOX_TARGET_URL: `${SHARED_REDIS}?stream=${cliStream}`,
    });
    expect(result.code).toBe(0);
    expect(result.output).toMatch(/claimed 3: published 3, retried 0, dead 0/);
    expect(await shared.xlen(cliStream)).toBe(3);
    for (const row of await outboxRows(sql, ids)) expect(row.status).toBe('published');
  });

  it('refuses a target without its stream: exit 1, the message untouched', async () => {
    const [id] = (await insertMessages(sql, 1)) as [string];
    const result = await runCli(['drain'], { DATABASE_URL: database.url, OUTBOX_TARGET_URL: SHARED_REDIS });
    expect(result.code).toBe(1);
    expect(result.output).toContain('OUTBOX_TARGET_URL: redis:// targets need ?stream=');
    expect((await outboxRows(sql, [id]))[0]).toMatchObject({ status: 'pending', attempts: 0, locked_by: null });
  });
});
