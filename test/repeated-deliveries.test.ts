// A copy of a delivery answered in full is answered from memory: 200 as an all-duplicate delivery,
// before its body is read, writing nothing (no event row, no delivery-log record), counted per sender
// on /metrics. Only a delivery answered in full is remembered (a failed event's retry is processed),
// only by a signature that verifies (one changed byte is a 401), only for a while (the injected
// clock), and only so many (the memory's bound).
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineHandler, type HandlerMap } from '../src/domain/handlers.ts';
import { createDeliveryLog } from '../src/inbox/delivery-log.ts';
import { ANSWERED_DELIVERIES } from '../src/inbox/intake.ts';
import { createLogger } from '../src/lib/logger.ts';
import { RecentKeys } from '../src/lib/recent-keys.ts';
import { TEST_NOW_MS } from './helpers/acme.ts';
import { buildTestApp, type TestApp } from './helpers/app.ts';
import { useTestDatabase } from './helpers/database.ts';
import { enableNamedSenders, lineBody, lineEvent, namedSenders } from './helpers/named-senders.ts';

const { sql, db } = await useTestDatabase();
const enabledSenders = await enableNamedSenders();
const line = namedSenders.find((sender) => sender.name === 'line');
if (line === undefined) throw new Error('no named sender line');

const DUPLICATE_BODY = '{"received":true,"duplicate":true}';

/** LINE's event type applied by a handler that fails for the ids in `failOn`. */
function handlers(failOn: Set<string>): HandlerMap {
  return {
    line: {
      follow: defineHandler({
        schema: z.looseObject({}),
        async apply({ event }) {
          if (failOn.has(event.eventId)) throw new Error('ledger down');
        },
      }),
    },
  };
}

function lineApp(failOn = new Set<string>(), overrides: Parameters<typeof buildTestApp>[1] = {}) {
  const log = createDeliveryLog({ logger: createLogger({ level: 'silent', now: () => new Date() }) });
  const app = buildTestApp(db, { enabledSenders, handlers: handlers(failOn), deliveryLog: log, ...overrides });
  return { log, app };
}

/** A LINE batch of `count` fresh events, its ids, and a signature of its body. */
function lineBatch(count: number) {
  const events = Array.from({ length: count }, () => lineEvent(Math.floor(TEST_NOW_MS / 1000)));
  const body = lineBody(events.map((event) => JSON.stringify(event)));
  return { body, ids: events.map((event) => event.webhookEventId) };
}

function post(test: TestApp, body: string, signedBody = body) {
  const headers = line?.headers({ body: signedBody, eventType: '' }, line.credentials[0], 0) ?? {};
  return test.request('/webhooks/line', { method: 'POST', body, headers });
}

/** Every fact the database holds about these events: their rows and their delivery-log records. */
async function facts(ids: readonly string[]) {
  const events = await sql`select event_id, status, attempt_count, last_error, received_at::text, completed_at::text
    from webhook_events where provider = 'line' and event_id in ${sql(ids)} order by event_id`;
  const deliveries = await sql`select event_id, status_code, outcome, repeats, delivered_at::text
    from webhook_deliveries where provider = 'line' and event_id in ${sql(ids)} order by event_id, delivered_at`;
  return { events, deliveries };
}

async function repeatedCount(test: TestApp): Promise<number> {
  const text = await (await test.request('/metrics', { method: 'GET' })).text();
  const series = 'webhook_repeated_deliveries_total{provider="line"} ';
  const sample = text.split('\n').find((candidate) => candidate.startsWith(series));
  return sample === undefined ? 0 : Number(sample.slice(series.length));
}

