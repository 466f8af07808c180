// GitHub and Shopify sign neither their delivery id nor a time: the same signed body must be a
// duplicate whatever id it comes under, change nothing, and never take over another delivery's row.
// Also the two-key insert under concurrency, across real connections, and the rule that decides
// which deliveries get the second key, on its own.
import { createHash } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineHandler, type HandlerMap } from '../src/domain/handlers.ts';
import { purgeByRetention } from '../src/inbox/retention.ts';
import { DomainRejection } from '../src/lib/errors.ts';
import { keysByContentDigest } from '../src/senders/content-digest.ts';
import { enableSenders } from '../src/senders/registry.ts';
import { buildTestApp, type TestApp } from './helpers/app.ts';
import { newCounter } from './helpers/counter.ts';
import { useTestDatabase } from './helpers/database.ts';
import { barrier, eventRow, providerRows } from './helpers/facts.ts';
import { outboxRowsByKeyPrefix } from './helpers/outbox.ts';
import { allSchemeSecrets, githubHeaders, githubSender, type Sender, shopifySender } from './helpers/senders.ts';

const { sql, db } = await useTestDatabase();
const enabledSenders = await enableSenders(allSchemeSecrets());

const sha256Hex = (text: string) => createHash('sha256').update(text).digest('hex');
const failing = defineHandler({
  schema: z.unknown(),
  async apply() {
    throw new DomainRejection('downstream refused');
  },
});

describe('keysByContentDigest: when the signed body keys an event beside its id', () => {
  // Every combination, each named by what it means: any change to the rule changes a row.
  it.each([
    // idInHeader, idSigned, timeSigned, keyed: why
    [true, false, false, true, 'GitHub, Shopify: any id will do and no age is refused'],
    [true, false, true, true, 'an unsigned header id under a signed time: the id still keys nothing'],
    [true, true, false, true, 'a signed header id with no time: the same delivery is valid forever'],
    [true, true, true, false, 'Standard Webhooks: a signed id under a signed time'],
    [false, false, false, true, 'an id in the signed body with no time: valid forever'],
    [false, true, false, true, 'the same, whatever idSigned says (it covers header ids only)'],
    [false, false, true, false, 'acme, Stripe, Slack: an id in the signed body under a signed time'],
    [false, true, true, false, 'the same, whatever idSigned says'],
  ] as Array<[boolean, boolean, boolean, boolean, string]>)(
    'idInHeader %s, idSigned %s, timeSigned %s: %s (%s)',
    (idInHeader, idSigned, timeSigned, keyed) => {
      expect(keysByContentDigest({ idInHeader, idSigned, timeSigned })).toBe(keyed);
    },
  );
});

const cases: Array<[string, Sender, string]> = [
  ['github', githubSender, 'issues.opened'],
  ['shopify', shopifySender, 'orders/create'],
];

