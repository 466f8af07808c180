// Side effects enter the outbox in the domain transaction and only then: one message per applied
// change, none for a stale version, none when the transaction rolls back; and from intake to the
// target: a webhook processed through the app reaches a real HTTP sink with the contract's body and
// headers, in process and from `npm start`'s own relay schedule.
// Needs a process: the built service publishes what a delivery enqueued, end to end.
import { describe, expect, it } from 'vitest';
import { DEFAULT_ROUTING } from '../src/outbox/destinations.ts';
import { deduplicationKey, enqueueMessage, enqueuerFor, messageRows } from '../src/outbox/enqueue.ts';
import { acmeEvent, signedHeaders, uniqueId } from './helpers/acme.ts';
import { buildTestApp, type TestApp } from './helpers/app.ts';
import { useTestDatabase } from './helpers/database.ts';
import { eventRow, subscriptionRow } from './helpers/facts.ts';
import { failingAfterDefault } from './helpers/handlers.ts';
import { buildTestRelay, outboxRowsByKeyPrefix } from './helpers/outbox.ts';
import { WAIT_MS } from './helpers/patience.ts';
import { cleanEnv, run } from './helpers/process.ts';
import { startSink } from './helpers/sink.ts';

const { db, sql, url } = await useTestDatabase();
const sink = await startSink();

async function deliver(test: TestApp, event: object, timestamp?: number) {
  const body = JSON.stringify(event);
  return test.request('/webhooks/acme', { method: 'POST', body, headers: await signedHeaders(body, { timestamp }) });
}

/** The messages one acme event produced (keys start with `acme:<event id>:`). */
const messagesOf = (eventId: string) => outboxRowsByKeyPrefix(sql, `acme:${eventId}:`);

