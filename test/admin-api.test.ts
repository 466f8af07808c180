import { describe, expect, it } from 'vitest';
import { adminApiRoutes } from '../src/admin/api/api.ts';
import { acmeEvent, TEST_NOW_MS, uniqueId } from './helpers/acme.ts';
import { buildTestApp } from './helpers/app.ts';
import { useTestDatabase } from './helpers/database.ts';
import { insertEvent } from './helpers/events.ts';
import { EXACT_NUMBERS, insertExactEvent } from './helpers/exact-payload.ts';
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

  it('answers a stored payload with every number as stored, beyond 2^53 and past a double', async () => {
    const { eventId } = await insertExactEvent(sql);
    for (const path of [
      `/admin/api/events/acme/${eventId}?payload=true`,
      `/admin/api/event?provider=acme&event_id=${eventId}&payload=true`,
    ]) {
      const response = await test.request(path, { headers: bearer });
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toMatch(/^application\/json/);
      const text = await response.text();
      for (const digits of EXACT_NUMBERS) expect(text).toContain(digits);
      // The JSON a client gets is the document (the string's line break escaped inside it).
      expect(text).toContain('"note":"line one\\nline two"');
      expect((JSON.parse(text) as { event: { payload: { id: string } } }).event.payload.id).toBe(eventId);
    }
    const [stored] = await sql<
      { text: string }[]
    >`select payload::text as text from webhook_events where event_id = ${eventId}`;
    for (const digits of EXACT_NUMBERS) expect(stored?.text).toContain(digits);

    const [message] = (await insertMessages(sql, 1, { status: 'dead' })) as [string];
    await sql`update outbox_messages set payload = ${`{"order_id": ${EXACT_NUMBERS[0]}}`}::text::jsonb where id = ${message}`;
    const shown = await (await test.request(`/admin/api/outbox/${message}?payload=true`, { headers: bearer })).text();
    expect(shown).toContain(`"payload":{"order_id":${EXACT_NUMBERS[0]}}`);
  });

  it('refuses unknown parameters and bad values with a 400 naming the field, never the value', async () => {
    const cases: Array<[string, string]> = [
      ['status=lost', 'status'],
      ['limit=0', 'limit'],
      ['limit=ten', 'limit'],
      ['limit=100000', 'limit'],
      ['since=yesterday', 'since'],
      ['until=1y', 'until'],
      ['provider=nobody', 'provider'],
      ['cursor=bm90LWEtY3Vyc29y', 'cursor'],
      ['sinse=1h', 'sinse'],
      ['status=failed&status=parked', 'status'],
    ];
    for (const [query, field] of cases) {
      expect(await call(`/admin/api/events?${query}`)).toEqual({
        status: 400,
        body: { error: 'invalid_request', field },
      });
    }
    expect(await call('/admin/api/outbox?statut=dead')).toEqual({
      status: 400,
      body: { error: 'invalid_request', field: 'statut' },
    });
    expect(await call('/admin/api/events/acme/evt_x?payload=yes')).toMatchObject({
      status: 400,
      body: { field: 'payload' },
    });
  });

  it('filters by type, id prefix and time range, and pages by cursor to the last row', async () => {
    // Rows of their own type, received at known instants one second apart (same millisecond twice,
    // differing in microseconds only, so a cursor rounded to milliseconds would lose one).
    // Queue rows among them (received, processing): the listing indexes leave those out, so a page
    // merges them in from the (status, received_at) index, in the same order.
    const type = `paging.${Date.now()}`;
    const base = Date.parse('2026-03-01T10:00:00Z');
    const statuses = ['completed', 'received', 'processing', 'completed', 'failed', 'received', 'processing'];
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) {
      const id = `evt_page_${type}_${i}`;
      ids.push(id);
      const micros = i === 6 ? 5 : 0;
      await sql`insert into webhook_events (provider, event_id, event_type, status, payload, received_at)
        values ('acme', ${id}, ${type}, ${statuses[i] ?? 'completed'}, '{}'::jsonb,
          to_timestamp(${Math.floor((base + Math.min(i, 5) * 1000) / 1000)}) + ${micros} * interval '1 microsecond')`;
    }
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const query: string = `type=${type}&limit=3${cursor === null ? '' : `&cursor=${cursor}`}`;
      const page = await call(`/admin/api/events?${query}`);
      expect(page.status).toBe(200);
      seen.push(...(page.body.events as Array<{ event_id: string }>).map((event) => event.event_id));
      cursor = page.body.next_cursor as string | null;
      pages += 1;
    } while (cursor !== null && pages < 10);
    expect(pages).toBe(3);
    // Newest first, each row once: 6 (5 µs after 5) before 5, then 4 … 0.
    expect(seen).toEqual([ids[6], ids[5], ids[4], ids[3], ids[2], ids[1], ids[0]]);

    const ranged = await call(`/admin/api/events?type=${type}&since=2026-03-01T10:00:01Z&until=2026-03-01T10:00:03Z`);
    expect((ranged.body.events as Array<{ event_id: string }>).map((event) => event.event_id)).toEqual([
      ids[2],
      ids[1],
    ]);
    const byId = await call(`/admin/api/events?id=${encodeURIComponent(`evt_page_${type}_3`)}`);
    expect((byId.body.events as Array<{ event_id: string }>).map((event) => event.event_id)).toEqual([ids[3]]);
    // A LIKE wildcard in the search is taken literally.
    expect((await call(`/admin/api/events?id=evt_page_%25`)).body.events).toEqual([]);
    // A duration counts back from the app's clock.
    test.setNow(Date.parse('2026-03-01T10:00:04Z'));
    const recent = await call(`/admin/api/events?type=${type}&since=2s`);
    test.setNow(TEST_NOW_MS);
    expect((recent.body.events as Array<{ event_id: string }>).map((event) => event.event_id)).toEqual(
      ids.slice(2).reverse(),
    );
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
    expect(again.body.reason).toMatch(/only failed, parked or dead-lettered events are applied again/);
  });

  it('a replay whose handler fails again answers applied: false, with the error as its reason', async () => {
    const eventId = uniqueId('evt');
    // A valid envelope with data the handler's schema refuses: applying it cannot succeed.
    const payload = { ...acmeEvent({ id: eventId }), data: { id: 'sub_x', status: 'weird' } };
    await sql`insert into webhook_events (provider, event_id, event_type, status, payload, attempt_count)
      values ('acme', ${eventId}, 'subscription.updated', 'failed', ${sql.json(payload)}, 1)`;
    const replayed = await post(`/admin/api/events/acme/${eventId}/replay`, { operator: 'alice' });
    expect(replayed).toMatchObject({
      status: 200,
      body: { before: 'failed', applied: false, event: { status: 'failed', attempts: 2 } },
    });
    expect(replayed.body.reason).toEqual((await eventRow(sql, eventId))?.last_error);
    expect(await eventRow(sql, eventId)).toMatchObject({ status: 'failed', attempt_count: 2 });
    expect(await operatorActionRows(sql, `acme/${eventId}`)).toEqual([
      expect.objectContaining({ before_status: 'failed', after_status: 'failed' }),
    ]);
  });

  it('a replay without an operator is 400, an unknown event 404, and neither changes anything', async () => {
    const { eventId } = await storeEvent('parked');
    for (const body of [{}, { operator: '   ' }, { operator: 7 }]) {
      expect(await post(`/admin/api/events/acme/${eventId}/replay`, body)).toEqual({
        status: 400,
        body: { error: 'invalid_request', field: 'operator' },
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
    const shown = await call(`/admin/api/outbox/${dead}?payload=true`);
    expect(shown.body.message).toMatchObject({ id: dead, status: 'pending', payload: { n: 0 } });
    expect(await call('/admin/api/outbox/not-a-uuid')).toEqual({ status: 404, body: { error: 'not_found' } });
    for (const id of ['00000000-0000-4000-8000-000000000000', 'not-a-uuid']) {
      expect(await post(`/admin/api/outbox/${id}/retry`, { operator: 'carol' })).toEqual({
        status: 404,
        body: { error: 'not_found' },
      });
    }
  });
});

describe('outbox listings', () => {
  it('filter by topic and id prefix, and page by cursor to the last message', async () => {
    const topic = `topic.${Date.now()}`;
    // Five messages created in the same millisecond: only the id tells them apart in the order.
    const ids = await insertMessages(sql, 5, { topic, createdAt: new Date('2026-02-01T00:00:00Z') });
    await sql`update outbox_messages set created_at = '2026-02-01T00:00:00Z' where id in ${sql(ids)}`;
    const seen: string[] = [];
    let cursor: string | null = null;
    for (let page = 0; page < 5; page++) {
      const query: string = `topic=${topic}&limit=2${cursor === null ? '' : `&cursor=${cursor}`}`;
      const listed = await call(`/admin/api/outbox?${query}`);
      expect(listed.status).toBe(200);
      seen.push(...(listed.body.messages as Array<{ id: string }>).map((message) => message.id));
      cursor = listed.body.next_cursor as string | null;
      if (cursor === null) break;
    }
    expect(cursor).toBeNull();
    expect(seen).toEqual([...ids].sort().reverse());
    const [first] = ids as [string];
    const byPrefix = await call(`/admin/api/outbox?id=${first.slice(0, 13)}&topic=${topic}`);
    expect((byPrefix.body.messages as Array<{ id: string }>).map((message) => message.id)).toEqual([first]);
    const none = await call(`/admin/api/outbox?topic=${topic}&until=2026-01-31T00:00:00Z`);
    expect(none.body).toEqual({ messages: [], next_cursor: null, counts: {} });
  });

  it('page every status of a time window in one order, merged from a range per status', async () => {
    // Six messages of three statuses created at one instant: the window has no index of its own, so
    // the list merges the (status, created_at) ranges, and only the id orders them.
    const at = new Date('2026-03-01T00:00:00Z');
    const ids = (
      await Promise.all(
        (['pending', 'published', 'dead'] as const).map((status) => insertMessages(sql, 2, { status, createdAt: at })),
      )
    ).flat();
    await sql`update outbox_messages set created_at = ${at} where id in ${sql(ids)}`;
    const seen: Array<{ id: string; status: string }> = [];
    let cursor: string | null = null;
    for (let page = 0; page < 6; page++) {
      const query: string = `since=2026-03-01T00:00:00Z&until=2026-03-01T00:00:01Z&limit=4${cursor === null ? '' : `&cursor=${cursor}`}`;
      const listed = await call(`/admin/api/outbox?${query}`);
      expect(listed.status).toBe(200);
      seen.push(...(listed.body.messages as Array<{ id: string; status: string }>));
      cursor = listed.body.next_cursor as string | null;
      if (cursor === null) break;
    }
    expect(seen.map((message) => message.id)).toEqual([...ids].sort().reverse());
    expect(new Set(seen.map((message) => message.status))).toEqual(new Set(['pending', 'published', 'dead']));
  });
});

describe('counts by status on a list', () => {
  it('honour every filter of the list but its status, on the first page only', async () => {
    // One type, two senders, two days: each filter removes rows of some status.
    const type = `counted.${Date.now()}`;
    const rows: Array<[string, string, string]> = [
      ['acme', 'failed', '2026-04-02T10:00:00Z'],
      ['acme', 'failed', '2026-04-02T11:00:00Z'],
      ['acme', 'completed', '2026-04-02T12:00:00Z'],
      ['acme', 'dead_letter', '2026-04-01T10:00:00Z'],
      ['stripe', 'failed', '2026-04-02T10:30:00Z'],
      ['stripe', 'completed', '2026-04-01T09:00:00Z'],
    ];
    for (const [index, [provider, status, at]] of rows.entries()) {
      await sql`insert into webhook_events (provider, event_id, event_type, status, payload, received_at)
        values (${provider}, ${`evt_counted_${type}_${index}`}, ${type}, ${status}, '{}'::jsonb, ${at})`;
    }
    const counts = async (query: string) => (await call(`/admin/api/events?type=${type}&${query}`)).body.counts;
    expect(await counts('limit=1')).toEqual({ failed: 3, completed: 2, dead_letter: 1 });
    expect(await counts('provider=acme')).toEqual({ failed: 2, completed: 1, dead_letter: 1 });
    expect(await counts('provider=acme&since=2026-04-02T00:00:00Z')).toEqual({ failed: 2, completed: 1 });
    expect(await counts('until=2026-04-02T00:00:00Z')).toEqual({ completed: 1, dead_letter: 1 });
    // The status filter chooses rows, not counts: each count is what its status link would list.
    expect(await counts('status=failed&provider=stripe')).toEqual({ failed: 1, completed: 1 });
    // ... while the page holds that status alone (stripe's completed row is left out).
    const failedOfStripe = await call(`/admin/api/events?type=${type}&status=failed&provider=stripe`);
    expect((failedOfStripe.body.events as Array<{ event_id: string }>).map((event) => event.event_id)).toEqual([
      `evt_counted_${type}_4`,
    ]);
    // Counted from the counters (no id, no subject): exact, so never flagged incomplete; an id prefix
    // counts the rows themselves, under the cap here, complete too.
    expect(failedOfStripe.body).not.toHaveProperty('counts_complete');
    const byId = await call(`/admin/api/events?type=${type}&id=${encodeURIComponent(`evt_counted_${type}_0`)}`);
    expect(byId.body).not.toHaveProperty('counts_complete');
    // One status a page at a time, newest first, to its last page.
    const failedPages: string[][] = [];
    let cursor: string | null = null;
    do {
      const page = await call(
        `/admin/api/events?type=${type}&status=failed&limit=1${cursor === null ? '' : `&cursor=${cursor}`}`,
      );
      failedPages.push((page.body.events as Array<{ event_id: string }>).map((event) => event.event_id));
      cursor = page.body.next_cursor as string | null;
    } while (cursor !== null && failedPages.length < 5);
    expect(failedPages).toEqual([[`evt_counted_${type}_1`], [`evt_counted_${type}_4`], [`evt_counted_${type}_0`]]);
    expect(await counts(`id=${encodeURIComponent(`evt_counted_${type}_0`)}`)).toEqual({ failed: 1 });
    // The database agrees with the unfiltered figure.
    const [inDatabase] = await sql<{ n: number }[]>`select count(*)::int as n from webhook_events
      where event_type = ${type} and provider = 'acme' and status = 'failed'`;
    expect(inDatabase?.n).toBe(2);
    const first = await call(`/admin/api/events?type=${type}&limit=2`);
    const next = await call(`/admin/api/events?type=${type}&limit=2&cursor=${first.body.next_cursor as string}`);
    expect(next.body).not.toHaveProperty('counts');

    const topic = `counted.${Date.now()}`;
    await insertMessages(sql, 2, { topic, status: 'dead', createdAt: new Date('2026-04-02T10:00:00Z') });
    await insertMessages(sql, 1, { topic, status: 'pending', createdAt: new Date('2026-04-02T12:00:00Z') });
    await insertMessages(sql, 3, { topic, status: 'published', createdAt: new Date('2026-04-01T10:00:00Z') });
    const outbox = async (query: string) => (await call(`/admin/api/outbox?topic=${topic}&${query}`)).body.counts;
    expect(await outbox('status=dead')).toEqual({ dead: 2, pending: 1, published: 3 });
    const dead = await call(`/admin/api/outbox?topic=${topic}&status=dead`);
    expect((dead.body.messages as Array<{ status: string }>).map((message) => message.status)).toEqual([
      'dead',
      'dead',
    ]);
    expect(await outbox('since=2026-04-02T00:00:00Z')).toEqual({ dead: 2, pending: 1 });
    expect(await outbox('since=2026-04-02T11:00:00Z&until=2026-04-03T00:00:00Z')).toEqual({ pending: 1 });
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
    // The ages are of the oldest waiting rows, in seconds by the database's clock.
    await sql`insert into webhook_events (provider, event_id, event_type, status, payload, received_at)
      values ('acme', ${uniqueId('evt_aged')}, 'aged', 'failed', '{}'::jsonb, now() - interval '1 hour')`;
    await insertMessages(sql, 1, { status: 'pending', createdAt: new Date(Date.now() - 3_600_000) });
    const aged = await call('/admin/api/stats');
    expect(aged.body.oldest_unprocessed_seconds).toBeGreaterThanOrEqual(3_590);
    expect(aged.body.oldest_pending_outbox_seconds).toBeGreaterThanOrEqual(3_590);
  });

  it('serves an OpenAPI 3.1 document, generated from the route schemas, naming exactly the routes that exist', async () => {
    const served = await call('/admin/api/openapi.json');
    expect(served.status).toBe(200);
    const document = served.body as {
      openapi: string;
      paths: Record<string, Record<string, { parameters?: Array<{ name: string }>; requestBody?: unknown }>>;
    };
    expect(document.openapi).toBe('3.1.0');
    const documented = Object.entries(document.paths)
      .flatMap(([path, operations]) => Object.keys(operations).map((method) => `${method.toUpperCase()} ${path}`))
      .sort();
    const routed = adminApiRoutes({} as Parameters<typeof adminApiRoutes>[0])
      .routes.filter((route) => route.method !== 'ALL')
      .map((route) => `${route.method} ${route.path.replace(/:(\w+)/g, '{$1}')}`)
      .sort();
    expect(documented).toEqual([...new Set(routed)]);
    const listParameters = document.paths['/admin/api/events']?.get?.parameters?.map((parameter) => parameter.name);
    expect(listParameters).toEqual(
      expect.arrayContaining(['status', 'provider', 'type', 'id', 'since', 'until', 'cursor', 'limit']),
    );
    const components = served.body.components as { schemas: Record<string, { required?: string[] }> };
    expect(components.schemas.OperatorRequest?.required).toEqual(['operator']);
  });
});
