// Refused deliveries kept for operators: each class (404, 413, 415, 401, 400, 503) lands in the ring
// with its reason and detail, its credentials redacted and nothing of its body; a flood of bad
// signatures leaves the ring at its size and the counts exact; the admin API lists both; retention
// removes old counts; the dashboard page reads well at 1280 and 390 px.
// Needs a process: headless Chromium renders the refusals page.
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { connectDatabase } from '../src/db/client.ts';
import { defaultHandlers, defineHandler, type HandlerMap } from '../src/domain/handlers.ts';
import {
  createRejectionLog,
  type LostRejections,
  REJECTION_RING_SIZE,
  RejectionLog,
} from '../src/inbox/rejection-log.ts';
import { HEADERS_KEPT_MAX, HEADERS_LEFT_OUT, REDACTED } from '../src/inbox/rejections.ts';
import { purgeByRetention } from '../src/inbox/retention.ts';
import { AppError } from '../src/lib/errors.ts';
import { createLogger } from '../src/lib/logger.ts';
import { labelBounds, Metrics } from '../src/lib/metrics.ts';
import { acmeEvent, signedHeaders, TEST_NOW_MS, TEST_SECRET } from './helpers/acme.ts';
import { buildTestApp, type TestApp } from './helpers/app.ts';
import { ARTIFACTS, hasChromium, launchChromium, openPage, serveLocally } from './helpers/browser.ts';
import { runCli } from './helpers/cli.ts';
import { useTestDatabase } from './helpers/database.ts';
import { insertEvent } from './helpers/events.ts';

const { sql, db, url } = await useTestDatabase();

/** The shipped handlers, except that acme's subscription.updated always fails (a 500, the event stored as failed). */
const failingHandlers: HandlerMap = {
  ...defaultHandlers,
  acme: {
    ...defaultHandlers.acme,
    'subscription.updated': defineHandler({
      schema: z.unknown(),
      async apply() {
        throw new Error('ledger down');
      },
    }),
  },
};
const TOKEN = 'rejections-token-for-tests-0123456789';
const bearer = { authorization: `Bearer ${TOKEN}` };
const MINUTE_MS = 60_000;

interface RingRow {
  slot: number;
  at: Date;
  provider: string;
  status_code: number;
  reason: string;
  detail: string | null;
  trace_id: string | null;
  headers: Record<string, string>;
}

/** A marker no random hex id can hold by chance (it has letters beyond f), put in every refused body. */
const bodyMarker = () => `BODYMARKERzq${randomBytes(6).toString('hex')}`;

async function appWithLog(overrides: Parameters<typeof buildTestApp>[1] = {}) {
  const log = new RejectionLog();
  const test = await buildTestApp(db, {
    rejections: log,
    ...overrides,
    config: { ADMIN_TOKEN: TOKEN, MAX_BODY_BYTES: 1024, ...overrides.config },
  });
  return { test, log };
}

/** The ring's rows for this request's trace id (each test's refusals carry one of their own). */
async function ringRowsOf(traceId: string): Promise<RingRow[]> {
  return sql<RingRow[]>`select * from webhook_rejections where trace_id = ${traceId} order by at desc, slot desc`;
}

