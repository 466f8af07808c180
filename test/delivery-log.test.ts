// The delivery log: each delivery of an event that passed its checks (the first, a duplicate, a 500
// and its retry, a 503 before storing) is one row with its time, answer, time taken and trace id,
// under the stored event's id; the newest DELIVERY_LOG_CAP are kept; retention deletes them with
// their event; the admin API, the CLI and the dashboard show them. The spool is flushed explicitly.
// Needs a process: headless Chromium renders the event page's delivery log.
import { mkdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { Database } from '../src/db/client.ts';
import { defaultHandlers } from '../src/domain/handlers.ts';
import { createDeliveryLog, DELIVERY_LOG_CAP, type DeliveryLog } from '../src/inbox/delivery-log.ts';
import { purgeByRetention } from '../src/inbox/retention.ts';
import { createLogger } from '../src/lib/logger.ts';
import { labelBounds, Metrics } from '../src/lib/metrics.ts';
import { enableProviders } from '../src/providers/registry.ts';
import { type AcmeEventShape, acmeEvent, signedHeaders, TEST_NOW_MS, uniqueId } from './helpers/acme.ts';
import { buildTestApp, type TestApp } from './helpers/app.ts';
import { ARTIFACTS, hasChromium, launchChromium, openPage, serveLocally } from './helpers/browser.ts';
import { runCli } from './helpers/cli.ts';
import { useTestDatabase } from './helpers/database.ts';
import { eventRow, subscriptionRow } from './helpers/facts.ts';
import { failingAfterDefault } from './helpers/handlers.ts';
import { githubSender } from './helpers/senders.ts';

const { sql, db, url } = await useTestDatabase();
const TOKEN = 'delivery-log-token-for-tests-0123456789';
const DAY_MS = 86_400_000;

function newLog(): DeliveryLog {
  return createDeliveryLog({ logger: createLogger({ level: 'silent', now: () => new Date() }) });
}

/** A W3C trace id of our choosing, and the traceparent header that carries it. */
function newTrace(): { traceId: string; headers: Record<string, string> } {
  const traceId = crypto.randomUUID().replaceAll('-', '');
  return { traceId, headers: { traceparent: `00-${traceId}-00f067aa0ba902b7-01` } };
}

async function deliver(test: TestApp, event: AcmeEventShape, extra: Record<string, string> = {}) {
  const body = JSON.stringify(event);
  return test.request('/webhooks/acme', {
    method: 'POST',
    body,
    headers: { ...(await signedHeaders(body)), ...extra },
  });
}

interface LogRow {
  event_id: string;
  delivered_at: Date;
  trace_id: string;
  status_code: number;
  outcome: string;
  duration_ms: number;
}

/** The log rows of one event, oldest first. */
const logRows = (eventId: string, provider = 'acme') =>
  sql<LogRow[]>`select event_id, delivered_at, trace_id, status_code, outcome, duration_ms from webhook_deliveries
    where provider = ${provider} and event_id = ${eventId} order by delivered_at, trace_id`;

const outboxMessagesOf = async (eventId: string) =>
  Number(
    (
      await sql<
        { n: string }[]
      >`select count(*) as n from outbox_messages where deduplication_key like ${`acme:${eventId}:%`}`
    )[0]?.n,
  );

describe('delivery log', () => {
  it('three deliveries of one event give three log rows and one applied change', async () => {
    const log = newLog();
    const broken = await buildTestApp(db, {
      handlers: failingAfterDefault('subscription.updated', 'ledger refused the change'),
      deliveryLog: log,
    });
    const working = await buildTestApp(db, { deliveryLog: log });
    const event = acmeEvent({ data: { id: uniqueId('sub'), status: 'past_due' } });
    const traces = [newTrace(), newTrace(), newTrace()] as const;

    broken.setNow(TEST_NOW_MS + 1000);
    expect((await deliver(broken, event, traces[0].headers)).status).toBe(500);
    working.setNow(TEST_NOW_MS + 2000);
    expect(await (await deliver(working, event, traces[1].headers)).text()).toBe('{"received":true}');
    working.setNow(TEST_NOW_MS + 3000);
    expect(await (await deliver(working, event, traces[2].headers)).text()).toBe('{"received":true,"duplicate":true}');
    // Nothing is written before the flush: the intake only appends.
    expect(await logRows(event.id)).toHaveLength(0);
    await log.flush(db);

    const rows = await logRows(event.id);
    expect(
      rows.map(({ delivered_at, trace_id, status_code, outcome }) => ({
        delivered_at,
        trace_id,
        status_code,
        outcome,
      })),
    ).toEqual([
      { delivered_at: new Date(TEST_NOW_MS + 1000), trace_id: traces[0].traceId, status_code: 500, outcome: 'failed' },
      {
        delivered_at: new Date(TEST_NOW_MS + 2000),
        trace_id: traces[1].traceId,
        status_code: 200,
        outcome: 'completed',
      },
      {
        delivered_at: new Date(TEST_NOW_MS + 3000),
        trace_id: traces[2].traceId,
        status_code: 200,
        outcome: 'duplicate',
      },
    ]);
    for (const row of rows) expect(row.duration_ms).toBeGreaterThanOrEqual(0);
    // One applied change: the row completed once, the subscription changed, one outbox message.
    expect(await eventRow(sql, event.id)).toMatchObject({ status: 'completed', attempt_count: 1 });
    expect(await subscriptionRow(sql, String(event.data.id))).toMatchObject({ status: 'past_due' });
    expect(await outboxMessagesOf(event.id)).toBe(1);
  });

  it('logs a delivery answered 503 before its event was stored under the id it was delivered with', async () => {
    const log = newLog();
    const deadlineMs = 30;
    const late = await buildTestApp(db, {
      deliveryLog: log,
      config: { HANDLER_DEADLINE_MS: deadlineMs },
      // Holds the delivery past its deadline before the database write: answered 503, nothing stored.
      // The pause is the subject; the deadline's timer was set first and expires first, so the order
      // of the two holds on any machine.
      beforeStore: () => new Promise((resolve) => setTimeout(resolve, deadlineMs + 50)),
    });
    const event = acmeEvent();
    const trace = newTrace();
    expect((await deliver(late, event, trace.headers)).status).toBe(503);
    await log.flush(db);
    expect(await eventRow(sql, event.id)).toBeUndefined();
    expect(await logRows(event.id)).toMatchObject([
      { trace_id: trace.traceId, status_code: 503, outcome: 'unavailable' },
    ]);
  });

  it('logs a GitHub body delivered again under a fresh id under the stored event, not the fresh id', async () => {
    const log = newLog();
    const github = await buildTestApp(db, {
      enabledProviders: await enableProviders({ github: [...githubSender.secrets] }),
      deliveryLog: log,
    });
    const first = githubSender.newEvent();
    const again = { ...first, eventId: crypto.randomUUID() };
    const post = async (delivery: typeof first) =>
      github.request('/webhooks/github', {
        method: 'POST',
        body: delivery.body,
        headers: await githubSender.headers(delivery),
      });
    github.setNow(TEST_NOW_MS + 1000);
    expect((await post(first)).status).toBe(200);
    github.setNow(TEST_NOW_MS + 2000);
    expect(await (await post(again)).text()).toBe('{"received":true,"duplicate":true}');
    await log.flush(db);
    expect((await logRows(first.eventId, 'github')).map((row) => row.outcome)).toEqual(['ignored', 'duplicate']);
    expect(await logRows(again.eventId, 'github')).toHaveLength(0);
  });

  it(`keeps only the newest ${DELIVERY_LOG_CAP} deliveries of an event`, async () => {
    const log = newLog();
    const eventId = uniqueId('evt');
    const record = (second: number) => ({
      provider: 'acme',
      eventId,
      deliveredAt: new Date(TEST_NOW_MS + second * 1000),
      traceId: newTrace().traceId,
      statusCode: 200,
      outcome: 'duplicate' as const,
      durationMs: 1.5,
    });
    for (let second = 0; second < DELIVERY_LOG_CAP + 5; second++) log.add(record(second));
    // Another event in the same flush, below the cap: left whole.
    const fewer = uniqueId('evt');
    for (const second of [0, 1, 2]) log.add({ ...record(second), eventId: fewer });
    await log.flush(db);
    expect(await logRows(fewer)).toHaveLength(3);
    let rows = await logRows(eventId);
    expect(rows).toHaveLength(DELIVERY_LOG_CAP);
    expect(rows[0]?.delivered_at).toEqual(new Date(TEST_NOW_MS + 5000));
    // A later flush trims again: still the newest ones.
    for (const second of [100, 101, 102]) log.add(record(second));
    await log.flush(db);
    rows = await logRows(eventId);
    expect(rows).toHaveLength(DELIVERY_LOG_CAP);
    expect(rows[0]?.delivered_at).toEqual(new Date(TEST_NOW_MS + 8000));
    expect(rows.at(-1)?.delivered_at).toEqual(new Date(TEST_NOW_MS + 102_000));
  });

  it('counts records it loses, dropped for room or in a failed write, in /metrics and a warning', async () => {
    const metrics = new Metrics(labelBounds(['acme'], defaultHandlers));
    const lines: string[] = [];
    const log = createDeliveryLog({
      logger: createLogger({ level: 'warn', now: () => new Date(), write: (line) => lines.push(line) }),
      metrics,
      capacity: 2,
    });
    const record = () => ({
      provider: 'acme',
      eventId: uniqueId('evt'),
      deliveredAt: new Date(TEST_NOW_MS),
      traceId: newTrace().traceId,
      statusCode: 200,
      outcome: 'completed' as const,
      durationMs: 1,
    });
    for (let n = 0; n < 3; n++) log.add(record());
    // A database that refuses the write: the two records held are lost, never retried.
    const down = { transaction: () => Promise.reject(new Error('connection refused')) } as unknown as Database;
    await log.flush(down);
    expect(log.size).toBe(0);
    const text = metrics.render([]);
    expect(text).toContain('webhook_spool_records_lost_total{spool="delivery_log",reason="overflow"} 1');
    expect(text).toContain('webhook_spool_records_lost_total{spool="delivery_log",reason="write_failed"} 2');
    expect(lines.map((line) => JSON.parse(line) as { msg: string; reason: string; count: number })).toMatchObject([
      { msg: 'delivery log records lost', reason: 'overflow', count: 1 },
      { msg: 'delivery log records lost', reason: 'write_failed', count: 2 },
    ]);
  });

  it('retention deletes the rows with their event, and old rows of events not kept, but not those of kept events', async () => {
    const log = newLog();
    const working = await buildTestApp(db, { deliveryLog: log });
    const broken = await buildTestApp(db, {
      handlers: failingAfterDefault('subscription.updated', 'ledger refused the change'),
      deliveryLog: log,
    });
    const late = await buildTestApp(db, {
      deliveryLog: log,
      config: { HANDLER_DEADLINE_MS: 30 },
      // Slower than the deadline on purpose; the deadline's timer, set first, always expires first.
      beforeStore: () => new Promise((resolve) => setTimeout(resolve, 80)),
    });
    const github = await buildTestApp(db, {
      enabledProviders: await enableProviders({ github: [...githubSender.secrets] }),
      deliveryLog: log,
    });
    const completed = acmeEvent();
    const failed = acmeEvent();
    const neverStored = acmeEvent();
    const digest = githubSender.newEvent();
    expect((await deliver(working, completed)).status).toBe(200);
    expect((await deliver(working, completed)).status).toBe(200);
    expect((await deliver(broken, failed)).status).toBe(500);
    expect((await deliver(late, neverStored)).status).toBe(503);
    const posted = await github.request('/webhooks/github', {
      method: 'POST',
      body: digest.body,
      headers: await githubSender.headers(digest),
    });
    expect(posted.status).toBe(200);
    // Delivered after the cut-off below (the test's clock is far behind the database's): kept.
    const recentOrphan = uniqueId('evt');
    log.add({
      provider: 'acme',
      eventId: recentOrphan,
      deliveredAt: new Date(Date.now() + 2 * DAY_MS),
      traceId: newTrace().traceId,
      statusCode: 503,
      outcome: 'unavailable',
      durationMs: 5000,
    });
    await log.flush(db);
    expect(await logRows(completed.id)).toHaveLength(2);

    // 31 days on: the completed event (and the digest row's past) is beyond EVENT_RETENTION_DAYS.
    const summary = await purgeByRetention(
      db,
      { PAYLOAD_RETENTION_DAYS: 7, EVENT_RETENTION_DAYS: 30 },
      { nowMs: () => Date.now() + 31 * DAY_MS, budgetMs: 60_000 },
    );
    expect(summary.stoppedBy).toBe('drained');
    expect(await eventRow(sql, completed.id)).toBeUndefined();
    expect(await logRows(completed.id)).toHaveLength(0);
    expect(await logRows(neverStored.id)).toHaveLength(0);
    // The digest row stays (it keeps the body from being applied twice); its old log goes.
    expect(await eventRow(sql, digest.eventId, 'github')).toBeDefined();
    expect(await logRows(digest.eventId, 'github')).toHaveLength(0);
    expect(summary.deliveriesDeleted).toBeGreaterThanOrEqual(2);
    // A failed event is never purged, nor its log; an orphan inside the window stays.
    expect(await eventRow(sql, failed.id)).toMatchObject({ status: 'failed' });
    expect(await logRows(failed.id)).toMatchObject([{ status_code: 500, outcome: 'failed' }]);
    expect(await logRows(recentOrphan)).toHaveLength(1);
  });

  it('the admin API, its OpenAPI document and the CLI show the deliveries, newest first', async () => {
    const log = newLog();
    const test = await buildTestApp(db, { deliveryLog: log, config: { ADMIN_TOKEN: TOKEN } });
    const event = acmeEvent();
    const traces = [newTrace(), newTrace()] as const;
    test.setNow(TEST_NOW_MS + 1000);
    await deliver(test, event, traces[0].headers);
    test.setNow(TEST_NOW_MS + 2000);
    await deliver(test, event, traces[1].headers);
    await log.flush(db);

    const bearer = { authorization: `Bearer ${TOKEN}` };
    const answer = await test.request(`/admin/api/events/acme/${event.id}`, { headers: bearer });
    expect(answer.status).toBe(200);
    const body = (await answer.json()) as { deliveries: unknown[]; deliveries_cap: number };
    expect(body.deliveries_cap).toBe(DELIVERY_LOG_CAP);
    expect(body.deliveries).toEqual([
      {
        delivered_at: new Date(TEST_NOW_MS + 2000).toISOString(),
        status_code: 200,
        outcome: 'duplicate',
        duration_ms: expect.any(Number),
        trace_id: traces[1].traceId,
      },
      {
        delivered_at: new Date(TEST_NOW_MS + 1000).toISOString(),
        status_code: 200,
        outcome: 'completed',
        duration_ms: expect.any(Number),
        trace_id: traces[0].traceId,
      },
    ]);
    const document = await (await test.request('/admin/api/openapi.json', { headers: bearer })).text();
    expect(document).toContain('"Delivery"');
    expect(document).toContain('deliveries_cap');

    const shown = await runCli(['events', 'show', 'acme', event.id], { DATABASE_URL: url });
    expect(shown.code).toBe(0);
    expect(shown.output).toContain(`deliveries (2 kept, newest first, at most ${DELIVERY_LOG_CAP})`);
    const lines = shown.output.split('\n');
    const newest = lines.findIndex((line) => line.includes(traces[1].traceId));
    const oldest = lines.findIndex((line) => line.includes(traces[0].traceId));
    expect(newest).toBeGreaterThan(0);
    expect(oldest).toBe(newest + 1);
    expect(lines[newest]).toMatch(/200 duplicate/);
    expect(lines[oldest]).toMatch(/200 completed/);
    const json = await runCli(['events', 'show', 'acme', event.id, '--json'], { DATABASE_URL: url });
    const parsed = JSON.parse(json.output) as { event_id: string; deliveries: { trace_id: string }[] };
    expect(parsed.event_id).toBe(event.id);
    expect(parsed.deliveries.map((delivery) => delivery.trace_id)).toEqual([traces[1].traceId, traces[0].traceId]);
  });
});

describe.skipIf(!hasChromium)("the dashboard's event page", () => {
  it('shows a Deliveries table at 1280 and 390 px, newest first, without scrolling sideways', async () => {
    const log = newLog();
    const broken = await buildTestApp(db, {
      handlers: failingAfterDefault('subscription.updated', 'ledger refused the change'),
      deliveryLog: log,
    });
    const test = await buildTestApp(db, { deliveryLog: log, config: { ADMIN_TOKEN: TOKEN } });
    const event = acmeEvent();
    const traces = [newTrace(), newTrace(), newTrace()] as const;
    broken.setNow(TEST_NOW_MS + 1000);
    await deliver(broken, event, traces[0].headers);
    test.setNow(TEST_NOW_MS + 2000);
    await deliver(test, event, traces[1].headers);
    test.setNow(TEST_NOW_MS + 3000);
    await deliver(test, event, traces[2].headers);
    await log.flush(db);

    mkdirSync(ARTIFACTS, { recursive: true });
    const { origin, close } = await serveLocally(test.app);
    const browser = await launchChromium();
    try {
      for (const width of [1280, 390]) {
        const page = await openPage(browser, { viewport: { width, height: 900 } });
        await page.goto(`${origin}/admin`);
        await page.fill('#sign-in input[name="token"]', TOKEN);
        await page.click('#sign-in button');
        await page.locator('h1', { hasText: 'Overview' }).waitFor();
        await page.goto(`${origin}/admin/events/acme/${event.id}`);
        await page.locator('#sign-in').waitFor({ state: 'detached' });
        await page.locator('h2#deliveries').waitFor();
        const rows = page.locator('tr[data-delivery]');
        expect(await rows.evaluateAll((found) => found.map((row) => row.getAttribute('data-delivery')))).toEqual(
          [traces[2], traces[1], traces[0]].map((trace) => trace.traceId),
        );
        expect((await rows.first().textContent()) ?? '').toContain('200');
        expect(await rows.last().locator('.status').textContent()).toBe('failed');
        const scrollWidth = await page.evaluate(
          () =>
            (globalThis as unknown as { document: { documentElement: { scrollWidth: number } } }).document
              .documentElement.scrollWidth,
        );
        expect(scrollWidth).toBeLessThanOrEqual(width);
        await page.locator('h2#deliveries').scrollIntoViewIfNeeded();
        await page.screenshot({ path: `${ARTIFACTS}/delivery-log-event-${width}.png`, fullPage: true });
        await page.close();
      }
    } finally {
      await browser.close();
      await close();
    }
  });
});
