// What each scheme does beyond the shared suite: signature lists (Standard Webhooks' v1a entries,
// Stripe's several v1), Slack's protocol messages, where types and ids come from, and which
// authentic deliveries are still refused for their payload. Each asserts what was stored.
import { describe, expect, it } from 'vitest';
import { enableProviders } from '../src/providers/registry.ts';
import { MAX_SIGNATURES } from '../src/providers/scheme.ts';
import { TEST_NOW_SECONDS, uniqueId } from './helpers/acme.ts';
import { buildTestApp } from './helpers/app.ts';
import { useTestDatabase } from './helpers/database.ts';
import { countEvents, eventRow, providerRows } from './helpers/facts.ts';
import {
  allSchemeSecrets,
  githubHeaders,
  githubSender,
  type SchemeName,
  type Sender,
  shopifySender,
  slackEventCallback,
  slackSender,
  standardSender,
  stripeEvent,
  stripeHeader,
  stripeSender,
} from './helpers/senders.ts';

const { sql, db } = await useTestDatabase();
const test = await buildTestApp(db, { enabledProviders: await enableProviders(allSchemeSecrets()) });

const post = (name: SchemeName, body: string, headers: Record<string, string>) =>
  test.request(`/webhooks/${name}`, { method: 'POST', body, headers });

/** Signs `body` as `sender` would, with `eventId` where the scheme carries the id in a header. */
async function send(sender: Sender, body: string, eventId = uniqueId('id')) {
  return post(sender.name, body, await sender.headers({ body, eventId }));
}

describe('Standard Webhooks signature lists', () => {
  const signature = async (body: string, eventId: string, secret?: string) =>
    (await standardSender.headers({ body, eventId }, { secret }))['webhook-signature'] ?? '';

  it('skips v1a entries and accepts the v1 entry among them', async () => {
    const delivery = standardSender.newEvent();
    const headers = await standardSender.headers(delivery);
    const asymmetric = `v1a,${Buffer.alloc(64, 7).toString('base64')}`;
    const response = await post('standard', delivery.body, {
      ...headers,
      'webhook-signature': `${asymmetric} ${headers['webhook-signature']}`,
    });
    expect(response.status).toBe(200);
    expect((await eventRow(sql, delivery.eventId, 'standard'))?.status).toBe('ignored');
  });

  it('accepts a sender rotating its secret: one entry per secret, the first from a key we lack', async () => {
    const delivery = standardSender.newEvent();
    const headers = await standardSender.headers(delivery);
    const theirs = await signature(delivery.body, delivery.eventId, standardSender.strangerSecret);
    const response = await post('standard', delivery.body, {
      ...headers,
      'webhook-signature': `${theirs} ${headers['webhook-signature']}`,
    });
    expect(response.status).toBe(200);
    expect(await countEvents(sql, delivery.eventId)).toBe(1);
  });

  it(`refuses more than ${MAX_SIGNATURES} signatures, even with a valid one among them`, async () => {
    const delivery = standardSender.newEvent();
    const headers = await standardSender.headers(delivery);
    const filler = await signature(delivery.body, delivery.eventId, standardSender.strangerSecret);
    const entries = [...Array.from({ length: MAX_SIGNATURES }, () => filler), headers['webhook-signature']];
    const response = await post('standard', delivery.body, { ...headers, 'webhook-signature': entries.join(' ') });
    expect(response.status).toBe(401);
    expect(await countEvents(sql, delivery.eventId)).toBe(0);
  });

  it('takes the type and the occurrence time from the payload; 400 without a type', async () => {
    const delivery = standardSender.newEvent();
    expect((await post('standard', delivery.body, await standardSender.headers(delivery))).status).toBe(200);
    expect((await eventRow(sql, delivery.eventId, 'standard'))?.event_type).toBe('invoice.paid');

    const untyped = { eventId: uniqueId('msg'), body: JSON.stringify({ data: {} }) };
    const response = await post('standard', untyped.body, await standardSender.headers(untyped));
    expect(response.status).toBe(400);
    expect(await response.text()).toBe('{"error":"invalid_payload"}');
    expect(await countEvents(sql, untyped.eventId)).toBe(0);
  });
});

describe('Stripe-Signature', () => {
  it('tries every v1: a wrong first one and a right second one are accepted', async () => {
    const delivery = stripeSender.newEvent();
    const right = stripeHeader(delivery.body);
    const wrong = stripeHeader(delivery.body, { secret: stripeSender.strangerSecret });
    const v1 = (header: string) => header.split(',')[1] ?? '';
    const header = `t=${TEST_NOW_SECONDS},${v1(wrong)},${v1(right)}`;
    expect(v1(wrong)).not.toBe(v1(right));

    const response = await post('stripe', delivery.body, {
      'content-type': 'application/json',
      'stripe-signature': header,
    });
    expect(response.status).toBe(200);
    expect((await eventRow(sql, delivery.eventId, 'stripe'))?.status).toBe('ignored');
  });

  it('ignores v0 and unknown schemes next to a valid v1', async () => {
    const delivery = stripeSender.newEvent();
    const header = `${stripeHeader(delivery.body)},v0=${'0'.repeat(64)},v9=whatever`;
    expect(
      (await post('stripe', delivery.body, { 'content-type': 'application/json', 'stripe-signature': header })).status,
    ).toBe(200);
    expect(await countEvents(sql, delivery.eventId)).toBe(1);
  });

  it('refuses authentic bodies that are not snapshot events with 400, storing nothing', async () => {
    const thin = {
      id: uniqueId('evt'),
      object: 'v2.core.event',
      type: 'v1.billing.meter.error_report_triggered',
      created: '2026-01-01T00:00:00.000Z',
    };
    const noId = { ...stripeEvent('invoice.paid', {}), id: undefined };
    for (const event of [thin, noId]) {
      const body = JSON.stringify(event);
      const response = await post('stripe', body, {
        'content-type': 'application/json',
        'stripe-signature': stripeHeader(body),
      });
      expect(response.status).toBe(400);
    }
    expect(await countEvents(sql, thin.id)).toBe(0);
  });
});

