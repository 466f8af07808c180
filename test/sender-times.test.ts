// Times senders put in their events, as real senders write them and as a hostile signed sender
// might: numbers in seconds or milliseconds and date strings are read, an informational time that
// cannot be stored is dropped (the event is kept), a required one out of range is a 400, and none of
// them is ever a 503 or an error-level log line. Also Svix's names for Standard Webhooks' headers.
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { enableSenders } from '../src/senders/registry.ts';
import { acmeEvent, signedHeaders, TEST_NOW_SECONDS, uniqueId } from './helpers/acme.ts';
import { buildTestApp } from './helpers/app.ts';
import { useTestDatabase } from './helpers/database.ts';
import { countEvents, eventRow } from './helpers/facts.ts';
import {
  allSchemeSecrets,
  type SchemeName,
  type Sender,
  shopifySender,
  slackEventCallback,
  slackSender,
  standardSender,
  stripeEvent,
  stripeSender,
} from './helpers/senders.ts';

const { sql, db } = await useTestDatabase();
const test = await buildTestApp(db, {
  enabledSenders: await enableSenders({ ...allSchemeSecrets(), acme: ['test-acme-secret-current'] }),
});

/** The stored occurrence time, as the database holds it (null: stored without one). */
async function occurredAt(provider: string, eventId: string): Promise<string | null | undefined> {
  const [row] = await sql<{ occurred_at: string | null }[]>`
    select to_char(occurred_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as occurred_at
    from webhook_events where provider = ${provider} and event_id = ${eventId}`;
  return row === undefined ? undefined : row.occurred_at;
}

/** No log line at error level: nothing a sender controls may page an operator. */
function errorLines(): string[] {
  return test.logs.filter((line) => (JSON.parse(line) as { level: string }).level === 'error');
}

async function send(sender: Sender, body: string, eventId: string, extra: Record<string, string> = {}) {
  const headers = { ...(await sender.headers({ body, eventId })), ...extra };
  return test.request(`/webhooks/${sender.name as SchemeName}`, { method: 'POST', body, headers });
}

const clerkMs = 1712345678901;
const clerkIso = '2024-04-05T19:34:38.901Z';

describe('Standard Webhooks payload timestamps, as senders write them', () => {
  it.each([
    ['Clerk unix milliseconds', clerkMs, clerkIso],
    ['unix seconds', 1712345678, '2024-04-05T19:34:38.000Z'],
    ['unix seconds as a string', '1712345678', '2024-04-05T19:34:38.000Z'],
    ['an RFC 3339 string', '2024-04-05T21:34:38.901+02:00', clerkIso],
    ['an HTTP date', 'Fri, 05 Apr 2024 19:34:38 GMT', '2024-04-05T19:34:38.000Z'],
  ])('%s: accepted, its time stored', async (_name, timestamp, expected) => {
    const eventId = uniqueId('msg');
    const body = JSON.stringify({ type: 'user.created', object: 'event', timestamp, data: { id: uniqueId('user') } });
    const response = await send(standardSender, body, eventId);
    expect(response.status).toBe(200);
    expect(await occurredAt('standard', eventId)).toBe(expected);
  });

  it.each([
    ['not a date', 'yesterday-ish'],
    ['an object', { seconds: 1 }],
    ['a boolean', true],
    ['year 0000', '0000-01-01T00:00:00Z'],
    ['year +275760', '+275760-09-13T00:00:00Z'],
    ['milliseconds past year 9999', 8.64e15],
    ['beyond 2^53', '__9007199254740993__'],
    ['1e400', '__1e400__'],
    ['negative milliseconds before year 1', -8.64e15],
  ])('%s: stored without an occurrence time, never refused', async (_name, timestamp) => {
    const eventId = uniqueId('msg');
    // `__N__` stands for the number N written exactly, as JSON.stringify cannot.
    const body = JSON.stringify({ type: 'user.created', timestamp, data: {} }).replace(/"__([^_]+)__"/, '$1');
    const response = await send(standardSender, body, eventId);
    expect(response.status).toBe(200);
    expect(await eventRow(sql, eventId, 'standard')).toMatchObject({ status: 'ignored' });
    expect(await occurredAt('standard', eventId)).toBeNull();
    expect(errorLines()).toEqual([]);
  });
});