describe('enqueue in the domain transaction', () => {
  it('a subscription change enqueues one subscription.changed message with a stable key', async () => {
    const test = await buildTestApp(db);
    const subscription = uniqueId('sub');
    const event = acmeEvent({ version: 3, data: { id: subscription, status: 'past_due' } });
    expect((await deliver(test, event)).status).toBe(200);

    const messages = await messagesOf(event.id);
    expect(messages).toHaveLength(1);
    expect(messages[0]).toMatchObject({
      topic: 'subscription.changed',
      deduplication_key: `acme:${event.id}:subscription.changed`,
      status: 'pending',
      attempts: 0,
      published_at: null,
      locked_by: null,
      payload: {
        external_id: subscription,
        status: 'past_due',
        provider_version: 3,
        updated_at: new Date(event.created * 1000).toISOString(),
      },
    });
  });

  it('a duplicate delivery enqueues nothing more', async () => {
    const test = await buildTestApp(db);
    const event = acmeEvent();
    await deliver(test, event);
    const again = await deliver(test, event);
    expect(await again.text()).toBe('{"received":true,"duplicate":true}');
    expect(await messagesOf(event.id)).toHaveLength(1);
  });

  it('a stale version changes nothing and enqueues nothing', async () => {
    const test = await buildTestApp(db);
    const subscription = uniqueId('sub');
    const newer = acmeEvent({ version: 9, data: { id: subscription, status: 'past_due' } });
    const older = acmeEvent({ version: 4, data: { id: subscription, status: 'active' } });
    await deliver(test, newer);
    expect((await deliver(test, older)).status).toBe(200);

    expect((await eventRow(sql, older.id))?.status).toBe('completed');
    expect(await messagesOf(newer.id)).toHaveLength(1);
    expect(await messagesOf(older.id)).toEqual([]);
  });

  it('an update to a canceled subscription enqueues nothing', async () => {
    const test = await buildTestApp(db);
    const subscription = uniqueId('sub');
    const cancel = acmeEvent({
      type: 'subscription.canceled',
      version: 2,
      data: { id: subscription, status: 'active' },
    });
    const revive = acmeEvent({ version: 5, data: { id: subscription, status: 'active' } });
    await deliver(test, cancel);
    await deliver(test, revive);
    expect(await messagesOf(cancel.id)).toHaveLength(1);
    expect(await messagesOf(revive.id)).toEqual([]);
  });

  it('a rolled-back domain transaction leaves no outbox row', async () => {
    // The real handler enqueues its message before the failure: the rollback must take it back too.
    const failing = failingAfterDefault('subscription.updated', 'ledger refused the change');
    const subscription = uniqueId('sub');
    const event = acmeEvent({ data: { id: subscription, status: 'active' } });
    const response = await deliver(await buildTestApp(db, { handlers: failing }), event);

    expect(response.status).toBe(500);
    expect((await eventRow(sql, event.id))?.status).toBe('failed');
    expect(await subscriptionRow(sql, subscription)).toBeUndefined();
    expect(await messagesOf(event.id)).toEqual([]);

    // The redelivery that succeeds enqueues the message exactly once.
    await deliver(await buildTestApp(db), event);
    expect(await messagesOf(event.id)).toHaveLength(1);
  });

  it('routes by topic, sender and type, tells of a message no destination takes, and keeps the traceparent', async () => {
    const seen: unknown[] = [];
    const unrouted: unknown[] = [];
    const routing = {
      destinations: [],
      route: (facts: unknown) => {
        seen.push(facts);
        return (facts as { topic: string }).topic === 'none' ? [] : ['default', 'orders'];
      },
      unrouted: (facts: unknown) => void unrouted.push(facts),
    };
    const source = { provider: 'acme', eventId: uniqueId('evt'), eventType: 'order.created' };
    expect(messageRows(source, { topic: 'none', payload: {} }, routing)).toEqual([]);
    expect(unrouted).toEqual([{ topic: 'none', sender: 'acme', type: 'order.created' }]);
    const rows = messageRows(
      { ...source, traceparent: 'tp' },
      { topic: 'order.paid', payload: { n: 1 } },
      routing,
      () => 'id',
    );
    expect(seen).toEqual([
      { topic: 'none', sender: 'acme', type: 'order.created' },
      { topic: 'order.paid', sender: 'acme', type: 'order.created' },
    ]);
    expect(unrouted).toHaveLength(1);
    expect(rows.map((row) => [row.destination, row.deduplicationKey, row.traceparent])).toEqual([
      ['default', `acme:${source.eventId}:order.paid`, 'tp'],
      ['orders', `acme:${source.eventId}:order.paid@orders`, 'tp'],
    ]);
    expect(messageRows(source, { topic: 'order.paid', payload: {} }, routing)[0]?.traceparent).toBeNull();
    // A routing without `unrouted` (no logger) drops the message quietly.
    expect(messageRows(source, { topic: 'none', payload: {} }, { ...routing, unrouted: undefined })).toEqual([]);
  });

  it('an enqueuer writes each message of its event', async () => {
    const source = { provider: 'acme', eventId: uniqueId('evt'), eventType: 'test.event' };
    await enqueuerFor(db, source)({ topic: 'order.paid', payload: { n: 1 } });
    expect((await messagesOf(source.eventId)).map((row) => row.deduplication_key)).toEqual([
      `acme:${source.eventId}:order.paid`,
    ]);
  });

  it('the same key twice writes one row (ON CONFLICT DO NOTHING)', async () => {
    const source = { provider: 'acme', eventId: uniqueId('evt'), eventType: 'subscription.updated' };
    const message = { topic: 'subscription.changed', payload: { n: 1 } };
    expect(await enqueueMessage(db, source, message)).toBe(1);
    expect(await enqueueMessage(db, source, { ...message, payload: { n: 2 } })).toBe(0);
    const rows = await messagesOf(source.eventId);
    expect(rows).toHaveLength(1);
    expect(rows[0]?.payload).toEqual({ n: 1 });
    expect(rows[0]?.deduplication_key).toBe(deduplicationKey(source, message.topic));
  });

  it('writes the id its generator makes; a row whose key exists already leaves its id unused', async () => {
    const source = { provider: 'acme', eventId: uniqueId('evt'), eventType: 'subscription.updated' };
    const message = { topic: 'subscription.changed', payload: { n: 1 } };
    const [first, second] = [crypto.randomUUID(), crypto.randomUUID()];
    expect(await enqueueMessage(db, source, message, DEFAULT_ROUTING, () => first)).toBe(1);
    expect(await enqueueMessage(db, source, message, DEFAULT_ROUTING, () => second)).toBe(0);
    expect((await messagesOf(source.eventId)).map((row) => row.id)).toEqual([first]);
    expect(await sql`select 1 from outbox_messages where id = ${second}`).toHaveLength(0);
  });
});