describe('Slack protocol messages', () => {
  it('answers a signed url_verification with its challenge and stores nothing', async () => {
    const before = (await providerRows(sql, 'slack')).length;
    const challenge = '3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P';
    const body = JSON.stringify({ token: 'Jhj5dZrVaK7ZwHHjRyZWjbDl', challenge, type: 'url_verification' });

    const response = await send(slackSender, body);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/json');
    expect(await response.text()).toBe(JSON.stringify({ challenge }));
    expect((await providerRows(sql, 'slack')).length).toBe(before);
    expect(test.logs.some((line) => line.includes('"reason":"url_verification"'))).toBe(true);
  });

  it('refuses an unsigned url_verification without echoing the challenge', async () => {
    const body = JSON.stringify({ challenge: 'echo-me', type: 'url_verification' });
    const headers = await slackSender.headers({ body, eventId: '' }, { secret: slackSender.strangerSecret });
    const response = await post('slack', body, headers);
    expect(response.status).toBe(401);
    expect(await response.text()).toBe('{"error":"unauthorized"}');
  });

  it('acknowledges app_rate_limited without storing it', async () => {
    const before = (await providerRows(sql, 'slack')).length;
    const body = JSON.stringify({
      token: 't',
      type: 'app_rate_limited',
      team_id: 'T1',
      minute_rate_limited: 1518467820,
    });
    const response = await send(slackSender, body);
    expect(await response.text()).toBe('{"received":true}');
    expect((await providerRows(sql, 'slack')).length).toBe(before);
    expect(test.logs.some((line) => line.includes('"reason":"app_rate_limited"'))).toBe(true);
  });

  it('stores event_callback under its event_id, typed by the inner event', async () => {
    const event = slackEventCallback({ event: { type: 'reaction_added', reaction: 'tada' } });
    expect((await send(slackSender, JSON.stringify(event))).status).toBe(200);
    expect(await eventRow(sql, event.event_id, 'slack')).toMatchObject({
      event_type: 'reaction_added',
      status: 'ignored',
    });

    const unknownEnvelope = JSON.stringify({ type: 'block_actions', event_id: uniqueId('Ev') });
    expect((await send(slackSender, unknownEnvelope)).status).toBe(400);
  });
});

describe('GitHub and Shopify metadata headers', () => {
  it('types GitHub events as event.action when the payload has an action, else the event', async () => {
    const opened = githubSender.newEvent();
    expect((await post('github', opened.body, await githubSender.headers(opened))).status).toBe(200);
    expect((await eventRow(sql, opened.eventId, 'github'))?.event_type).toBe('issues.opened');

    const ping = { eventId: crypto.randomUUID(), body: JSON.stringify({ zen: uniqueId('zen'), hook_id: 1 }) };
    const headers = { ...(await githubSender.headers(ping)), ...githubHeaders(ping.eventId, 'ping') };
    expect((await post('github', ping.body, headers)).status).toBe(200);
    expect((await eventRow(sql, ping.eventId, 'github'))?.event_type).toBe('ping');
  });

  it.each([
    ['github', githubSender, 'x-github-delivery'],
    ['github', githubSender, 'x-github-event'],
    ['shopify', shopifySender, 'x-shopify-webhook-id'],
    ['shopify', shopifySender, 'x-shopify-topic'],
  ] as const)('%s: an authentic body without %s is 400 and stores nothing', async (name, sender, header) => {
    const delivery = sender.newEvent();
    const headers = await sender.headers(delivery);
    const before = (await providerRows(sql, name)).length;
    const response = await post(name, delivery.body, { ...headers, [header]: '' });
    expect(response.status).toBe(400);
    expect((await providerRows(sql, name)).length).toBe(before);
  });

  it('accepts Shopify’s un-prefixed header set', async () => {
    const delivery = shopifySender.newEvent();
    const prefixed = await shopifySender.headers(delivery);
    const unprefixed = Object.fromEntries(
      Object.entries(prefixed).map(([name, value]) => [name.replace(/^x-shopify-/, 'shopify-'), value]),
    );
    expect((await post('shopify', delivery.body, unprefixed)).status).toBe(200);
    expect(await eventRow(sql, delivery.eventId, 'shopify')).toMatchObject({ event_type: 'orders/create' });
  });
});