/** A W3C traceparent of a fresh trace id: the ring keeps the sender's trace id, so each refusal is found by it. */
function traced(): { traceId: string; traceparent: string } {
  const traceId = randomBytes(16).toString('hex');
  return { traceId, traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01` };
}

/** Posts `body` with `headers` and a fresh trace, flushes the log, and answers the status and the one ring row. */
async function refused(
  { test, log }: { test: TestApp; log: RejectionLog },
  path: string,
  body: string,
  headers: Record<string, string>,
) {
  const { traceId, traceparent } = traced();
  const response = await test.request(path, { method: 'POST', body, headers: { ...headers, traceparent } });
  await log.flush(db);
  const rows = await ringRowsOf(traceId);
  expect(rows).toHaveLength(1);
  const [row] = rows as [RingRow];
  return { status: response.status, row };
}

describe('each refusal lands in the ring with its reason, never its body', () => {
  it('404, 413, 415, 401 (three reasons) and 400, each with its detail; credentials redacted', async () => {
    const app = await appWithLog();
    const marker = bodyMarker();
    const body = JSON.stringify(acmeEvent({ data: { id: 'sub_1', status: 'active', note: marker } }));
    const signed = await signedHeaders(body);
    const authorization = `Bearer token-${randomBytes(8).toString('hex')}`;
    const invalid = JSON.stringify(acmeEvent({ version: -1, data: { id: 'sub_1', status: 'active', note: marker } }));
    const cases: Array<{
      name: string;
      path: string;
      body: string;
      headers: Record<string, string>;
      expected: Partial<RingRow>;
    }> = [
      {
        name: '404',
        path: '/webhooks/nosuchsender',
        body,
        headers: signed,
        expected: { provider: '(unknown)', status_code: 404, reason: 'not_found', detail: 'nosuchsender' },
      },
      {
        name: '413',
        path: '/webhooks/acme',
        body: JSON.stringify(acmeEvent({ data: { id: 'sub_1', status: 'active', pad: marker.repeat(100) } })),
        headers: signed,
        expected: { provider: 'acme', status_code: 413, reason: 'payload_too_large', detail: 'limit 1024 bytes' },
      },
      {
        name: '415',
        path: '/webhooks/acme',
        body,
        headers: { ...signed, 'content-type': 'text/plain; charset=utf-8' },
        expected: { status_code: 415, reason: 'unsupported_media_type', detail: 'text/plain; charset=utf-8' },
      },
      {
        name: '401 bad signature',
        path: '/webhooks/acme',
        body,
        headers: { ...signed, 'x-acme-signature': '0'.repeat(64), authorization, 'x-api-key': 'key-value-1234' },
        expected: { status_code: 401, reason: 'signature_mismatch', detail: null },
      },
      {
        name: '401 missing timestamp',
        path: '/webhooks/acme',
        body,
        headers: { 'content-type': 'application/json', 'x-acme-signature': signed['x-acme-signature'] ?? '' },
        expected: { status_code: 401, reason: 'headers_missing' },
      },
      {
        name: '401 old timestamp',
        path: '/webhooks/acme',
        body,
        headers: await signedHeaders(body, { timestamp: TEST_NOW_MS / 1000 - 301 }),
        expected: { status_code: 401, reason: 'timestamp_outside_tolerance' },
      },
      {
        name: '400',
        path: '/webhooks/acme',
        body: invalid,
        headers: await signedHeaders(invalid),
        expected: { status_code: 400, reason: 'invalid_payload', detail: 'version' },
      },
    ];
    const rows: RingRow[] = [];
    for (const refusal of cases) {
      const headers = { ...refusal.headers, 'user-agent': 'tests/1.0' };
      const { status, row } = await refused(app, refusal.path, refusal.body, headers);
      expect(status, refusal.name).toBe(refusal.expected.status_code);
      expect(row, refusal.name).toMatchObject(refusal.expected);
      rows.push(row);
    }
    const [, , , badSignature] = rows as [RingRow, RingRow, RingRow, RingRow];
    expect(badSignature.headers).toMatchObject({
      'x-acme-signature': REDACTED,
      authorization: REDACTED,
      'x-api-key': REDACTED,
      'x-acme-timestamp': signed['x-acme-timestamp'],
      'user-agent': 'tests/1.0',
      'content-type': 'application/json',
    });
    const everything = JSON.stringify(await sql`select * from webhook_rejections`);
    expect(everything).not.toContain(marker);
    expect(everything).not.toContain(authorization);
    expect(everything).not.toContain(signed['x-acme-signature']);
    expect(everything).not.toContain('key-value-1234');
    expect(everything).not.toContain(TEST_SECRET);
  });

  it('redacts credential-like query parameters inside header values (URLs, query strings, fragments), the rest as sent', async () => {
    const app = await appWithLog();
    const body = JSON.stringify(acmeEvent());
    const secret = () => `SECRETzq${randomBytes(6).toString('hex')}`;
    const [token, apiKey, amzSignature, clientSecret, fragmentToken, nestedSig, bareKey] = Array.from(
      { length: 7 },
      secret,
    );
    const sent = {
      'x-forwarded-uri': `/webhooks/acme?Access_Token=${token}&page=2`,
      'x-original-url': `https://hooks.example/in?apikey=${apiKey}&X-Amz-Signature=${amzSignature};client_secret=${clientSecret}`,
      referer: `https://app.example/cb?state=ok#access_token=${fragmentToken}&next=https://x.example/?sig=${nestedSig}`,
      'x-original-query': `api_key=${bareKey}&author=ana`,
      'x-request-id': 'req=42&keyword=blue',
      'x-forwarded-for': '203.0.113.7',
    };
    const { status, row } = await refused(app, '/webhooks/acme', body, {
      ...(await signedHeaders(body)),
      'x-acme-signature': '0'.repeat(64),
      ...sent,
    });
    expect(status).toBe(401);
    const expected = {
      'x-forwarded-uri': `/webhooks/acme?Access_Token=${REDACTED}&page=2`,
      'x-original-url': `https://hooks.example/in?apikey=${REDACTED}&X-Amz-Signature=${REDACTED};client_secret=${REDACTED}`,
      referer: `https://app.example/cb?state=ok#access_token=${REDACTED}&next=https://x.example/?sig=${REDACTED}`,
      'x-original-query': `api_key=${REDACTED}&author=ana`,
      'x-request-id': 'req=42&keyword=blue',
      'x-forwarded-for': '203.0.113.7',
    };
    expect(row.headers).toMatchObject(expected);
    const stored = JSON.stringify(await sql`select * from webhook_rejections`);
    for (const credential of [token, apiKey, amzSignature, clientSecret, fragmentToken, nestedSig, bareKey]) {
      expect(stored).not.toContain(credential);
    }

    const response = await app.test.request(`/admin/api/rejections?since=${new Date(row.at).toISOString()}`, {
      headers: bearer,
    });
    const { rejections } = (await response.json()) as {
      rejections: Array<{ trace_id: string | null; headers: object }>;
    };
    expect(rejections.find((listed) => listed.trace_id === row.trace_id)?.headers).toMatchObject(expected);
  });

  it('503: backlog full, deadline passed, a paused sender; and a header flood is cut at its bound', async () => {
    const asyncApp = await appWithLog({ config: { PROCESSING_MODE: 'async', INBOX_MAX_BACKLOG: 0 } });
    const waiting = await insertEvent(sql, { status: 'received' });
    const body = JSON.stringify(acmeEvent());
    const full = await refused(asyncApp, '/webhooks/acme', body, await signedHeaders(body));
    expect(full).toMatchObject({ status: 503, row: { provider: 'acme', status_code: 503, reason: 'backlog_full' } });
    await sql`delete from webhook_events where event_id = ${waiting.eventId}`;

    const slow = await appWithLog({
      config: { HANDLER_DEADLINE_MS: 5 },
      // Slower than the deadline on purpose; the deadline's timer, set first, always expires first.
      beforeStore: () => new Promise((resolve) => setTimeout(resolve, 50)),
    });
    const late = JSON.stringify(acmeEvent());
    const deadline = await refused(slow, '/webhooks/acme', late, await signedHeaders(late));
    expect(deadline).toMatchObject({ status: 503, row: { status_code: 503, reason: 'deadline_passed' } });

    // A pause (or any other 503) names its reason in `why`: a known one is kept, another reads as the code.
    // A fault of ours that is no AppError is answered 503 by the app, and recorded as such.
    for (const [thrown, reason] of [
      [new AppError('unavailable', { why: { reason: 'sender_paused' } }), 'sender_paused'],
      [new AppError('unavailable', { why: { reason: 'made_up_reason' } }), 'unavailable'],
      [new TypeError('a bug of ours'), 'unavailable'],
    ] as const) {
      const paused = await appWithLog({
        beforeStore: async () => {
          throw thrown;
        },
      });
      const event = JSON.stringify(acmeEvent());
      const answer = await refused(paused, '/webhooks/acme', event, await signedHeaders(event));
      expect(answer).toMatchObject({ status: 503, row: { reason } });
    }

    const many = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`x-extra-${i}`, 'v'.repeat(300)]));
    const flooded = await refused(asyncApp, '/webhooks/acme', body, { ...many, 'content-type': 'text/plain' });
    expect(Object.keys(flooded.row.headers)).toHaveLength(HEADERS_KEPT_MAX + 1);
    expect(Number(flooded.row.headers[HEADERS_LEFT_OUT])).toBe(40 + 2 - HEADERS_KEPT_MAX);
    for (const [name, value] of Object.entries(flooded.row.headers)) {
      if (name.startsWith('x-extra-')) expect(value).toBe(`${'v'.repeat(199)}…`);
    }
  });

  it('records nothing without a log, and nothing for accepted or failed deliveries', async () => {
    const before = await sql<[{ n: number }]>`select count(*)::int as n from webhook_rejection_counts`;
    const plain = await buildTestApp(db, { config: { MAX_BODY_BYTES: 1024 } });
    const { traceparent } = traced();
    const body = JSON.stringify(acmeEvent());
    const forged = { ...(await signedHeaders(body)), 'x-acme-signature': '0'.repeat(64), traceparent };
    expect((await plain.request('/webhooks/acme', { method: 'POST', body, headers: forged })).status).toBe(401);
    const { test, log } = await appWithLog();
    expect(
      (await test.request('/webhooks/acme', { method: 'POST', body, headers: await signedHeaders(body) })).status,
    ).toBe(200);
    // A handler's failure stores the event as failed (500): not a refusal.
    const failing = await appWithLog({ handlers: failingHandlers });
    const failed = JSON.stringify(acmeEvent());
    expect(
      (
        await failing.test.request('/webhooks/acme', {
          method: 'POST',
          body: failed,
          headers: await signedHeaders(failed),
        })
      ).status,
    ).toBe(500);
    expect(log.pending + failing.log.pending).toBe(0);
    await log.flush(db);
    expect(await sql`select count(*)::int as n from webhook_rejection_counts`).toEqual(before);
  });
});