describe.each(cases)('%s', (_name, sender, eventType) => {
  const app = async (handlers: HandlerMap, beforeStore?: () => Promise<void>) =>
    buildTestApp(db, { enabledSenders, handlers, beforeStore });
  const deliver = async (test: TestApp, body: string, id: string) =>
    test.request(`/webhooks/${sender.name}`, {
      method: 'POST',
      body,
      headers: await sender.headers({ body, eventId: id }),
    });
  const rowsWithDigest = async (body: string) =>
    (await providerRows(sql, sender.name)).filter((row) => row.content_digest === sha256Hex(body));

  it('never applies a captured body twice, however old: its digest outlives retention', async () => {
    const counter = await newCounter(sql);
    const test = await app({ [sender.name]: { [eventType]: counter.handler } });
    const { body, eventId } = sender.newEvent();
    expect((await deliver(test, body, eventId)).status).toBe(200);
    await sql`update webhook_events set completed_at = now() - interval '400 days', received_at = now() - interval '400 days'
      where provider = ${sender.name} and event_id = ${eventId}`;

    const purged = await purgeByRetention(
      db,
      { PAYLOAD_RETENTION_DAYS: 7, EVENT_RETENTION_DAYS: 30 },
      { nowMs: Date.now, budgetMs: 10_000 },
    );
    expect(purged.payloadsNulled).toBeGreaterThanOrEqual(1);
    expect(await eventRow(sql, eventId, sender.name)).toMatchObject({ status: 'completed', payload: null });

    const replayed = await deliver(test, body, crypto.randomUUID());
    expect(await replayed.text()).toBe('{"received":true,"duplicate":true}');
    expect(await counter.value()).toBe(1);
  });

  it('answers a body resent under a new delivery id as a duplicate, and changes nothing', async () => {
    const counter = await newCounter(sql);
    const test = await app({ [sender.name]: { [eventType]: counter.handler } });
    const { body, eventId } = sender.newEvent();

    expect(await (await deliver(test, body, eventId)).text()).toBe('{"received":true}');
    const stored = await eventRow(sql, eventId, sender.name);
    const resent = await deliver(test, body, crypto.randomUUID());

    expect(resent.status).toBe(200);
    expect(await resent.text()).toBe('{"received":true,"duplicate":true}');
    expect(await counter.value()).toBe(1);
    expect(await rowsWithDigest(body)).toEqual([stored]);
    expect(stored).toMatchObject({ status: 'completed', event_id: eventId });
  });

  it('takes back a failed row when its body comes back under a new id, and applies it once', async () => {
    const counter = await newCounter(sql);
    const { body, eventId } = sender.newEvent();
    const broken = await app({ [sender.name]: { [eventType]: failing } });
    expect((await deliver(broken, body, eventId)).status).toBe(500);
    expect(await eventRow(sql, eventId, sender.name)).toMatchObject({ status: 'failed', attempt_count: 1 });
    expect((await deliver(broken, body, crypto.randomUUID())).status).toBe(500);
    expect(await eventRow(sql, eventId, sender.name)).toMatchObject({ status: 'failed', attempt_count: 2 });

    const fixed = await app({ [sender.name]: { [eventType]: counter.handler } });
    const redelivered = await deliver(fixed, body, crypto.randomUUID());
    expect(await redelivered.text()).toBe('{"received":true}');
    expect(await counter.value()).toBe(1);
    const rows = await rowsWithDigest(body);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ event_id: eventId, status: 'completed', attempt_count: 2, last_error: null });
  });

  // Both intake paths: a group-commit batch, and one delivery on its own.
  it.each([
    ['in a batch', { maxBatch: 64, lanes: 4 }],
    ['on its own', undefined],
  ])(
    'hands the handler the first, stored id of a body taken back under a new id, and keys its message by it (%s)',
    async (_path, groupCommit) => {
      const { body, eventId } = sender.newEvent();
      const broken = await buildTestApp(db, {
        enabledSenders,
        handlers: { [sender.name]: { [eventType]: failing } },
        groupCommit,
      });
      expect((await deliver(broken, body, eventId)).status).toBe(500);

      const seen: string[] = [];
      const recording = defineHandler({
        schema: z.unknown(),
        async apply({ event, enqueue }) {
          seen.push(event.eventId);
          await enqueue({ topic: 'test.seen', payload: { eventId: event.eventId } });
        },
      });
      const fixed = await buildTestApp(db, {
        enabledSenders,
        handlers: { [sender.name]: { [eventType]: recording } },
        groupCommit,
      });
      const secondId = crypto.randomUUID();
      expect(await (await deliver(fixed, body, secondId)).text()).toBe('{"received":true}');

      expect(seen).toEqual([eventId]);
      const messages = await outboxRowsByKeyPrefix(sql, `${sender.name}:`);
      expect(messages.filter((row) => row.deduplication_key.includes(secondId))).toEqual([]);
      expect(messages.filter((row) => row.deduplication_key === `${sender.name}:${eventId}:test.seen`)).toHaveLength(1);
    },
  );

  it('never lets another signed body take over a failed delivery by reusing its id', async () => {
    const counter = await newCounter(sql);
    const original = sender.newEvent();
    const captured = sender.newEvent();
    const broken = await app({ [sender.name]: { [eventType]: failing } });
    expect((await deliver(broken, original.body, original.eventId)).status).toBe(500);

    const working = await app({ [sender.name]: { [eventType]: counter.handler } });
    const hijack = await deliver(working, captured.body, original.eventId);
    expect(await hijack.text()).toBe('{"received":true,"duplicate":true}');
    expect(await counter.value()).toBe(0);
    expect(await eventRow(sql, original.eventId, sender.name)).toMatchObject({
      status: 'failed',
      attempt_count: 1,
      content_digest: sha256Hex(original.body),
    });

    // The original's own redelivery still recovers it.
    expect(await (await deliver(working, original.body, original.eventId)).text()).toBe('{"received":true}');
    expect(await counter.value()).toBe(1);
  });

  it('applies once when twenty deliveries of one body under twenty ids reach the insert together', async () => {
    const counter = await newCounter(sql);
    const parties = 20;
    const test = await app({ [sender.name]: { [eventType]: counter.handler } }, barrier(parties));
    const server = serve({ fetch: test.app.fetch, port: 0, hostname: '127.0.0.1' });
    await new Promise((resolve) => server.once('listening', resolve));
    const { port } = server.address() as AddressInfo;
    try {
      const { body } = sender.newEvent();
      const responses = await Promise.all(
        Array.from({ length: parties }, async () => {
          const headers = await sender.headers({ body, eventId: crypto.randomUUID() });
          const response = await fetch(`http://127.0.0.1:${port}/webhooks/${sender.name}`, {
            method: 'POST',
            body,
            headers,
          });
          return { status: response.status, body: await response.text() };
        }),
      );
      expect(responses.filter((r) => r.status === 200)).toHaveLength(parties);
      expect(responses.filter((r) => r.body === '{"received":true}')).toHaveLength(1);
      expect(await counter.value()).toBe(1);
      expect(await rowsWithDigest(body)).toHaveLength(1);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe('GitHub type header', () => {
  it('does not let a failed body come back under another event type and reach another handler', async () => {
    const counter = await newCounter(sql);
    const { body, eventId } = githubSender.newEvent();
    const broken = await buildTestApp(db, { enabledSenders, handlers: { github: { 'issues.opened': failing } } });
    const post = async (test: TestApp, headers: Record<string, string>) =>
      test.request('/webhooks/github', { method: 'POST', body, headers });
    const signed = await githubSender.headers({ body, eventId });
    expect((await post(broken, signed)).status).toBe(500);

    const other = await buildTestApp(db, {
      enabledSenders,
      handlers: { github: { 'pull_request.opened': counter.handler } },
    });
    const retyped = await post(other, { ...signed, ...githubHeaders(crypto.randomUUID(), 'pull_request') });
    expect(await retyped.text()).toBe('{"received":true,"duplicate":true}');
    expect(await counter.value()).toBe(0);
    expect(await eventRow(sql, eventId, 'github')).toMatchObject({ status: 'failed', event_type: 'issues.opened' });
  });
});
