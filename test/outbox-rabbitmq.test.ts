// The RabbitMQ publisher against the machine's RabbitMQ: the shared broker suite on an exchange and
// queue of this file's own, refusals (no exchange, bad credentials, no vhost, no write access) that
// go dead at once with a last_error naming the fix, an unroutable message retried (not a success),
// and connections lost mid-drain through a TCP link the test cuts (RabbitMQ itself is shared, so it
// is never stopped): nothing lost, nothing published that the broker did not confirm, and the relay
// reconnects by itself.
// Needs a process: rabbitmqctl makes a user with narrow permissions on the machine's RabbitMQ.
import { execFileSync } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { uniqueId } from './helpers/acme.ts';
import { cuttableLink, drainOneMessage, publishersForFile, rabbitTopology, SHARED_AMQP } from './helpers/brokers.ts';
import { useTestDatabase } from './helpers/database.ts';
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
const names = { exchange: uniqueId('outbox'), queue: uniqueId('consumer') };
const topology = await rabbitTopology(names);

const publisherOn = publishersForFile();

brokerPublisherContract(database, {
  name: 'RabbitMQ',
  target: `${SHARED_AMQP}?exchange=${names.exchange}`,
  consume: () => topology.drainQueue(),
  storesOnce: false,
  addressOf: (topic) => topic,
  checkEnvelope: (message, row) => {
    expect(message.headers).toMatchObject({
      'content-type': 'application/json',
      'delivery-mode': '2',
      'outbox-id': row.id,
      'outbox-created-at': row.created_at.toISOString(),
    });
  },
  checkTransportKey: (message, _key, transportKey) => {
    expect(message.brokerKey).toBe(transportKey);
  },
});

afterEach(async () => {
  await sql`delete from outbox_messages`;
  await topology.drainQueue();
});

const outcomeOf = (target: string) => drainOneMessage(database, publisherOn(target));

describe('refusals that no retry can get past go dead at once', () => {
  it('an exchange that does not exist, and the publisher recovers once it does', async () => {
    const missing = uniqueId('missing');
    const { summary, row, test } = await outcomeOf(`${SHARED_AMQP}?exchange=${missing}`);
    expect(summary).toMatchObject({ dead: 1 });
    expect(row).toMatchObject({ status: 'dead', attempts: 1 });
    expect(row?.last_error).toBe(
      `rabbitmq: NOT_FOUND - no exchange '${missing}' in vhost '/': declare exchange ${missing} (the service never creates it)`,
    );

    // The broker closed the channel; once the operator declares the exchange and retries, the same
    // publisher opens a new one.
    const later = await rabbitTopology({ exchange: missing, queue: uniqueId('consumer') });
    await sql`update outbox_messages set status = 'pending', attempts = 0, available_at = now() - interval '1 minute'`;
    expect(await test.relay.drain()).toMatchObject({ published: 1 });
    expect((await later.drainQueue()).map((message) => message.brokerKey)).toEqual([row?.deduplication_key]);
  });

  it('credentials the broker refuses', async () => {
    const { row } = await outcomeOf(`amqp://guest:wrong@127.0.0.1:5672?exchange=${names.exchange}`);
    expect(row).toMatchObject({
      status: 'dead',
      attempts: 1,
      last_error: 'rabbitmq: the broker refused the user and password in OUTBOX_TARGET_URL',
    });
  });

  it('a vhost that does not exist', async () => {
    const { row } = await outcomeOf(
      `amqp://guest:guest@127.0.0.1:5672/${uniqueId('vhost')}?exchange=${names.exchange}`,
    );
    expect(row).toMatchObject({
      status: 'dead',
      last_error: 'rabbitmq: the vhost in OUTBOX_TARGET_URL does not exist or the user may not use it',
    });
  });

  it('a user without write access to the exchange', async () => {
    // A user of the test's own on the shared broker (rabbitmqctl, as .ci/run has it), removed after.
    const user = uniqueId('reader');
    execFileSync('rabbitmqctl', ['add_user', user, 'reader-password'], { stdio: 'ignore' });
    try {
      execFileSync('rabbitmqctl', ['set_permissions', '-p', '/', user, '^$', '^$', '.*'], { stdio: 'ignore' });
      const { row } = await outcomeOf(`amqp://${user}:reader-password@127.0.0.1:5672?exchange=${names.exchange}`);
      expect(row).toMatchObject({ status: 'dead', attempts: 1 });
      expect(row?.last_error).toBe(
        `rabbitmq: ACCESS_REFUSED - access to exchange '${names.exchange}' in vhost '/' refused for user '${user}': ` +
          `grant the user write access to exchange ${names.exchange}`,
      );
    } finally {
      execFileSync('rabbitmqctl', ['delete_user', user], { stdio: 'ignore' });
    }
  });
});

