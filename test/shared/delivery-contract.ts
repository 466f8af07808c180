// One suite of signed deliveries, run against every runtime that serves the app: in Node through
// app.request (test/delivery-contract.test.ts) and inside workerd through the Worker entry and its
// Hyperdrive binding (test/worker/delivery-contract.test.ts), and in Node in async mode
// (test/async-delivery-contract.test.ts), where an applied event is answered 202 and a worker pass
// applies it before the rows are read. Same requests, same answers, same rows.
import type postgres from 'postgres';
import { describe, expect, it } from 'vitest';
import { type AcmeEventShape, acmeEvent, signedHeaders, uniqueId } from '../helpers/acme.ts';
import { countEvents, eventRow, subscriptionRow } from '../helpers/facts.ts';

export interface DeliveryTarget {
  /** Sends one request to the service under test; `path` starts with a slash. */
  request(path: string, init: RequestInit): Promise<Response>;
  /** A plain postgres.js client on the service's database, for reading facts back. */
  sql: postgres.Sql;
  /** Async mode: the answer to an event that will be applied, and one worker pass that applies it. */
  async?: { settle(): Promise<unknown> };
}

const APPLIED = '200 {"received":true}';
const QUEUED = '202 {"received":true,"queued":true}';

/** Both runtimes read the wall clock, so events are signed at the real "now". */
const nowSeconds = () => Math.floor(Date.now() / 1000);

const freshEvent = (overrides: Partial<AcmeEventShape> = {}) => acmeEvent({ created: nowSeconds() - 10, ...overrides });

interface Delivery {
  path: string;
  body: string;
  headers: Record<string, string>;
}

async function delivery(event: object, path = '/webhooks/acme'): Promise<Delivery> {
  const body = JSON.stringify(event);
  return { path, body, headers: await signedHeaders(body, { timestamp: nowSeconds() }) };
}

const send = (to: DeliveryTarget, { path, body, headers }: Delivery) =>
  to.request(path, { method: 'POST', body, headers });

async function answer(response: Response): Promise<string> {
  return `${response.status} ${await response.text()}`;
}

