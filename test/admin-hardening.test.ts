// The admin surface against hostile inputs and for the audit trail: time bounds and cursors out of
// range are a 400 naming the field (never a 503 from a RangeError deep in a query), in the API and the
// dashboard alike.
import { describe, expect, it } from 'vitest';
import { encodeCursor } from '../src/ops/cursor.ts';
import { buildTestApp } from './helpers/app.ts';
import { useTestDatabase } from './helpers/database.ts';

const { db } = await useTestDatabase();
const TOKEN = 'admin-token-for-tests-0123456789';
const test = await buildTestApp(db, { config: { ADMIN_TOKEN: TOKEN } });
const bearer = { authorization: `Bearer ${TOKEN}` };

const get = async (path: string) => {
  const response = await test.request(path, { headers: bearer });
  return { status: response.status, body: await response.text() };
};

describe('time bounds and cursors out of range', () => {
  const nulCursor = encodeCursor({ atMicros: '1', keys: ['acme', 'a\u0000b'] });
  const farCursor = encodeCursor({ atMicros: '-999999999999999999', keys: ['acme', 'evt'] });
  const outboxCursor = encodeCursor({
    atMicros: '-999999999999999999',
    keys: ['00000000-0000-0000-0000-000000000000'],
  });
  it.each([
    ['since', 'since=99999999d'],
    ['since', 'since=999999999d'],
    ['since', 'since=0000-01-01'],
    ['until', 'until=2026-02-30'],
    ['since', 'since=2026-13-01'],
    ['since', 'since=2026-01-01T25:00:00Z'],
    ['cursor', `cursor=${nulCursor}`],
    ['cursor', `cursor=${farCursor}`],
  ])('events: %s (%s) is 400 naming the field', async (field, query) => {
    expect(await get(`/admin/api/events?${query}`)).toEqual({
      status: 400,
      body: JSON.stringify({ error: 'invalid_request', field }),
    });
  });

  it.each([
    ['since', 'since=99999999d'],
    ['until', 'until=2026-02-30'],
    ['cursor', `cursor=${outboxCursor}`],
    ['cursor', `cursor=${encodeCursor({ atMicros: '1', keys: ['not-a-message-id'] })}`],
  ])('outbox: %s (%s) is 400 naming the field', async (field, query) => {
    expect(await get(`/admin/api/outbox?${query}`)).toEqual({
      status: 400,
      body: JSON.stringify({ error: 'invalid_request', field }),
    });
  });

  it('still takes what is valid: a leap day, a date with an offset, a long duration', async () => {
    for (const query of ['since=2024-02-29', 'since=2026-01-01T10:00:00%2B02:00', 'since=3650d', 'until=2026-02-28']) {
      expect((await get(`/admin/api/events?${query}`)).status).toBe(200);
    }
  });

  it.each(['since=99999999d', 'since=0000-01-01', 'until=2026-02-30'])(
    'dashboard: %s is refused as a bad value, not a 503',
    async (query) => {
      const events = await get(`/admin/events?${query}`);
      expect(events.status).toBe(400);
      const outbox = await get(`/admin/outbox?${query}`);
      expect(outbox.status).toBe(400);
    },
  );

  it('dashboard: a cursor holding NUL or out of range is refused as a bad value', async () => {
    expect((await get(`/admin/events?cursor=${nulCursor}`)).status).toBe(400);
    expect((await get(`/admin/events?cursor=${farCursor}`)).status).toBe(400);
  });
});
