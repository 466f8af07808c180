// The admin surface against hostile inputs and for the audit trail: time bounds and cursors out of
// range are a 400 naming the field (never a 503 from a RangeError deep in a query), in the API and the
// dashboard alike, and both name the same field by one rule (lib/errors.ts refusedField); named tokens (ADMIN_TOKENS) record an action under the token's owner whatever name
// the request types; and every read of a stored payload is logged, who and which, never what.
import { describe, expect, it } from 'vitest';
import { type ConfigWarning, LOW_ENTROPY_DISTINCT, parseConfig } from '../src/config.ts';
import { decodeCursor, encodeCursor, InvalidCursor, pageOf, resumeFrom } from '../src/ops/reads/cursor.ts';
import { EARLIEST_MS, LATEST_MS, parseTimeBound } from '../src/ops/reads/time-bound.ts';
import { buildTestApp } from './helpers/app.ts';
import { configProblems } from './helpers/config-problems.ts';
import { useTestDatabase } from './helpers/database.ts';
import { insertEvent } from './helpers/events.ts';
import { insertMessages, operatorActionRows } from './helpers/outbox.ts';

const { sql, db } = await useTestDatabase();
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

describe('which field a refused query names, the same in the API and the dashboard', () => {
  // The API's rule (lib/errors.ts refusedField): an unknown parameter before a bad value, because
  // zod lists the unknown key last; names bounded to 200 characters and escaped as in JSON, because
  // they are whatever the client sent. The dashboard named the first issue, in full and raw.
  const long = 'k'.repeat(300);
  it.each([
    { list: '/events', query: 'status=lost&zzz=1', field: 'zzz', why: 'an unknown parameter before a bad value' },
    { list: '/events', query: 'limit=0&bogus=1', field: 'bogus', why: 'an unknown parameter before a bad limit' },
    { list: '/outbox', query: 'status=lost&statut=dead', field: 'statut', why: 'the same on the outbox' },
    { list: '/events', query: `${long}=1`, field: `${'k'.repeat(199)}…`, why: 'a long name cut at 200' },
    { list: '/events', query: 'a%0Ab=1', field: 'a\\nb', why: 'a line break escaped' },
    { list: '/outbox', query: '%00=1', field: '\\u0000', why: 'NUL escaped' },
  ])('$list: $why', async ({ list, query, field }) => {
    expect(await get(`/admin/api${list}?${query}`)).toEqual({
      status: 400,
      body: JSON.stringify({ error: 'invalid_request', field }),
    });
    const page = await get(`/admin${list}?${query}`);
    expect(page.status).toBe(400);
    // Each is a parameter the page does not have, and the page says so rather than calling it a bad value.
    expect(page.body.match(/This page has no filter named <strong>(.*?)<\/strong>/s)?.[1]).toBe(field);
  });
});