describe('from webhook to target', () => {
  it('a processed webhook is published once to the sink with the contract body and headers', async () => {
    const test = await buildTestApp(db);
    const event = acmeEvent({ version: 11, data: { id: uniqueId('sub'), status: 'active' } });
    await deliver(test, event);
    const [message] = await messagesOf(event.id);
    if (message === undefined) throw new Error('no message enqueued');

    sink.requests.length = 0;
    const relay = buildTestRelay(db, { target: sink.url });
    const summary = await relay.relay.drain();
    expect(summary.published).toBeGreaterThanOrEqual(1);

    const delivered = sink.requests.filter((request) => request.messageId === message.id);
    expect(delivered).toHaveLength(1);
    const [request] = delivered;
    expect(request?.method).toBe('POST');
    expect(request?.headers['content-type']).toBe('application/json');
    expect(request?.headers['idempotency-key']).toBe(`acme:${event.id}:subscription.changed`);
    expect(request?.headers['outbox-topic']).toBe('subscription.changed');
    const body = JSON.parse(request?.body ?? '');
    expect(Object.keys(body)).toEqual(['id', 'topic', 'deduplication_key', 'payload', 'created_at']);
    expect(body).toEqual({
      id: message.id,
      topic: 'subscription.changed',
      deduplication_key: message.deduplication_key,
      payload: message.payload,
      created_at: message.created_at.toISOString(),
    });

    const [after] = await messagesOf(event.id);
    expect(after).toMatchObject({ status: 'published', attempts: 0 });
    expect(after?.published_at).toBeInstanceOf(Date);
  });

  it('npm start relays on its schedule and stops cleanly', async () => {
    const secret = 'relay-schedule-secret';
    const service = run(
      process.execPath,
      ['--import', 'tsx', 'src/entry/node.ts'],
      cleanEnv({
        DATABASE_URL: url,
        PORT: '0',
        ACME_WEBHOOK_SECRET: secret,
        OUTBOX_TARGET_URL: sink.url,
        RELAY_INTERVAL_MS: '100',
      }),
    );
    try {
      const listening = JSON.parse(await service.waitForLine(/"msg":"listening"/));
      const nowSeconds = Math.floor(Date.now() / 1000);
      const event = acmeEvent({ created: nowSeconds });
      const body = JSON.stringify(event);
      const response = await fetch(`http://127.0.0.1:${listening.port}/webhooks/acme`, {
        method: 'POST',
        body,
        headers: await signedHeaders(body, { secret, timestamp: nowSeconds }),
      });
      expect(response.status).toBe(200);
      const key = `acme:${event.id}:subscription.changed`;
      await expect
        .poll(() => sink.requests.some((request) => request.headers['idempotency-key'] === key), { timeout: WAIT_MS })
        .toBe(true);
      await expect.poll(async () => (await messagesOf(event.id))[0]?.status, { timeout: WAIT_MS }).toBe('published');
    } finally {
      service.child.kill('SIGTERM');
    }
    expect(await service.exited).toEqual({ code: 0, signal: null });
  });
});
