// The guide's cases for the synchronous intake path, each asserted on database facts. The plain valid
// event, a duplicate and a bad signature are in test/shared/delivery-contract.ts, run in Node and workerd.
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineHandler, type HandlerMap } from '../src/domain/handlers.ts';
import { acmeEvent, signedHeaders, uniqueId } from './helpers/acme.ts';
import { buildTestApp } from './helpers/app.ts';
import { newCounter } from './helpers/counter.ts';
import { useTestDatabase } from './helpers/database.ts';
import { barrier, countEvents, eventRow, subscriptionRow } from './helpers/facts.ts';
import { failingAfterDefault } from './helpers/handlers.ts';
import { WAIT_MS } from './helpers/patience.ts';

const database = await useTestDatabase();
const { sql, db } = database;

async function deliver(test: { request: (path: string, init: RequestInit) => Promise<Response> }, event: object) {
  const body = JSON.stringify(event);
  return test.request('/webhooks/acme', { method: 'POST', body, headers: await signedHeaders(body) });
}

/** Handlers where `counter.bump` counts its applications. */
async function counting(): Promise<{ handlers: HandlerMap; value: () => Promise<number> }> {
  const counter = await newCounter(sql);
  return { handlers: { acme: { 'counter.bump': counter.handler } }, value: counter.value };
}