describe('named admin tokens (ADMIN_TOKENS)', () => {
  /** What parseConfig refuses for this ADMIN_TOKENS beside `env`, by its problems; none when it accepts. */
  const problemsOf = (value: string, env: Record<string, string> = {}) =>
    configProblems(() => parseConfig({ ...env, ADMIN_TOKENS: value }));
  const SHARED = 'shared-admin-token-0123456789';
  const ALICE_OLD = 'alice-old-token-0123456789';
  const ALICE_NEW = 'alice-new-token-9876543210';
  const MALLORY = 'mallory-token-0123456789ab';
  const named = parseConfig({
    ADMIN_TOKEN: SHARED,
    ADMIN_TOKENS: `alice:${ALICE_OLD} alice:${ALICE_NEW} mallory:${MALLORY}`,
  });
  const app = buildTestApp(db, { config: { ADMIN_TOKEN: named.ADMIN_TOKEN, ADMIN_TOKENS: named.ADMIN_TOKENS } });
  const as = async (token: string, path: string, body?: unknown) => {
    const response = await (await app).request(path, {
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { method: 'POST', body: JSON.stringify(body) }),
    });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };
  const replay = async (token: string, typed: string) => {
    const { eventId } = await insertEvent(sql, {
      status: 'failed',
      lastError: 'x',
      attempts: 1,
      version: 2,
      to: 'canceled',
    });
    expect((await as(token, `/admin/api/events/acme/${eventId}/replay`, { operator: typed })).status).toBe(200);
    return (await operatorActionRows(sql, `acme/${eventId}`)).map((row) => row.operator);
  };

  it("records a replay under the token's owner, whatever name the request types", async () => {
    expect(await replay(MALLORY, 'mallory-claims-to-be-alice')).toEqual(['mallory']);
    expect(await replay(MALLORY, 'alice')).toEqual(['mallory']);
  });

  it('accepts both of an owner’s tokens while they overlap (rotation), each recorded under the owner', async () => {
    expect(await replay(ALICE_OLD, 'someone')).toEqual(['alice']);
    expect(await replay(ALICE_NEW, 'someone else')).toEqual(['alice']);
  });

  it('keeps the typed name for the shared ADMIN_TOKEN, and refuses a token nobody holds', async () => {
    expect(await replay(SHARED, 'carol')).toEqual(['carol']);
    expect(await as('nobody-holds-this-token-0123', '/admin/api/stats')).toEqual({
      status: 401,
      body: { error: 'unauthorized' },
    });
  });

  it("records an outbox retry under the token's owner", async () => {
    const [dead] = (await insertMessages(sql, 1, { status: 'dead', attempts: 9 })) as [string];
    expect((await as(ALICE_NEW, `/admin/api/outbox/${dead}/retry`, { operator: 'mallory' })).status).toBe(200);
    expect((await operatorActionRows(sql, dead)).map((row) => row.operator)).toEqual(['alice']);
  });

  it('logs each payload read, who and which, never the payload; a read without the payload logs nothing', async () => {
    const test = await app;
    const { eventId, subscription } = await insertEvent(sql, { status: 'completed', version: 2, to: 'canceled' });
    const [message] = (await insertMessages(sql, 1, { payload: { secret_field: 'outbox-secret-value' } })) as [string];
    const reads = () =>
      test.logs
        .map((line) => JSON.parse(line) as Record<string, unknown>)
        .filter((line) => line.msg === 'operator read payload');
    const before = reads().length;
    expect((await as(MALLORY, `/admin/api/events/acme/${eventId}`)).status).toBe(200);
    expect(reads()).toHaveLength(before);

    expect((await as(MALLORY, `/admin/api/events/acme/${eventId}?payload=true`)).status).toBe(200);
    expect((await as(SHARED, `/admin/api/outbox/${message}?payload=true`)).status).toBe(200);
    const page = await test.request(`/admin/events/acme/${eventId}`, {
      headers: { authorization: `Bearer ${ALICE_OLD}` },
    });
    expect(page.status).toBe(200);
    expect(reads().slice(before)).toEqual([
      expect.objectContaining({ operator: 'mallory', target_kind: 'event', target: `acme/${eventId}` }),
      expect.objectContaining({ operator: null, token: 'ADMIN_TOKEN', target_kind: 'outbox', target: message }),
      expect.objectContaining({ operator: 'alice', target_kind: 'event', target: `acme/${eventId}` }),
    ]);
    const logged = test.logs.join('\n');
    expect(logged).not.toContain(subscription);
    expect(logged).not.toContain('outbox-secret-value');
    for (const token of [SHARED, ALICE_OLD, ALICE_NEW, MALLORY]) expect(logged).not.toContain(token);
  });

  it('reads ADMIN_TOKENS_FILE one pair a line (a name may hold spaces) and refuses bad entries by rule, never by value', () => {
    const config = parseConfig(
      { ADMIN_TOKENS_FILE: '/run/secrets/admin-tokens' },
      { readFile: () => `\uFEFFAlice Smith:${ALICE_OLD}\n\n  \nbob:${MALLORY}\n` },
    );
    expect(config.ADMIN_TOKENS).toEqual([
      { operator: 'Alice Smith', token: ALICE_OLD },
      { operator: 'bob', token: MALLORY },
    ]);
    expect(problemsOf(ALICE_OLD)).toEqual(['ADMIN_TOKENS: each entry must be name:token']);
    expect(problemsOf('alice:short')).toEqual(['ADMIN_TOKENS: each token must be at least 16 characters']);
    expect(problemsOf(`alice:${ALICE_OLD} bob:${ALICE_OLD}`)).toEqual([
      'ADMIN_TOKENS: a token may belong to one name only, and be given once',
    ]);
    expect(problemsOf(`:${ALICE_OLD}`)).toEqual([
      'ADMIN_TOKENS: each name must be 1 to 200 characters, no control characters',
    ]);
    expect(JSON.stringify(problemsOf(`alice:${'a'.repeat(20)}`))).not.toContain('a'.repeat(20));
  });

  it('splits an entry at its last colon: a name may hold colons, a token holds none', () => {
    expect(parseConfig({ ADMIN_TOKENS: `ops:eu:alice:${ALICE_OLD}` }).ADMIN_TOKENS).toEqual([
      { operator: 'ops:eu:alice', token: ALICE_OLD },
    ]);
  });

  it('refuses an ADMIN_TOKEN that is also a named token, naming both variables and never the token', () => {
    const problems = problemsOf(`alice:${ALICE_OLD} mallory:${MALLORY}`, { ADMIN_TOKEN: MALLORY });
    expect(problems).toEqual([
      "ADMIN_TOKEN: must differ from every token of ADMIN_TOKENS (else actions taken with it are recorded under that token's name)",
    ]);
    expect(JSON.stringify(problems)).not.toContain(MALLORY);
  });

  it('refuses a low-entropy named token in production, by variable and never by value; elsewhere warns', () => {
    const weak = 'abababababababab12';
    expect(problemsOf(`alice:${ALICE_OLD} bob:${weak}`, { NODE_ENV: 'production' })).toEqual([
      `ADMIN_TOKENS: low entropy: fewer than ${LOW_ENTROPY_DISTINCT} distinct characters are easy to guess`,
    ]);
    const warnings: ConfigWarning[] = [];
    parseConfig({ ADMIN_TOKENS: `bob:${weak}` }, { warn: (warning) => warnings.push(warning) });
    expect(warnings).toEqual([expect.objectContaining({ variable: 'ADMIN_TOKENS' })]);
  });
});

