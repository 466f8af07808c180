// The stored payload is what was signed: numbers JavaScript cannot hold (ids beyond 2^53, 1e400,
// 1e-400) are stored exactly, reach handlers exactly (a bigint for an integer) on arrival and again
// on a replay of what was stored, and numbers jsonb could not hold are a 400 with nothing stored.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineHandler, type HandlerMap } from '../src/domain/handlers.ts';
import { applyStoredEvent } from '../src/inbox/stored.ts';
import { LosslessNumber, parseJsonText } from '../src/lib/json.ts';
import { allSenders, enableSenders } from '../src/senders/registry.ts';
import { acmeEvent, signedHeaders, uniqueId } from './helpers/acme.ts';
import { buildTestApp } from './helpers/app.ts';
import { useTestDatabase } from './helpers/database.ts';
import { countEvents, eventRow } from './helpers/facts.ts';
import { allSenderSecrets, shopifySender } from './helpers/senders.ts';

const { sql, db } = await useTestDatabase();
const acmeOnly = new Map(allSenders.filter((sender) => sender.name === 'acme').map((sender) => [sender.name, sender]));

/** An acme event whose `data` carries `numbers` written exactly as given (JSON.stringify cannot). */
function bodyWith(type: string, numbers: Record<string, string>, id = uniqueId('evt')): string {
  const written = Object.entries(numbers).map(([name, text]) => `,"${name}":${text}`);
  const event = acmeEvent({ id, type, data: { id: uniqueId('sub'), status: 'active' } });
  return JSON.stringify(event).replace(/"status":"active"/, `"status":"active"${written.join('')}`);
}

/** A handler for `order.created` that keeps what it was given. */
function recordingHandlers(seen: unknown[], fail = false): HandlerMap {
  return {
    acme: {
      'order.created': defineHandler({
        schema: z.looseObject({ data: z.looseObject({ order_id: z.bigint(), customer_id: z.bigint() }) }),
        apply: async (_context, payload) => {
          seen.push(payload.data);
          if (fail) throw new Error('ledger down');
        },
      }),
    },
  };
}

const numbers = {
  order_id: '820982911946154508',
  customer_id: '115310627314723954',
  big: '1e400',
  tiny: '1e-400',
  precise: '0.1000000000000000055511151231257827',
  plain: '42',
};