describe('a copy of a delivery answered in full', () => {
  it('is answered 200 as a duplicate, writing nothing, and counted per sender', async () => {
    const { log, app } = lineApp();
    const test = await app;
    const { body, ids } = lineBatch(50);
    expect((await post(test, body)).status).toBe(200);
    await log.flush(db);
    const before = await facts(ids);
    expect(before.events).toHaveLength(50);
    expect(before.deliveries).toHaveLength(50);

    for (let copy = 0; copy < 3; copy++) {
      const response = await post(test, body);
      expect(response.status).toBe(200);
      expect(await response.text()).toBe(DUPLICATE_BODY);
    }
    await log.flush(db);
    expect(await facts(ids)).toEqual(before);
    expect(await repeatedCount(test)).toBe(3);
    expect(test.logs.filter((text) => text.includes('repeated delivery answered as a duplicate'))).toHaveLength(3);
  });

  it('is processed again after a delivery whose event failed, and the retry stores it', async () => {
    const { body, ids } = lineBatch(3);
    const failing = new Set([ids[1] ?? '']);
    const { log, app } = lineApp(failing);
    const test = await app;
    expect((await post(test, body)).status).toBe(500);
    failing.clear();
    const retry = await post(test, body);
    expect(retry.status).toBe(200);
    expect(await retry.text()).toBe('{"received":true}');
    await log.flush(db);
    const { events } = await facts(ids);
    expect(events.map((event) => event.status)).toEqual(['completed', 'completed', 'completed']);
    expect(await repeatedCount(test)).toBe(0);
    // Now answered in full: the next copy is answered from memory.
    expect(await (await post(test, body)).text()).toBe(DUPLICATE_BODY);
    expect(await repeatedCount(test)).toBe(1);
  });

  it('with one byte of its body changed is refused 401, whatever was remembered', async () => {
    const test = await lineApp().app;
    const { body } = lineBatch(2);
    expect((await post(test, body)).status).toBe(200);
    const changed = body.replace('"destination":"U0001"', '"destination":"U0002"');
    const response = await post(test, changed, body);
    expect(response.status).toBe(401);
    expect(await repeatedCount(test)).toBe(0);
  });

  it('is processed normally once its time in memory has passed (the injected clock)', async () => {
    const { log, app } = lineApp();
    const test = await app;
    const { body, ids } = lineBatch(2);
    test.setNow(TEST_NOW_MS);
    expect((await post(test, body)).status).toBe(200);
    test.setNow(TEST_NOW_MS + ANSWERED_DELIVERIES.ttlMs - 1);
    expect(await (await post(test, body)).text()).toBe(DUPLICATE_BODY);
    expect(await repeatedCount(test)).toBe(1);
    await log.flush(db);
    const remembered = await facts(ids);

    test.setNow(TEST_NOW_MS + ANSWERED_DELIVERIES.ttlMs);
    expect(await (await post(test, body)).text()).toBe(DUPLICATE_BODY);
    expect(await repeatedCount(test)).toBe(1);
    await log.flush(db);
    const { events, deliveries } = await facts(ids);
    expect(events).toEqual(remembered.events);
    // Read and logged as any duplicate is: one duplicate record per event.
    expect(deliveries.filter((row) => row.outcome === 'duplicate')).toHaveLength(2);
  });

  it('is never remembered where retention may delete its rows at once (EVENT_RETENTION_DAYS=0)', async () => {
    const test = await lineApp(new Set(), { config: { EVENT_RETENTION_DAYS: 0 } }).app;
    const { body } = lineBatch(2);
    expect((await post(test, body)).status).toBe(200);
    expect(await (await post(test, body)).text()).toBe(DUPLICATE_BODY);
    expect(await repeatedCount(test)).toBe(0);
  });
});

describe('RecentKeys', () => {
  it('forgets the oldest key beyond its capacity, and a re-added key counts as new', () => {
    const keys = new RecentKeys(2, 1000, () => 0);
    keys.add('a');
    keys.add('b');
    keys.add('a');
    keys.add('c');
    expect([keys.has('a'), keys.has('b'), keys.has('c'), keys.size]).toEqual([true, false, true, 2]);
  });

  it('forgets a key at its time to live, which a hit does not extend', () => {
    let now = 0;
    const keys = new RecentKeys(10, 1000, () => now);
    keys.add('a');
    now = 999;
    expect(keys.has('a')).toBe(true);
    now = 1000;
    expect(keys.has('a')).toBe(false);
    expect(keys.size).toBe(0);
  });
});