describe('POST /webhooks/acme, synchronous mode', () => {
  it('changes state once when the same event is delivered twice in a row', async () => {
    const counter = await counting();
    const test = await buildTestApp(db, { handlers: counter.handlers });
    const event = acmeEvent({ type: 'counter.bump' });

    const first = await deliver(test, event);
    const firstRow = await eventRow(sql, event.id);
    const second = await deliver(test, event);

    expect(first.status).toBe(200);
    expect(await first.text()).toBe('{"received":true}');
    expect(second.status).toBe(200);
    expect(await second.text()).toBe('{"received":true,"duplicate":true}');
    expect(await counter.value()).toBe(1);
    expect(await countEvents(sql, event.id)).toBe(1);
    expect((await eventRow(sql, event.id))?.completed_at).toEqual(firstRow?.completed_at);
  });

  it('changes state once when twenty requests with one id reach the insert together', async () => {
    const counter = await counting();
    const parties = 20;
    const test = await buildTestApp(db, { handlers: counter.handlers, beforeStore: barrier(parties) });
    const server = serve({ fetch: test.app.fetch, port: 0, hostname: '127.0.0.1' });
    await new Promise((resolve) => server.once('listening', resolve));
    const { port } = server.address() as AddressInfo;
    try {
      const body = JSON.stringify(acmeEvent({ type: 'counter.bump' }));
      const headers = await signedHeaders(body);
      const responses = await Promise.all(
        Array.from({ length: parties }, () =>
          fetch(`http://127.0.0.1:${port}/webhooks/acme`, { method: 'POST', body, headers }).then(async (r) => ({
            status: r.status,
            body: await r.text(),
          })),
        ),
      );
      expect(responses.every((r) => r.status === 200)).toBe(true);
      expect(responses.filter((r) => r.body === '{"received":true}')).toHaveLength(1);
      expect(responses.filter((r) => r.body === '{"received":true,"duplicate":true}')).toHaveLength(parties - 1);
      expect(await counter.value()).toBe(1);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('never lets an older resource version overwrite a newer one', async () => {
    const test = await buildTestApp(db);
    const subscription = uniqueId('sub');
    const newer = acmeEvent({ version: 9, data: { id: subscription, status: 'past_due' } });
    const older = acmeEvent({ version: 4, created: newer.created + 60, data: { id: subscription, status: 'active' } });

    expect((await deliver(test, newer)).status).toBe(200);
    const stale = await deliver(test, older);

    expect(stale.status).toBe(200);
    expect(await stale.text()).toBe('{"received":true}');
    expect(await subscriptionRow(sql, subscription)).toMatchObject({ status: 'past_due', provider_version: '9' });
    expect((await eventRow(sql, older.id))?.status).toBe('completed');
  });

  it('keeps a canceled subscription canceled, whatever later versions say', async () => {
    const test = await buildTestApp(db);
    const subscription = uniqueId('sub');
    await deliver(
      test,
      acmeEvent({ type: 'subscription.canceled', version: 3, data: { id: subscription, status: 'active' } }),
    );
    await deliver(
      test,
      acmeEvent({ type: 'subscription.updated', version: 5, data: { id: subscription, status: 'active' } }),
    );

    expect(await subscriptionRow(sql, subscription)).toMatchObject({ status: 'canceled', provider_version: '3' });
  });

  it('rolls back the insert and the state when the domain handler fails, then recovers on redelivery', async () => {
    const subscription = uniqueId('sub');
    const failing = failingAfterDefault('subscription.updated', 'ledger refused the change');
    const event = acmeEvent({ version: 2, data: { id: subscription, status: 'active', card: '4242424242424242' } });

    const broken = await buildTestApp(db, { handlers: failing });
    const failed = await deliver(broken, event);
    expect(failed.status).toBe(500);
    expect(await failed.text()).toBe('{"error":"processing_failed"}');
    expect(await subscriptionRow(sql, subscription)).toBeUndefined();
    const failedRow = await eventRow(sql, event.id);
    expect(failedRow).toMatchObject({ status: 'failed', attempt_count: 1, completed_at: null });
    expect(failedRow?.last_error).toContain('ledger refused the change');
    expect(failedRow?.last_error).not.toContain('4242424242424242');

    await deliver(broken, event);
    expect((await eventRow(sql, event.id))?.attempt_count).toBe(2);

    const fixed = await buildTestApp(db);
    const recovered = await deliver(fixed, event);
    expect(recovered.status).toBe(200);
    expect(await recovered.text()).toBe('{"received":true}');
    expect(await eventRow(sql, event.id)).toMatchObject({ status: 'completed', attempt_count: 2, last_error: null });
    expect(await subscriptionRow(sql, subscription)).toMatchObject({ status: 'active', provider_version: '2' });
    expect(broken.logs.join('\n')).not.toContain('4242424242424242');
  });

  it("answers 2xx to the sender's retry that follows a lost response", async () => {
    const { handlers, value } = await counting();
    let dropConnection: () => void = () => {};
    const storeReached = new Promise<void>((resolve) => {
      dropConnection = resolve;
    });
    const test = await buildTestApp(db, {
      handlers,
      beforeStore: async () => dropConnection(),
    });
    const server = serve({ fetch: test.app.fetch, port: 0, hostname: '127.0.0.1' });
    await new Promise((resolve) => server.once('listening', resolve));
    const { port } = server.address() as AddressInfo;
    try {
      const event = acmeEvent({ type: 'counter.bump' });
      const body = JSON.stringify(event);
      const headers = await signedHeaders(body);
      const url = `http://127.0.0.1:${port}/webhooks/acme`;
      // The sender gives up on the first attempt (its timeout) while we are processing it.
      const abort = new AbortController();
      const lost = fetch(url, { method: 'POST', body, headers, signal: abort.signal }).catch((error: unknown) => error);
      await storeReached;
      abort.abort();
      expect(await lost).toBeInstanceOf(Error);
      await expect.poll(async () => (await eventRow(sql, event.id))?.status, { timeout: WAIT_MS }).toBe('completed');

      const retry = await fetch(url, { method: 'POST', body, headers });
      expect(retry.status).toBe(200);
      expect(await retry.text()).toBe('{"received":true,"duplicate":true}');
      expect(await value()).toBe(1);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('stores an event type without a handler as ignored', async () => {
    const test = await buildTestApp(db);
    const event = acmeEvent({ type: 'invoice.paid', data: { anything: ['goes', 1] } });
    const response = await deliver(test, event);

    expect(response.status).toBe(200);
    expect(await response.text()).toBe('{"received":true}');
    const row = await eventRow(sql, event.id);
    expect(row?.status).toBe('ignored');
    expect(row?.completed_at).toBeInstanceOf(Date);
    expect((await deliver(test, event)).status).toBe(200);
  });

  it('parks an unknown api_version with 202, applies nothing and raises an alert', async () => {
    const test = await buildTestApp(db);
    const subscription = uniqueId('sub');
    const event = acmeEvent({ api_version: '2031-01-01', data: { id: subscription, status: 'active' } });
    const response = await deliver(test, event);

    expect(response.status).toBe(202);
    expect(await response.text()).toBe('{"received":true,"queued":true}');
    expect(await eventRow(sql, event.id)).toMatchObject({ status: 'parked', completed_at: null });
    expect(await subscriptionRow(sql, subscription)).toBeUndefined();
    const alert = test.logs.map((line) => JSON.parse(line)).find((line) => line.outcome === 'parked');
    expect(alert).toMatchObject({ level: 'warn', alert: true, event_id: event.id });
    const again = await deliver(test, event);
    expect(await again.text()).toBe('{"received":true,"duplicate":true}');
  });

  it('keeps unknown extra fields in the stored payload', async () => {
    const test = await buildTestApp(db);
    const event = acmeEvent({ livemode: true, request: { idempotency_key: 'k1' } });
    event.data = { ...event.data, plan: { nickname: 'pro' } };
    await deliver(test, event);
    expect((await eventRow(sql, event.id))?.payload).toEqual(event);
  });

  it('logs one line per outcome with ids and trace, never the payload or the secret', async () => {
    const test = await buildTestApp(db);
    const event = acmeEvent({ data: { id: uniqueId('sub'), status: 'active', email: 'someone@example.com' } });
    const body = JSON.stringify(event);
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    await test.request('/webhooks/acme', {
      method: 'POST',
      body,
      headers: { ...(await signedHeaders(body)), traceparent: `00-${traceId}-00f067aa0ba902b7-01` },
    });
    expect(test.logs).toHaveLength(1);
    expect(JSON.parse(test.logs[0] ?? '')).toMatchObject({
      level: 'info',
      provider: 'acme',
      event_id: event.id,
      event_type: 'subscription.updated',
      outcome: 'completed',
      attempt: 1,
      trace_id: traceId,
    });
    expect(test.logs[0]).not.toContain('someone@example.com');
    expect(test.logs[0]).not.toContain('test-acme-secret');
  });

  it('counts a duplicate as one, in a transaction per delivery as under group commit', async () => {
    const test = await buildTestApp(db, { groupCommit: undefined, answeredDeliveries: false });
    const event = acmeEvent({ type: 'subscription.created' });
    expect((await deliver(test, event)).status).toBe(200);
    expect(await (await deliver(test, event)).text()).toBe('{"received":true,"duplicate":true}');
    const metrics = await (await test.request('/metrics', { method: 'GET' })).text();
    expect(metrics).toContain(
      'webhook_events_total{provider="acme",event_type="subscription.created",outcome="duplicate"} 1\n',
    );
  });

  it('answers 503 when a handler loses the database, and records no failure on its row', async () => {
    const lost = defineHandler({
      schema: z.unknown(),
      apply() {
        throw Object.assign(new Error('connection gone'), { code: 'CONNECTION_CLOSED' });
      },
    });
    const test = await buildTestApp(db, {
      groupCommit: undefined,
      handlers: { acme: { 'subscription.updated': lost } },
    });
    const event = acmeEvent();
    const response = await deliver(test, event);
    expect({ status: response.status, body: await response.text() }).toEqual({
      status: 503,
      body: '{"error":"unavailable"}',
    });
    expect(await countEvents(sql, event.id)).toBe(0);
    const line = test.logs.map((text) => JSON.parse(text)).find((fields) => fields.msg === 'event not accepted');
    expect(line).toMatchObject({ outcome: 'unavailable', reason: 'database_unavailable' });
  });
});