describe('failures worth another try', () => {
  it('an unroutable message is not a success: retried until a queue is bound', async () => {
    const lonely = { exchange: uniqueId('lonely'), queue: uniqueId('unbound') };
    const lonelyTopology = await rabbitTopology(lonely);
    await lonelyTopology.channel.unbindQueue(lonely.queue, lonely.exchange, '#');
    const { summary, row, test } = await outcomeOf(`${SHARED_AMQP}?exchange=${lonely.exchange}`);
    expect(summary).toMatchObject({ retried: 1, published: 0 });
    expect(row).toMatchObject({
      status: 'pending',
      attempts: 1,
      last_error: `rabbitmq: unroutable: no queue is bound to exchange ${lonely.exchange} for routing key subscription.changed`,
    });

    await lonelyTopology.channel.bindQueue(lonely.queue, lonely.exchange, '#');
    test.advance(60_000);
    expect(await test.relay.drain()).toMatchObject({ published: 1 });
    expect(await lonelyTopology.drainQueue()).toHaveLength(1);
  });

  it('a broker that is not there: the outage counts no attempt', async () => {
    const port = new URL(await refusingUrl()).port;
    const { summary, row } = await outcomeOf(`amqp://guest:guest@127.0.0.1:${port}?exchange=${names.exchange}`);
    expect(summary).toMatchObject({ unavailable: 1, retried: 0, stoppedBy: 'unavailable' });
    expect(row).toMatchObject({ status: 'pending', attempts: 0, last_error: 'rabbitmq: connect ECONNREFUSED' });
  });
});

timeoutsCountOnlyWhenConnected(database, 5672, (port) =>
  publisherOn(`amqp://guest:guest@127.0.0.1:${port}?exchange=${names.exchange}`),
);

describe('connections lost mid-drain', () => {
  it('lose nothing, publish only what was confirmed, and the relay reconnects by itself', async () => {
    const link = await cuttableLink(5672);
    const published = await drainThroughOutage(database, {
      publisher: publisherOn(`amqp://guest:guest@127.0.0.1:${link.port}?exchange=${names.exchange}`),
      stop: link.cut,
      restart: link.restore,
      lastError:
        /^(timeout while disconnected|rabbitmq: (E[A-Z]+|connect E[A-Z]+|connection lost before the confirm))$/,
    });

    // Messages in flight at the cut may have arrived and then been sent again: a consumer sees
    // every key, some twice, and deduplicates by message_id.
    const consumed = await topology.drainQueue();
    const keys = new Set(consumed.map((message) => message.brokerKey));
    expect(keys.size).toBe(100);
    expect(published.every((key) => keys.has(key))).toBe(true);
  });
});

describe('a RabbitMQ outage far longer than the backoff (through a proxy the test cuts)', () => {
  it('costs no message an attempt, and every one is published once when the broker is back', async () => {
    const link = await cuttableLink(5672);
    const { probes } = await publishAcrossOutage(database, {
      publisher: publisherOn(`amqp://guest:guest@127.0.0.1:${link.port}?exchange=${names.exchange}`),
      outage: link,
      consume: async () => (await topology.drainQueue()).map((message) => String(message.body.deduplication_key)),
      lastError:
        /^(timeout while disconnected|rabbitmq: (E[A-Z]+|connect E[A-Z]+|connection lost before the confirm|[A-Za-z]*Error))$/,
    });
    expect(probes).toBeGreaterThanOrEqual(OUTAGE_PROBES);
  });
});