/** A flush to a database nobody listens on: it fails, as one during an outage does. */
async function flushToNowhere(log: RejectionLog): Promise<void> {
  const unreachable = connectDatabase({
    url: 'postgres://postgres@127.0.0.1:1/none',
    maxConnections: 1,
    statementTimeoutMs: 1000,
  });
  try {
    await log.flush(unreachable.db);
  } finally {
    await unreachable.close();
  }
}

describe('a flush that cannot write', () => {
  it('says how many refusals and samples it lost, and the next flush writes only what came after', async () => {
    const lost: LostRejections[] = [];
    const log = new RejectionLog({ onLost: (report) => lost.push(report) });
    const test = await buildTestApp(db, { rejections: log });
    const refuse = () => test.request('/webhooks/nosuchsender', { method: 'POST', body: '{}', headers: {} });
    await refuse();
    await refuse();
    await flushToNowhere(log);
    expect(lost).toEqual([{ rejections: 2, samples: 2, error: expect.anything() }]);
    expect(log.pending).toBe(0);
    const { traceId, traceparent } = traced();
    await test.request('/webhooks/nosuchsender', { method: 'POST', body: '{}', headers: { traceparent } });
    await log.flush(db);
    expect(await ringRowsOf(traceId)).toHaveLength(1);
    expect(lost).toHaveLength(1);
  });
});