describe('times out of range', () => {
  it.each([
    ['in milliseconds', TEST_NOW_SECONDS * 1000],
    ['from 3e11 up', 3e11],
    ['beyond 2^53', 2 ** 53 + 2],
  ])('acme `created` %s (required) -> 400, no row', async (_name, created) => {
    const event = acmeEvent({ created });
    const body = JSON.stringify(event);
    const response = await test.request('/webhooks/acme', { method: 'POST', body, headers: await signedHeaders(body) });
    expect(response.status).toBe(400);
    expect(await response.text()).toBe('{"error":"invalid_payload"}');
    expect(await countEvents(sql, event.id)).toBe(0);
  });

  it('acme `created` at 9999-12-31T23:59:59Z is still a time', async () => {
    const event = acmeEvent({ type: 'customer.note', created: 253402300799 });
    const body = JSON.stringify(event);
    const response = await test.request('/webhooks/acme', { method: 'POST', body, headers: await signedHeaders(body) });
    expect(response.status).toBe(200);
    expect(await occurredAt('acme', event.id)).toBe('9999-12-31T23:59:59.000Z');
  });

  it.each([
    ['in milliseconds', TEST_NOW_SECONDS * 1000],
    ['3e11', 3e11],
    ['2^53 - 1', 9007199254740991],
    ['a string', 'soon'],
  ])('Stripe `created` %s: stored without it', async (_name, created) => {
    const event = stripeEvent('invoice.paid', { id: uniqueId('in'), object: 'invoice' }, created as number);
    const response = await send(stripeSender, JSON.stringify(event), event.id);
    expect(response.status).toBe(200);
    expect(await eventRow(sql, event.id, 'stripe')).toMatchObject({ status: 'ignored' });
    expect(await occurredAt('stripe', event.id)).toBeNull();
    expect(errorLines()).toEqual([]);
  });

  it('a Stripe subscription event, whose handler versions by `created`, in milliseconds -> 400, no row', async () => {
    const event = stripeEvent(
      'customer.subscription.updated',
      { id: uniqueId('sub'), object: 'subscription', status: 'active' },
      TEST_NOW_SECONDS * 1000,
    );
    const response = await send(stripeSender, JSON.stringify(event), event.id);
    expect(response.status).toBe(400);
    expect(await countEvents(sql, event.id)).toBe(0);
  });

  it.each([
    ['2^53 - 1', 9007199254740991],
    ['in milliseconds', TEST_NOW_SECONDS * 1000],
    ['a string', 'later'],
  ])('Slack `event_time` %s: stored without it', async (_name, eventTime) => {
    const event = slackEventCallback({ event_time: eventTime });
    const response = await send(slackSender, JSON.stringify(event), event.event_id);
    expect(response.status).toBe(200);
    expect(await occurredAt('slack', event.event_id)).toBeNull();
    expect(errorLines()).toEqual([]);
  });

  it.each([
    ['year 0000', '0000-01-01T00:00:00Z'],
    ['year +275760', '+275760-09-13T00:00:00Z'],
    ['year 10000', '10000-01-01T00:00:00Z'],
    ['not a date', 'now'],
  ])('Shopify `X-Shopify-Triggered-At` %s: stored without it', async (_name, triggeredAt) => {
    const delivery = shopifySender.newEvent();
    const response = await send(shopifySender, delivery.body, delivery.eventId, {
      'x-shopify-triggered-at': triggeredAt,
    });
    expect(response.status).toBe(200);
    expect(await occurredAt('shopify', delivery.eventId)).toBeNull();
    expect(errorLines()).toEqual([]);
  });

  it('the same, in async mode: 202 and the row stored without a time', async () => {
    const queued = await buildTestApp(db, {
      enabledSenders: await enableSenders(allSchemeSecrets()),
      config: { PROCESSING_MODE: 'async' },
    });
    const eventId = uniqueId('msg');
    const body = JSON.stringify({ type: 'user.created', timestamp: '+275760-09-13T00:00:00Z', data: {} });
    const response = await queued.request('/webhooks/standard', {
      method: 'POST',
      body,
      headers: await standardSender.headers({ body, eventId }),
    });
    expect([200, 202]).toContain(response.status);
    expect(await occurredAt('standard', eventId)).toBeNull();
  });
});

describe("Svix's header names on the standard route", () => {
  /** Signed with the Standard Webhooks library, sent under Svix's names as Svix sends them. */
  async function svixHeaders(body: string, eventId: string, secret = standardSender.secrets[0]) {
    const signature = new Webhook(secret).sign(eventId, new Date(TEST_NOW_SECONDS * 1000), body);
    return {
      'content-type': 'application/json',
      'svix-id': eventId,
      'svix-timestamp': String(TEST_NOW_SECONDS),
      'svix-signature': signature,
    };
  }

  it('accepts svix-id, svix-timestamp and svix-signature, stored under svix-id', async () => {
    const eventId = uniqueId('msg');
    const body = JSON.stringify({ type: 'email.sent', timestamp: clerkMs, data: { id: uniqueId('em') } });
    const response = await test.request('/webhooks/standard', {
      method: 'POST',
      body,
      headers: await svixHeaders(body, eventId),
    });
    expect(response.status).toBe(200);
    expect(await eventRow(sql, eventId, 'standard')).toMatchObject({ event_type: 'email.sent', status: 'ignored' });
    expect(await occurredAt('standard', eventId)).toBe(clerkIso);
  });

  it.each([
    ['a stranger key', async (body: string, id: string) => svixHeaders(body, id, standardSender.strangerSecret)],
    [
      'svix-id changed after signing',
      async (body: string, id: string) => ({ ...(await svixHeaders(body, id)), 'svix-id': uniqueId('msg') }),
    ],
    [
      'the two sets mixed: svix-signature with webhook-id and webhook-timestamp',
      async (body: string, id: string) => {
        const { 'svix-id': svixId, 'svix-timestamp': ts, ...rest } = await svixHeaders(body, id);
        return { ...rest, 'webhook-id': svixId, 'webhook-timestamp': ts };
      },
    ],
  ])('%s -> 401, no row', async (_name, headersFor) => {
    const eventId = uniqueId('msg');
    const body = JSON.stringify({ type: 'email.sent', data: {} });
    const response = await test.request('/webhooks/standard', {
      method: 'POST',
      body,
      headers: await headersFor(body, eventId),
    });
    expect(response.status).toBe(401);
    expect(await countEvents(sql, eventId)).toBe(0);
  });
});
