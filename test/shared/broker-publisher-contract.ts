// One suite for every broker publisher (test/outbox-nats.test.ts, outbox-rabbitmq, outbox-redis):
// the relay, built with the publisher the Node entry would choose for the target URL, drains real
// rows to the real broker, and a real consumer reads back the contract's body, once per
// deduplication key; a message published again (a relay that died after the broker acknowledged but
// before its outcome was written) is stored once where the broker deduplicates, and carries the same
// key where the consumer must; and event ids no header can hold travel in the documented transport
// form, the body keeping the exact key.
import { afterEach, describe, expect, it } from 'vitest';
import { uniqueId } from '../helpers/acme.ts';
import { BROKER_TEST_TIMEOUT, type Consumed, publishersForFile } from '../helpers/brokers.ts';
import type { TestDatabase } from '../helpers/database.ts';
import {
  buildTestRelay,
  contractBody,
  documentedTransportKey,
  hostileKeys,
  insertMessages,
  type OutboxRow,
  outboxRows,
} from '../helpers/outbox.ts';

export interface BrokerUnderTest {
  name: string;
  /** OUTBOX_TARGET_URL for this file's own stream or exchange. */
  target: string;
  /** What a consumer reads now; the stream or queue is left empty for the next test. */
  consume(): Promise<Consumed[]>;
  /** NATS and Redis store a second publish of a key once; RabbitMQ delivers it, same message_id. */
  storesOnce: boolean;
  /** Where a message of `topic` goes: the subject, the routing key, the stream's key. */
  addressOf(topic: string): string;
  /** The broker-specific places the message's id, key and creation time travel besides the body. */
  checkEnvelope(consumed: Consumed, row: OutboxRow): void;
  /**
   * Where the broker carries the key's transport form (`transportKey`), checked for a message whose
   * body holds `key`: the message id (NATS, RabbitMQ), or the dedup marker's name (Redis).
   */
  checkTransportKey(consumed: Consumed, key: string, transportKey: string): Promise<void> | void;
}

export function brokerPublisherContract(database: TestDatabase, broker: BrokerUnderTest): void {
  const { db, sql } = database;
  const publisher = publishersForFile()(broker.target);

  describe(`the ${broker.name} publisher`, () => {
    afterEach(async () => {
      await sql`delete from outbox_messages`;
      await broker.consume();
    });

    it('delivers drained batches that a consumer reads back once per key, with the contract body', async () => {
      const changed = await insertMessages(sql, 70, { payload: { external_id: 'sub_a', status: 'active' } });
      const paid = await insertMessages(sql, 50, { topic: 'invoice.paid' });
      const test = buildTestRelay(db, { publisher, settings: { batchSize: 50, ...BROKER_TEST_TIMEOUT } });

      expect(await test.relay.drain()).toMatchObject({ claimed: 120, published: 120, retried: 0, dead: 0, batches: 3 });

      const rows = await outboxRows(sql, [...changed, ...paid]);
      for (const row of rows) {
        expect(row).toMatchObject({ status: 'published', attempts: 0, last_error: null, locked_by: null });
      }
      const consumed = await broker.consume();
      expect(consumed).toHaveLength(120);
      const byKey = new Map(consumed.map((message) => [message.body.deduplication_key, message]));
      expect(byKey.size).toBe(120);
      for (const row of rows) {
        const message = byKey.get(row.deduplication_key);
        expect(message?.body).toEqual(contractBody(row));
        expect(message?.brokerKey).toBe(row.deduplication_key);
        expect(message?.address).toBe(broker.addressOf(row.topic));
        if (message !== undefined) broker.checkEnvelope(message, row);
      }
    });

    it('a message published again is stored once, or comes again under the same key', async () => {
      const ids = await insertMessages(sql, 3);
      const test = buildTestRelay(db, { publisher, settings: BROKER_TEST_TIMEOUT });
      expect((await test.relay.drain()).published).toBe(3);
      // As if the relay had died after the broker's acknowledgement, before writing the outcome.
      await sql`update outbox_messages set status = 'pending', published_at = null where id = any(${ids}::uuid[])`;
      expect((await test.relay.drain()).published).toBe(3);

      for (const row of await outboxRows(sql, ids)) expect(row).toMatchObject({ status: 'published', attempts: 0 });
      const consumed = await broker.consume();
      expect(consumed).toHaveLength(broker.storesOnce ? 3 : 6);
      expect(new Set(consumed.map((message) => message.brokerKey)).size).toBe(3);
    });

    it('publishes hostile event ids at once: the exact key in the body, the documented form beside it', async () => {
      const keys = hostileKeys(uniqueId('evt'));
      const ids = await insertMessages(sql, keys.length, { keys });
      const test = buildTestRelay(db, { publisher, settings: BROKER_TEST_TIMEOUT });
      expect(await test.relay.drain()).toMatchObject({ published: keys.length, retried: 0, dead: 0 });
      for (const row of await outboxRows(sql, ids)) expect(row).toMatchObject({ status: 'published', attempts: 0 });

      const consumed = await broker.consume();
      expect(consumed).toHaveLength(keys.length);
      for (const key of keys) {
        const message = consumed.find((candidate) => candidate.body.deduplication_key === key);
        expect(message, key).toBeDefined();
        if (message !== undefined) await broker.checkTransportKey(message, key, documentedTransportKey(key));
      }
      // The plain key travels as it is; every other one as a digest of fixed length.
      expect(keys.map(documentedTransportKey).filter((form) => form.startsWith('sha256:'))).toHaveLength(6);
    });
  });
}