describe("the runtimes' rejection log", () => {
  it('counts the refusals a failed flush lost in /metrics and says so in a warning', async () => {
    const metrics = new Metrics(labelBounds(['acme'], defaultHandlers));
    const lines: string[] = [];
    const log = createRejectionLog({
      logger: createLogger({ level: 'warn', now: () => new Date(), write: (line) => lines.push(line) }),
      metrics,
    });
    const test = await buildTestApp(db, { rejections: log });
    for (let n = 0; n < 3; n++) await test.request('/webhooks/nosuchsender', { method: 'POST', body: '{}' });
    await flushToNowhere(log);
    expect(metrics.render([])).toContain(
      'webhook_spool_records_lost_total{spool="rejections",reason="write_failed"} 3',
    );
    expect(lines.map((line) => JSON.parse(line) as { msg: string; rejections: number })).toMatchObject([
      { msg: 'refused deliveries not recorded', rejections: 3 },
    ]);
  });
});

describe('a flood of bad signatures', () => {
  it('leaves the ring at its size and the counts exact, holding at most the ring in memory', async () => {
    const { test, log } = await appWithLog();
    // A minute of its own, so the count read back is the flood's alone.
    const floodMs = TEST_NOW_MS + 7 * 86_400_000;
    test.setNow(floodMs);
    const body = JSON.stringify(acmeEvent());
    const forged = {
      ...(await signedHeaders(body, { timestamp: floodMs / 1000 })),
      'x-acme-signature': 'f'.repeat(64),
    };
    let mostHeld = 0;
    for (let i = 1; i <= 4000; i++) {
      const response = await test.request('/webhooks/acme', { method: 'POST', body, headers: forged });
      expect(response.status).toBe(401);
      mostHeld = Math.max(mostHeld, log.pending);
      // Flushed now and then, not on a round number: the ring wraps inside a flush's batch too.
      if (i % 1500 === 0) await log.flush(db);
    }
    await log.flush(db);
    expect(mostHeld).toBe(REJECTION_RING_SIZE);
    expect(await sql`select count(*)::int as n, min(slot) as low, max(slot) as high from webhook_rejections`).toEqual([
      { n: REJECTION_RING_SIZE, low: 0, high: REJECTION_RING_SIZE - 1 },
    ]);
    const flood = new Date(Math.floor(floodMs / MINUTE_MS) * MINUTE_MS);
    expect(
      await sql`select provider, reason, n::int from webhook_rejection_counts where bucket_start = ${flood}`,
    ).toEqual([{ provider: 'acme', reason: 'signature_mismatch', n: 4000 }]);
    // Every slot now holds one of the flood's refusals.
    expect(
      await sql`select count(*)::int as n from webhook_rejections where at >= ${flood} and reason = 'signature_mismatch'`,
    ).toEqual([{ n: REJECTION_RING_SIZE }]);
  });
});