export function describeDeliveryContract(runtime: string, target: () => DeliveryTarget): void {
  const deliver = async (event: object, path?: string) => send(target(), await delivery(event, path));
  const applied = () => (target().async === undefined ? APPLIED : QUEUED);
  const settle = async () => {
    await target().async?.settle();
  };

  describe(`signed deliveries (${runtime})`, () => {
    it('applies a valid event: 200, the row completed, the subscription changed', async () => {
      const { sql } = target();
      const event = freshEvent({ version: 7, data: { id: uniqueId('sub'), status: 'past_due' } });

      expect(await answer(await deliver(event))).toBe(applied());
      await settle();
      const row = await eventRow(sql, event.id);
      expect(row).toMatchObject({ status: 'completed', event_type: 'subscription.updated', attempt_count: 0 });
      expect(row?.completed_at).toBeInstanceOf(Date);
      expect(row?.payload).toEqual(event);
      const subscription = await subscriptionRow(sql, String(event.data.id));
      expect(subscription).toMatchObject({ status: 'past_due', provider_version: '7' });
      expect(subscription?.updated_at.getTime()).toBe(event.created * 1000);
    });

    it('answers a redelivery as a duplicate and changes nothing', async () => {
      const { sql } = target();
      const event = freshEvent({ version: 3 });
      expect(await answer(await deliver(event))).toBe(applied());
      await settle();
      const first = await eventRow(sql, event.id);

      expect(await answer(await deliver(event))).toBe('200 {"received":true,"duplicate":true}');
      expect(await countEvents(sql, event.id)).toBe(1);
      expect((await eventRow(sql, event.id))?.completed_at).toEqual(first?.completed_at);
      expect(await subscriptionRow(sql, String(event.data.id))).toMatchObject({ provider_version: '3' });
    });

    it('settles twenty concurrent deliveries of one event: one applied, nineteen duplicates', async () => {
      const { sql } = target();
      const event = freshEvent({ version: 5 });
      const request = await delivery(event);
      const answers = await Promise.all(Array.from({ length: 20 }, async () => answer(await send(target(), request))));

      expect(answers.filter((text) => text === applied())).toHaveLength(1);
      expect(answers.filter((text) => text === '200 {"received":true,"duplicate":true}')).toHaveLength(19);
      await settle();
      expect(await countEvents(sql, event.id)).toBe(1);
      expect(await eventRow(sql, event.id)).toMatchObject({ status: 'completed', attempt_count: 0 });
      expect(await subscriptionRow(sql, String(event.data.id))).toMatchObject({ provider_version: '5' });
    });

    it('applies an event carrying numbers beyond a double, and stores them as signed', async () => {
      const { sql } = target();
      const event = freshEvent({ version: 2 });
      // Written by hand: JSON.stringify cannot write them. This runtime's JSON.parse must hand over
      // each number's text for them to be read exactly (src/lib/json.ts); without it they are refused.
      const body = JSON.stringify(event).replace(
        '"data":{',
        '"data":{"order_ref":820982911946154508,"rate":0.1000000000000000055511,',
      );
      const response = await target().request('/webhooks/acme', {
        method: 'POST',
        body,
        headers: await signedHeaders(body, { timestamp: nowSeconds() }),
      });

      expect(await answer(response)).toBe(applied());
      await settle();
      const [row] = await sql<{ status: string; order_ref: string; rate: string }[]>`
        select status, payload->'data'->>'order_ref' as order_ref, payload->'data'->>'rate' as rate
        from webhook_events where provider = 'acme' and event_id = ${event.id}`;
      expect(row).toEqual({ status: 'completed', order_ref: '820982911946154508', rate: '0.1000000000000000055511' });
    });

    it('refuses a bad signature with 401 and stores nothing', async () => {
      const { sql } = target();
      const event = freshEvent();
      const body = JSON.stringify(event);
      const forged = await signedHeaders(body, { secret: 'not-the-secret', timestamp: nowSeconds() });
      const response = await target().request('/webhooks/acme', { method: 'POST', body, headers: forged });

      expect(await answer(response)).toBe('401 {"error":"unauthorized"}');
      expect(response.headers.get('content-type')).toBe('application/json');
      expect(await countEvents(sql, event.id)).toBe(0);
      expect(await subscriptionRow(sql, String(event.data.id))).toBeUndefined();
    });

    it('gives every other outcome the same answer and row', async () => {
      const { sql } = target();
      const ignored = freshEvent({ type: 'invoice.paid', data: { anything: ['goes', 1] } });
      const parked = freshEvent({ api_version: '2031-01-01' });
      const invalid = freshEvent({ data: { id: uniqueId('sub'), status: 'sleeping' } });
      const oversized = freshEvent({ data: { id: uniqueId('sub'), status: 'active', pad: 'x'.repeat(300_000) } });
      const plainText = await delivery(freshEvent());

      expect(await answer(await deliver(ignored))).toBe('200 {"received":true}');
      expect((await eventRow(sql, ignored.id))?.status).toBe('ignored');
      expect(await answer(await deliver(parked))).toBe('202 {"received":true,"queued":true}');
      expect(await eventRow(sql, parked.id)).toMatchObject({ status: 'parked', completed_at: null });
      expect(await answer(await deliver(invalid))).toBe('400 {"error":"invalid_payload"}');
      expect(await answer(await deliver(oversized))).toBe('413 {"error":"payload_too_large"}');
      expect(await answer(await deliver(freshEvent(), '/webhooks/stripe'))).toBe('404 {"error":"not_found"}');
      plainText.headers['content-type'] = 'text/plain';
      expect(await answer(await send(target(), plainText))).toBe('415 {"error":"unsupported_media_type"}');
      expect(await countEvents(sql, invalid.id)).toBe(0);
      expect(await countEvents(sql, oversized.id)).toBe(0);
    });

    it('writes the messages it enqueues with time-ordered ids: UUIDv7, increasing as they are made', async () => {
      const { sql } = target();
      const events = Array.from({ length: 5 }, () => freshEvent({ data: { id: uniqueId('sub'), status: 'active' } }));
      for (const event of events) {
        expect(await answer(await deliver(event))).toBe(applied());
        await settle();
      }
      const keys = events.map((event) => `acme:${event.id}:subscription.changed`);
      const rows = await sql<{ id: string; deduplication_key: string; created_at: Date }[]>`
        select id::text, deduplication_key, created_at from outbox_messages
        where deduplication_key in ${sql(keys)} order by created_at, id`;

      // In the order the events were delivered, and in the order the database wrote them.
      const inDeliveryOrder = keys.map((key) => rows.find((row) => row.deduplication_key === key)?.id);
      const sorted = rows.map((row) => row.id).sort();
      expect(inDeliveryOrder).toEqual(sorted);
      expect(rows.map((row) => row.id)).toEqual(sorted);
      expect(new Set(sorted).size).toBe(events.length);
      for (const row of rows) {
        // Version 7, RFC 9562 variant; its first 48 bits are the millisecond it was made.
        expect(row.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
        const madeAt = Number.parseInt(row.id.slice(0, 8) + row.id.slice(9, 13), 16);
        expect(Math.abs(madeAt - row.created_at.getTime())).toBeLessThan(60_000);
      }
    });

    it('is ready on a migrated database', async () => {
      expect(await answer(await target().request('/healthz', { method: 'GET' }))).toBe('200 {"status":"ok"}');
      expect(await answer(await target().request('/readyz', { method: 'GET' }))).toBe('200 {"status":"ready"}');
    });
  });
}