describe('payload numbers, exactly as signed', () => {
  it('stores every number exactly (ids beyond 2^53, 1e400, 1e-400)', async () => {
    const test = await buildTestApp(db);
    const id = uniqueId('evt');
    const body = bodyWith('customer.note', numbers, id);
    const response = await test.request('/webhooks/acme', { method: 'POST', body, headers: await signedHeaders(body) });
    expect(response.status).toBe(200);
    const [row] = await sql<Record<string, string>[]>`
      select payload->'data'->>'order_id' as order_id, payload->'data'->>'customer_id' as customer_id,
        (payload->'data'->>'big')::numeric = 1e400 as big, (payload->'data'->>'tiny')::numeric = 1e-400 as tiny,
        (payload->'data'->>'tiny')::numeric > 0 as tiny_positive,
        payload->'data'->>'precise' as precise, payload->'data'->>'plain' as plain
      from webhook_events where provider = 'acme' and event_id = ${id}`;
    expect(row).toEqual({
      order_id: '820982911946154508',
      customer_id: '115310627314723954',
      big: true,
      tiny: true,
      tiny_positive: true,
      precise: '0.1000000000000000055511151231257827',
      plain: '42',
    });
  });

  it("stores Shopify's order id exactly", async () => {
    const test = await buildTestApp(db, { enabledSenders: await enableSenders(allSenderSecrets()) });
    const delivery = { eventId: crypto.randomUUID(), body: '{"id":820982911946154508,"email":"x@example.com"}' };
    const response = await test.request('/webhooks/shopify', {
      method: 'POST',
      body: delivery.body,
      headers: await shopifySender.headers(delivery),
    });
    expect(response.status).toBe(200);
    const [row] = await sql<{ id: string }[]>`select payload->>'id' as id from webhook_events
      where provider = 'shopify' and event_id = ${delivery.eventId}`;
    expect(row?.id).toBe('820982911946154508');
  });

  it('gives handlers exact ids on arrival, and the same on a replay of what was stored', async () => {
    const seen: unknown[] = [];
    const test = await buildTestApp(db, { handlers: recordingHandlers(seen, true) });
    const id = uniqueId('evt');
    const body = bodyWith('order.created', numbers, id);
    const response = await test.request('/webhooks/acme', { method: 'POST', body, headers: await signedHeaders(body) });
    expect(response.status).toBe(500);
    expect((await eventRow(sql, id))?.status).toBe('failed');
    // Group commit may have run it twice (in the batch, then on its own): each saw the same values.
    const onArrival = seen.length;
    expect(onArrival).toBeGreaterThan(0);

    const replayed = await applyStoredEvent(
      { db, handlers: recordingHandlers(seen), sendersByName: acmeOnly },
      { provider: 'acme', eventId: id },
      { from: ['failed'], onFailure: { retryAt: new Date() } },
    );
    expect(replayed).toEqual({ outcome: 'completed' });
    expect(seen).toHaveLength(onArrival + 1);
    for (const data of seen) {
      expect(data).toMatchObject({
        order_id: 820982911946154508n,
        customer_id: 115310627314723954n,
        big: 10n ** 400n,
        plain: 42,
      });
      const { tiny } = data as { tiny: unknown };
      expect(tiny).toBeInstanceOf(LosslessNumber);
      // As written on arrival; as jsonb prints it (every digit) on the replay.
      expect((tiny as LosslessNumber).value).toMatch(/^(1e-400|0\.0{399}1)$/);
    }
  });

  it.each([
    ['more than 1000 integer digits', '1e1000'],
    ['more than 1000 fraction digits', '1e-1001'],
    ['beyond numeric (1e131072)', '1e131072'],
    ['below numeric (1e-16384)', '1e-16384'],
    ['a 1001-digit integer', `1${'0'.repeat(1000)}`],
  ])('%s -> 400, no row', async (_name, text) => {
    const test = await buildTestApp(db);
    const id = uniqueId('evt');
    const body = bodyWith('customer.note', { n: text }, id);
    const response = await test.request('/webhooks/acme', { method: 'POST', body, headers: await signedHeaders(body) });
    expect(response.status).toBe(400);
    expect(await response.text()).toBe('{"error":"invalid_payload"}');
    expect(await countEvents(sql, id)).toBe(0);
  });

  it("refuses a repeated key's earlier value beyond numeric, though the last value is fine -> 400, no row", async () => {
    const test = await buildTestApp(db);
    const id = uniqueId('evt');
    const body = bodyWith('customer.note', { n: '1e131072' }, id).replace('"n":1e131072', '"n":1e131072,"n":1');
    const response = await test.request('/webhooks/acme', { method: 'POST', body, headers: await signedHeaders(body) });
    expect(response.status).toBe(400);
    expect(await countEvents(sql, id)).toBe(0);
  });

  it('keeps the last of repeated keys, as jsonb does, where the exact parse runs', async () => {
    const seen: unknown[] = [];
    const test = await buildTestApp(db, { handlers: recordingHandlers(seen) });
    const id = uniqueId('evt');
    const body = bodyWith('order.created', { order_id: '1', customer_id: numbers.customer_id }, id).replace(
      '"order_id":1',
      '"order_id":1,"order_id":820982911946154508',
    );
    const response = await test.request('/webhooks/acme', { method: 'POST', body, headers: await signedHeaders(body) });
    expect(response.status).toBe(200);
    expect(seen).toEqual([expect.objectContaining({ order_id: 820982911946154508n })]);
    const [row] = await sql<{ order_id: string }[]>`select payload->'data'->>'order_id' as order_id
      from webhook_events where provider = 'acme' and event_id = ${id}`;
    expect(row?.order_id).toBe('820982911946154508');
  });
});

describe('the two exact readers', () => {
  // Numbers JavaScript cannot hold, none beyond the bound: read natively (JSON.parse's reviver).
  const document = `{"a":820982911946154508,"b":[1.5e20,-0.1000000000000000055511151231257827,1e-50,-12345678901234567890,-0,7],"c":{"d":12345678901234567.5},"note":"%"}`;

  it('read every number alike, whichever runs', () => {
    const native = parseJsonText(document.replace('%', 'text'));
    // An exponent of 100 or more anywhere, even inside a string, sends the document to lossless-json.
    const lossless = parseJsonText(document.replace('%', 'e100'));
    const expected = {
      a: 820982911946154508n,
      b: [
        150000000000000000000n,
        new LosslessNumber('-0.1000000000000000055511151231257827'),
        1e-50,
        -12345678901234567890n,
        -0,
        7,
      ],
      c: { d: new LosslessNumber('12345678901234567.5') },
    };
    expect(native).toEqual({ ...expected, note: 'text' });
    expect(lossless).toEqual({ ...expected, note: 'e100' });
  });

  it('refuse a number beyond the bound, whichever runs', () => {
    expect(parseJsonText(`{"n":${'1'.repeat(899)}.${'1'.repeat(1001)}}`)).toBeUndefined();
    expect(parseJsonText('{"n":1e1000,"n":1}')).toBeUndefined();
  });
});