describe('the admin API', () => {
  it('lists the ring newest first under its filters, and counts per sender and reason over a range', async () => {
    const { test, log } = await appWithLog();
    // An hour of its own, a week after the flood's minute.
    const startMs = TEST_NOW_MS + 14 * 86_400_000;
    const body = JSON.stringify(acmeEvent());
    for (const [offsetMs, path, headers] of [
      [0, '/webhooks/madeup', { 'content-type': 'application/json' }],
      [MINUTE_MS, '/webhooks/acme', { 'content-type': 'text/csv' }],
      [2 * MINUTE_MS, '/webhooks/acme', { 'content-type': 'text/xml' }],
      [2 * MINUTE_MS + 1, '/webhooks/another1', { 'content-type': 'application/json' }],
    ] as const) {
      test.setNow(startMs + offsetMs);
      await test.request(path, { method: 'POST', body, headers });
    }
    await log.flush(db);
    test.setNow(startMs + 3 * MINUTE_MS);
    const get = async (path: string) => {
      const response = await test.request(path, { headers: bearer });
      return { status: response.status, body: (await response.json()) as Record<string, unknown> };
    };
    const since = new Date(startMs).toISOString();
    const listed = await get(`/admin/api/rejections?reason=unsupported_media_type&since=${since}&limit=1`);
    expect(listed).toEqual({
      status: 200,
      body: {
        ring_size: REJECTION_RING_SIZE,
        rejections: [
          {
            at: new Date(startMs + 2 * MINUTE_MS).toISOString(),
            provider: 'acme',
            status: 415,
            reason: 'unsupported_media_type',
            detail: 'text/xml',
            trace_id: null,
            headers: { 'content-type': 'text/xml' },
          },
        ],
      },
    });
    const unknown = await get(`/admin/api/rejections?provider=(unknown)&since=${since}`);
    expect((unknown.body.rejections as Array<{ detail: string }>).map((row) => row.detail)).toEqual([
      'another1',
      'madeup',
    ]);

    const counted = await get(
      `/admin/api/rejections/counts?since=${since}&until=${new Date(startMs + 2 * MINUTE_MS).toISOString()}`,
    );
    expect(counted).toEqual({
      status: 200,
      body: {
        total: 2,
        counts: [
          {
            provider: '(unknown)',
            reason: 'not_found',
            status: 404,
            n: 1,
            first_minute: since,
            last_minute: since,
          },
          {
            provider: 'acme',
            reason: 'unsupported_media_type',
            status: 415,
            n: 1,
            first_minute: new Date(startMs + MINUTE_MS).toISOString(),
            last_minute: new Date(startMs + MINUTE_MS).toISOString(),
          },
        ],
      },
    });
    const all = await get(`/admin/api/rejections/counts?since=${since}`);
    expect(all.body).toMatchObject({ total: 4 });
    expect((all.body.counts as Array<{ provider: string; n: number }>)[0]).toMatchObject({
      provider: '(unknown)',
      n: 2,
    });

    for (const [path, field] of [
      ['/admin/api/rejections?reason=bogus', 'reason'],
      ['/admin/api/rejections?provider=nobody', 'provider'],
      ['/admin/api/rejections?limit=1001', 'limit'],
      ['/admin/api/rejections?other=1', 'other'],
      ['/admin/api/rejections/counts?since=yesterday', 'since'],
    ] as const) {
      expect(await get(path), path).toEqual({ status: 400, body: { error: 'invalid_request', field } });
    }
    expect((await test.request('/admin/api/rejections', {})).status).toBe(401);
    const document = (await get('/admin/api/openapi.json')).body as { paths: Record<string, unknown> };
    expect(Object.keys(document.paths)).toEqual(
      expect.arrayContaining(['/admin/api/rejections', '/admin/api/rejections/counts']),
    );
  });

  it('the CLI lists the same rows, and refuses an unknown reason as a usage error', async () => {
    const listed = await runCli(['rejections', 'list', '--provider', '(unknown)', '--limit', '2', '--json'], {
      DATABASE_URL: url,
    });
    expect(listed.code).toBe(0);
    const rows = JSON.parse(listed.output) as Array<{ provider: string; status: number; reason: string }>;
    expect(rows).toHaveLength(2);
    for (const row of rows) expect(row).toMatchObject({ provider: '(unknown)', status: 404, reason: 'not_found' });
    // The API test's refusals, after the flood had filled the ring.
    const table = await runCli(['rejections', 'list', '--reason', 'unsupported_media_type'], { DATABASE_URL: url });
    expect(table.code).toBe(0);
    expect(table.output).toContain('text/xml');
    expect((await runCli(['rejections', 'list', '--reason', 'bogus'], { DATABASE_URL: url })).code).toBe(2);
  });

  it('purges counts older than EVENT_RETENTION_DAYS and keeps the rest', async () => {
    const nowMs = Date.now();
    const old = new Date(Math.floor((nowMs - 31 * 86_400_000) / MINUTE_MS) * MINUTE_MS);
    const recent = new Date(Math.floor((nowMs - 29 * 86_400_000) / MINUTE_MS) * MINUTE_MS);
    await sql`insert into webhook_rejection_counts (bucket_start, provider, reason, n)
      values (${old}, 'acme', 'purge_old', 3), (${recent}, 'acme', 'purge_recent', 2)`;
    const summary = await purgeByRetention(
      db,
      { PAYLOAD_RETENTION_DAYS: 7, EVENT_RETENTION_DAYS: 30 },
      { nowMs: () => nowMs, budgetMs: 10_000 },
    );
    expect(summary.rejectionCountsDeleted).toBeGreaterThanOrEqual(1);
    expect(await sql`select reason from webhook_rejection_counts where reason like 'purge_%' order by reason`).toEqual([
      { reason: 'purge_recent' },
    ]);
  });
});