describe('cursors and time bounds, read one value at a time', () => {
  /** A cursor's text as encodeCursor writes it, of any JSON (a client can send anything). */
  const cursorOf = (value: unknown) =>
    btoa(String.fromCharCode(...new TextEncoder().encode(JSON.stringify(value))))
      .replaceAll('+', '-')
      .replaceAll('/', '_')
      .replace(/=+$/, '');

  it('round-trips a key whose base64 needs both URL-safe characters, and writes no other', () => {
    for (const key of [
      { atMicros: '1', keys: ['ÿÿ', '>>>'] },
      { atMicros: '-5', keys: ['???'] },
    ]) {
      const cursor = encodeCursor(key);
      expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
      expect(decodeCursor(cursor, key.keys.length)).toEqual(key);
    }
    const both = encodeCursor({ atMicros: '1', keys: ['ÿÿ', '>>>'] });
    expect(both).toContain('-');
    expect(both).toContain('_');
  });

  it('refuses a cursor of the wrong shape: not an array, another key count, a part not a string, a time not digits', () => {
    expect(decodeCursor(cursorOf({ at: '1' }), 1)).toBeUndefined();
    expect(decodeCursor(cursorOf(['1', 'a']), 2)).toBeUndefined();
    expect(decodeCursor(cursorOf(['1', 'a', 'b']), 1)).toBeUndefined();
    expect(decodeCursor(cursorOf(['1', 2]), 1)).toBeUndefined();
    expect(decodeCursor(cursorOf([1, 'a']), 1)).toBeUndefined();
    for (const atMicros of [' 12', '12 ', '1.5', 'x12', '12x']) {
      expect(decodeCursor(cursorOf([atMicros, 'a']), 1)).toBeUndefined();
    }
    expect(decodeCursor(cursorOf(['12', 'a']), 1)).toEqual({ atMicros: '12', keys: ['a'] });
  });

  it('takes the first and last microsecond a bound may name, and nothing past them', () => {
    const earliest = (BigInt(EARLIEST_MS) * 1000n).toString();
    const latest = (BigInt(LATEST_MS) * 1000n + 999n).toString();
    expect(decodeCursor(cursorOf([earliest, 'a']), 1)).toEqual({ atMicros: earliest, keys: ['a'] });
    expect(decodeCursor(cursorOf([latest, 'a']), 1)).toEqual({ atMicros: latest, keys: ['a'] });
    expect(decodeCursor(cursorOf([(BigInt(earliest) - 1n).toString(), 'a']), 1)).toBeUndefined();
    expect(decodeCursor(cursorOf([(BigInt(latest) + 1n).toString(), 'a']), 1)).toBeUndefined();
  });

  it('resumes from nothing without a cursor and refuses one that does not decode', () => {
    expect(resumeFrom(undefined, 1)).toBeUndefined();
    expect(resumeFrom(cursorOf(['12', 'a']), 1)).toEqual({ atMicros: '12', keys: ['a'] });
    expect(() => resumeFrom('not-a-cursor', 1)).toThrow(InvalidCursor);
    expect(() => resumeFrom('not-a-cursor', 1)).toThrow('not a cursor from a previous page');
  });

  it('gives a next cursor only when a row beyond the page came', () => {
    const rows = [
      { atMicros: '3', id: 'c' },
      { atMicros: '2', id: 'b' },
    ];
    expect(pageOf(rows, 2, (row) => [row.id])).toEqual({ rows: [{ id: 'c' }, { id: 'b' }], nextCursor: null });
    const paged = pageOf(rows, 1, (row) => [row.id]);
    expect(paged.rows).toEqual([{ id: 'c' }]);
    expect(decodeCursor(paged.nextCursor ?? '', 1)).toEqual({ atMicros: '3', keys: ['c'] });
  });

  it('reads a duration back from now up to a century, blanks around it aside, and nothing else', () => {
    const nowMs = Date.UTC(2026, 5, 1);
    expect(parseTimeBound(' 90s ', nowMs)).toEqual(new Date(nowMs - 90_000));
    expect(parseTimeBound('36500d', nowMs)).toEqual(new Date(nowMs - 36_500 * 86_400_000));
    expect(parseTimeBound('36501d', nowMs)).toBeUndefined();
    expect(parseTimeBound('x90s', nowMs)).toBeUndefined();
    expect(parseTimeBound('90sx', nowMs)).toBeUndefined();
  });

  it('takes an instant from year 1 to the last millisecond of year 9999, and nothing past them', () => {
    expect(parseTimeBound('0001-01-01T00:00:00Z', 0)?.getTime()).toBe(EARLIEST_MS);
    expect(parseTimeBound('9999-12-31T23:59:59.999Z', 0)?.getTime()).toBe(LATEST_MS);
    expect(parseTimeBound('9999-12-31T23:59:59.999-01:00', 0)).toBeUndefined();
  });

  it('refuses a month that is not one, whatever the year', () => {
    // JavaScript's own parser reads 0001-13-01 as 2001-01-13 (a year below 13 taken for a month):
    // the calendar check, not Date, must refuse it.
    for (const month of ['00', '13', '99']) {
      for (const year of ['0001', '0012', '2026']) expect(parseTimeBound(`${year}-${month}-01`, 0)).toBeUndefined();
    }
    expect(parseTimeBound('0012-12-31', 0)?.toISOString()).toBe('0012-12-31T00:00:00.000Z');
  });
});
