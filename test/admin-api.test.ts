import { describe, expect, it } from 'vitest';
import { adminApiRoutes } from '../src/admin/api.ts';
import { adminOpenApi } from '../src/admin/openapi.ts';
import { buildTestApp } from './helpers/app.ts';
import { useTestDatabase } from './helpers/database.ts';
import { insertEvent } from './helpers/events.ts';
import { eventRow, subscriptionRow } from './helpers/facts.ts';
import { insertMessages, operatorActionRows, outboxRow } from './helpers/outbox.ts';

const { sql, db } = await useTestDatabase();
const TOKEN = 'admin-token-for-tests-0123456789';
const test = await buildTestApp(db, { config: { ADMIN_TOKEN: TOKEN } });
const bearer = { authorization: `Bearer ${TOKEN}` };

async function call(path: string, init: RequestInit = {}) {
  const response = await test.request(path, { ...init, headers: { ...bearer, ...init.headers } });
  expect(response.headers.get('content-type')).toMatch(/^application\/json/);
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

const post = (path: string, body: unknown) =>
  call(path, { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });

const storeEvent = (status: string, lastError: string | null = null) =>
  insertEvent(sql, { status, lastError, attempts: 1, version: 2, to: 'canceled' });

describe('the gate', () => {
  it('answers 404 JSON for everything under /admin when ADMIN_TOKEN is unset', async () => {
    const closed = await buildTestApp(db);
    for (const path of ['/admin', '/admin/api/events', '/admin/api/openapi.json', '/admin/anything']) {
      const response = await closed.request(path, { headers: bearer });
      expect(response.status).toBe(404);
      expect(await response.json()).toEqual({ error: 'not_found' });
    }
  });

  it('answers 401 JSON without the token or with a wrong one, on every route', async () => {
    const attempts: Array<Record<string, string>> = [
      {},
      { authorization: 'Bearer wrong-token-wrong-token' },
      { authorization: 'Basic eDp5' },
    ];
    for (const headers of attempts) {
      for (const [method, path] of [
        ['GET', '/admin/api/events'],
        ['GET', '/admin/api/stats'],
        ['POST', '/admin/api/outbox/00000000-0000-0000-0000-000000000000/retry'],
      ] as const) {
        const response = await test.request(path, { method, headers });
        expect(response.status).toBe(401);
        expect(await response.json()).toEqual({ error: 'unauthorized' });
      }
    }
  });
});

describe('events', () => {
  it('lists by status and provider, shows one (payload only when asked), 404 when unknown', async () => {
    const { eventId, subscription } = await storeEvent('failed', 'ledger down');
    const listed = await call('/admin/api/events?status=failed&provider=acme&limit=500');
    expect(listed.status).toBe(200);
    const events = listed.body.events as Array<Record<string, unknown>>;
    expect(events.every((event) => event.status === 'failed')).toBe(true);
    expect(events.find((event) => event.event_id === eventId)).toMatchObject({ last_error: 'ledger down' });
    expect(JSON.stringify(listed.body)).not.toContain(subscription);

    const shown = await call(`/admin/api/events/acme/${eventId}`);
    expect(shown.body.event).toMatchObject({ event_id: eventId, status: 'failed', attempts: 1 });
    expect(shown.body.event).not.toHaveProperty('payload');
    const withPayload = await call(`/admin/api/events/acme/${eventId}?payload=true`);
    expect(JSON.stringify(withPayload.body)).toContain(subscription);
    expect(await call('/admin/api/events/acme/evt_unknown')).toEqual({ status: 404, body: { error: 'not_found' } });
  });

  it('refuses bad query values with a 400 in the one error shape', async () => {
    for (const query of ['status=lost', 'limit=0', 'limit=ten', 'limit=100000']) {
      expect(await call(`/admin/api/events?${query}`)).toEqual({ status: 400, body: { error: 'invalid_request' } });
    }
  });

  it('replays a failed event: applied, audited, 200 with the state after', async () => {
    const { eventId, subscription } = await storeEvent('failed', 'ledger down');
    const replayed = await post(`/admin/api/events/acme/${eventId}/replay`, { operator: 'alice' });
    expect(replayed.status).toBe(200);
    expect(replayed.body).toMatchObject({ before: 'failed', applied: true, event: { status: 'completed' } });
    expect(await subscriptionRow(sql, subscription)).toMatchObject({ status: 'canceled', provider_version: '2' });
    expect(await operatorActionRows(sql, `acme/${eventId}`)).toEqual([
      expect.objectContaining({
        operator: 'alice',
        action: 'replay',
        before_status: 'failed',
        after_status: 'completed',
      }),
    ]);
    const logged = test.logs.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(logged).toContainEqual(
      expect.objectContaining({ msg: 'operator replay', operator: 'alice', before: 'failed', after: 'completed' }),
    );
    expect(test.logs.join('\n')).not.toContain(subscription);

    const again = await post(`/admin/api/events/acme/${eventId}/replay`, { operator: 'alice' });
    expect(again.body).toMatchObject({ before: 'completed', applied: false, event: { status: 'completed' } });
  });

  it('a replay without an operator is 400, an unknown event 404, and neither changes anything', async () => {
    const { eventId } = await storeEvent('parked');
    for (const body of [{}, { operator: '   ' }, { operator: 7 }]) {
      expect(await post(`/admin/api/events/acme/${eventId}/replay`, body)).toEqual({
        status: 400,
        body: { error: 'invalid_request' },
      });
    }
    const malformed = await call(`/admin/api/events/acme/${eventId}/replay`, {
      method: 'POST',
      body: '{"operator":',
      headers: { 'content-type': 'application/json' },
    });
    expect(malformed).toEqual({ status: 400, body: { error: 'invalid_request' } });
    expect(await post('/admin/api/events/acme/evt_nope/replay', { operator: 'bob' })).toEqual({
      status: 404,
      body: { error: 'not_found' },
    });
    expect((await eventRow(sql, eventId))?.status).toBe('parked');
    expect(await operatorActionRows(sql, `acme/${eventId}`)).toEqual([]);
  });
});

describe('outbox', () => {
  it('lists by status, retries a dead message with an audit row, 404 for unknown ids', async () => {
    const [dead] = (await insertMessages(sql, 1, { status: 'dead', attempts: 9 })) as [string];
    const listed = await call('/admin/api/outbox?status=dead');
    expect((listed.body.messages as Array<{ id: string }>).map((message) => message.id)).toContain(dead);
    expect(await call('/admin/api/outbox?status=lost')).toMatchObject({ status: 400 });

    const retried = await post(`/admin/api/outbox/${dead}/retry`, { operator: 'carol' });
    expect(retried).toMatchObject({ status: 200, body: { retried: true, message: { id: dead, status: 'pending' } } });
    expect(await outboxRow(sql, dead)).toMatchObject({ status: 'pending', attempts: 0 });
    expect(await operatorActionRows(sql, dead)).toHaveLength(1);
    expect(test.logs.map((line) => JSON.parse(line) as Record<string, unknown>)).toContainEqual(
      expect.objectContaining({
        msg: 'operator retry',
        operator: 'carol',
        message_id: dead,
        before: 'dead',
        after: 'pending',
      }),
    );

    expect(await post(`/admin/api/outbox/${dead}/retry`, {})).toMatchObject({ status: 400 });
    for (const id of ['00000000-0000-4000-8000-000000000000', 'not-a-uuid']) {
      expect(await post(`/admin/api/outbox/${id}/retry`, { operator: 'carol' })).toEqual({
        status: 404,
        body: { error: 'not_found' },
      });
    }
  });
});

describe('stats and the OpenAPI document', () => {
  it('counts by status for events and outbox', async () => {
    await storeEvent('dead_letter');
    await insertMessages(sql, 1, { status: 'dead' });
    const stats = await call('/admin/api/stats');
    expect(stats.status).toBe(200);
    const [dead] = await sql<{ n: number }[]>`select count(*)::int as n from webhook_events
      where status = 'dead_letter'`;
    expect((stats.body.events as Record<string, number>).dead_letter).toBe(dead?.n);
    expect((stats.body.outbox as Record<string, number>).dead).toBeGreaterThanOrEqual(1);
    expect(stats.body).toHaveProperty('oldest_unprocessed_seconds');
  });

  it('serves an OpenAPI 3.1 document naming exactly the routes that exist', async () => {
    const served = await call('/admin/api/openapi.json');
    expect(served.status).toBe(200);
    expect(served.body).toEqual(JSON.parse(JSON.stringify(adminOpenApi())));
    expect(served.body.openapi).toBe('3.1.0');
    const documented = Object.entries(adminOpenApi().paths)
      .flatMap(([path, operations]) => Object.keys(operations).map((method) => `${method.toUpperCase()} ${path}`))
      .sort();
    const routed = adminApiRoutes({} as Parameters<typeof adminApiRoutes>[0])
      .routes.filter((route) => route.method !== 'ALL')
      .map((route) => `${route.method} /admin/api${route.path.replace(/:(\w+)/g, '{$1}')}`)
      .sort();
    expect(documented).toEqual([...new Set(routed)]);
    const replay = adminOpenApi().paths['/admin/api/events/{provider}/{eventId}/replay']?.post;
    expect(replay?.requestBody?.content['application/json'].schema).toMatchObject({ required: ['operator'] });
  });
});