describe('the dashboard', () => {
  // At the real time: the overview's window ends now.
  const dashboard = appWithLog({ clock: () => Date.now() });

  /** Refusals of each kind a sender makes at the real time, with the headers GitHub sends. */
  async function refuseSome(): Promise<void> {
    const { test, log } = await dashboard;
    const body = JSON.stringify(acmeEvent());
    const github = {
      'user-agent': 'GitHub-Hookshot/5f2d1b9',
      'x-github-delivery': '72d3162e-cc78-11e3-81ab-4c9367dc0958',
      'x-github-event': 'push',
      'x-hub-signature-256': `sha256=${'a'.repeat(64)}`,
    };
    for (const [path, headers] of [
      ['/webhooks/github', { ...github, 'content-type': 'application/json' }],
      ['/webhooks/acme', { ...github, 'content-type': 'application/x-www-form-urlencoded' }],
      [
        '/webhooks/acme',
        {
          ...(await signedHeaders(body, { timestamp: Math.floor(Date.now() / 1000) })),
          'x-acme-signature': '0'.repeat(64),
        },
      ],
      ['/webhooks/acme', { 'content-type': 'application/json' }],
    ] as const) {
      await test.request(path, { method: 'POST', body, headers });
    }
    await log.flush(db);
  }

  it('shows counts and the recent list, refuses a bad filter, and the overview shows the refused rate', async () => {
    await refuseSome();
    const { test } = await dashboard;
    const response = await test.request('/admin/rejections?since=1h', { headers: bearer });
    expect(response.status).toBe(200);
    const html = await response.text();
    expect(html).toContain('data-count="(unknown)/not_found"');
    expect(html).toContain('data-count="acme/unsupported_media_type"');
    expect(html).toContain('application/x-www-form-urlencoded');
    expect(html).toContain('data-rejection="signature_mismatch"');
    expect(html).not.toContain('a'.repeat(64));
    const narrowed = await (
      await test.request('/admin/rejections?provider=acme&reason=unsupported_media_type', { headers: bearer })
    ).text();
    expect(narrowed).not.toContain('data-rejection="signature_mismatch"');
    const bad = await test.request('/admin/rejections?reason=bogus', { headers: bearer });
    expect(bad.status).toBe(400);
    expect(await bad.text()).toContain('<strong>reason</strong>');

    const overview = await (await test.request('/admin', { headers: bearer })).text();
    // The refusals of this file's dashboard tests at the real time: at least the four just made.
    const refused = /<strong id="refused">(\d+)<\/strong>/.exec(overview)?.[1];
    expect(Number(refused)).toBeGreaterThanOrEqual(4);
    expect(overview).toMatch(/<span class="label" id="refused-rate">[0-9.]+ a minute, \d+% of deliveries<\/span>/);
    expect(overview).toContain('Events accepted and deliveries refused per minute');
  });

  describe.skipIf(!hasChromium)('in headless chromium', () => {
    let closeServer: () => Promise<void> = async () => {};
    afterAll(() => closeServer());

    it('reads at 1280 and 390 px without sideways scrolling, headers folded', async () => {
      await refuseSome();
      const { test } = await dashboard;
      const { origin, close } = await serveLocally(test.app);
      closeServer = close;
      mkdirSync(ARTIFACTS, { recursive: true });
      const browser = await launchChromium();
      try {
        for (const width of [1280, 390]) {
          const page = await openPage(browser, { viewport: { width, height: 900 } });
          await page.goto(`${origin}/admin`);
          await page.fill('#sign-in input[name="token"]', TOKEN);
          await page.click('#sign-in button');
          await page.locator('h1', { hasText: 'Overview' }).waitFor();
          await page.screenshot({ path: `${ARTIFACTS}/rejections-overview-${width}.png`, fullPage: true });
          await page.click('header nav a:has-text("Refused")');
          await page.locator('h1', { hasText: 'Refused deliveries' }).waitFor();
          expect(await page.locator('#rejection-counts tbody tr').count()).toBeGreaterThanOrEqual(3);
          const first = page
            .locator('#recent-rejections tr[data-rejection="unsupported_media_type"] details.headers')
            .first();
          await first.locator('summary').click();
          await first.locator('dd', { hasText: REDACTED }).first().waitFor();
          const scrolls = await page.evaluate(
            () =>
              (globalThis as unknown as { document: { documentElement: { scrollWidth: number } } }).document
                .documentElement.scrollWidth,
          );
          expect(scrolls, `${width} px`).toBeLessThanOrEqual(width);
          await page.screenshot({ path: `${ARTIFACTS}/rejections-${width}.png`, fullPage: true });
          await page.close();
        }
      } finally {
        await browser.close();
      }
    });
  });
});
