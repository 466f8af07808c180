// The delivery log: each delivery of an event that passed its checks (the first, a duplicate, a 500
// and its retry, a 503 before storing) is one row with its time, answer, time taken and trace id,
// under the stored event's id, except that a run of duplicates answered alike folds into one row's
// repeat count (in the spool and at the write); the newest DELIVERY_LOG_CAP are kept; retention deletes them with
// their event; the admin API, the CLI and the dashboard show them. The spool is flushed explicitly.
// Needs a process: headless Chromium renders the event page's delivery log.
import { mkdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { Database } from '../src/db/client.ts';
import { defaultHandlers } from '../src/domain/handlers.ts';
import {
  createDeliveryLog,
  DELIVERY_LOG_CAP,
  DELIVERY_LOG_LOST_REPORT_MS,
  type DeliveryLog,
  type DeliveryRecord,
  deliveriesOf,
  deliveryLogDelayBoundMs,
  foldDelivery,
} from '../src/inbox/delivery-log.ts';
import { purgeByRetention } from '../src/inbox/retention.ts';
import { createLogger } from '../src/lib/logger.ts';
import { labelBounds, Metrics } from '../src/lib/metrics.ts';
import { enableSenders } from '../src/senders/registry.ts';
import { type AcmeEventShape, acmeEvent, signedHeaders, TEST_NOW_MS, uniqueId } from './helpers/acme.ts';
import { buildTestApp as buildApp, type TestApp } from './helpers/app.ts';
import { ARTIFACTS, hasChromium, launchChromium, openPage, serveLocally } from './helpers/browser.ts';
import { runCli } from './helpers/cli.ts';
import { useTestDatabase } from './helpers/database.ts';
import { eventRow, subscriptionRow } from './helpers/facts.ts';
import { failingAfterDefault } from './helpers/handlers.ts';
import { githubSender } from './helpers/senders.ts';

/** One delivery-log row as the admin API returns it, answered 200 (its duration is whatever it took). */
const loggedRow = (row: {
  delivered_at: string;
  outcome: string;
  trace_id: string | undefined;
  repeats: number;
  last_delivered_at: string | null;
}) => ({ status_code: 200, duration_ms: expect.any(Number), ...row });

const { sql, db, url } = await useTestDatabase();

/**
 * Apps that remember no delivery answered in full: these tests send byte-identical copies to see how
 * the log records duplicates, and the intake would otherwise answer a copy from memory without a
 * record (docs/admin.md; test/repeated-deliveries.test.ts covers that).
 */
const buildTestApp: typeof buildApp = (db, overrides = {}) => buildApp(db, { answeredDeliveries: false, ...overrides });
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
      enabledSenders: await enableSenders({ github: [...githubSender.secrets] }),
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
    // Answers alternate (a duplicate, then a failure), so that no delivery folds into the one before.
    const record = (second: number) => ({
      provider: 'acme',
      eventId,
      deliveredAt: new Date(TEST_NOW_MS + second * 1000),
      traceId: newTrace().traceId,
      statusCode: second % 2 === 0 ? 200 : 500,
      outcome: second % 2 === 0 ? ('duplicate' as const) : ('failed' as const),
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
    // A later flush trims again: still the newest ones (a failure first: nothing folds).
    for (const second of [101, 102, 103]) log.add(record(second));
    await log.flush(db);
    rows = await logRows(eventId);
    expect(rows).toHaveLength(DELIVERY_LOG_CAP);
    expect(rows[0]?.delivered_at).toEqual(new Date(TEST_NOW_MS + 8000));
    expect(rows.at(-1)?.delivered_at).toEqual(new Date(TEST_NOW_MS + 103_000));
    // Two duplicates in a row are one row (the trim counts rows), and a third folds into it at the
    // next flush: nothing more to trim.
    log.add(record(104));
    log.add(record(106));
    await log.flush(db);
    log.add(record(108));
    await log.flush(db);
    rows = await logRows(eventId);
    expect(rows).toHaveLength(DELIVERY_LOG_CAP);
    expect(rows[0]?.delivered_at).toEqual(new Date(TEST_NOW_MS + 9000));
    expect(rows.at(-1)?.delivered_at).toEqual(new Date(TEST_NOW_MS + 104_000));
    expect(await foldedRows(eventId).then((all) => all.at(-1))).toMatchObject({
      repeats: 2,
      last_delivered_at: new Date(TEST_NOW_MS + 108_000),
    });
  });

  it('writes first stores as they are, beside the records of the same flush that fold or trim', async () => {
    const log = newLog();
    const record = (eventId: string, second: number, outcome: 'duplicate' | 'failed' | 'completed') => ({
      provider: 'acme',
      eventId,
      deliveredAt: new Date(TEST_NOW_MS + second * 1000),
      traceId: newTrace().traceId,
      statusCode: outcome === 'failed' ? 500 : 200,
      outcome,
      durationMs: 2.5,
    });
    // An event already at the cap, then its first store in a flush (a store after deliveries refused
    // before it): not trimmed, one row over the cap until its next delivery's flush.
    const capped = uniqueId('evt');
    for (let second = 0; second < DELIVERY_LOG_CAP; second++) log.add(record(capped, second, 'failed'));
    await log.flush(db);
    log.add({ ...record(capped, 60, 'completed'), firstStore: true });
    // In the same flush: another event's first store, then its duplicate (which does not fold into a
    // completed row: a row of its own), and a duplicate of it again (folded by the spool into that one).
    const stored = uniqueId('evt');
    log.add({ ...record(stored, 61, 'completed'), firstStore: true });
    log.add(record(stored, 62, 'duplicate'));
    log.add(record(stored, 63, 'duplicate'));
    await log.flush(db);
    expect(await logRows(capped)).toHaveLength(DELIVERY_LOG_CAP + 1);
    expect((await foldedRows(stored)).map((row) => [row.outcome, row.repeats])).toEqual([
      ['completed', 0],
      ['duplicate', 1],
    ]);
    // The capped event's next delivery trims it back to the cap, keeping the newest.
    log.add(record(capped, 64, 'duplicate'));
    await log.flush(db);
    const rows = await logRows(capped);
    expect(rows).toHaveLength(DELIVERY_LOG_CAP);
    expect(rows.at(-1)?.delivered_at).toEqual(new Date(TEST_NOW_MS + 64_000));
    expect(rows[0]?.delivered_at).toEqual(new Date(TEST_NOW_MS + 2000));
  });

  it('writes a flush again, tolerating the conflict, when a first store’s row exists already', async () => {
    // A first store is inserted without ON CONFLICT (its key is new); a record written twice must not
    // cost the rest of its flush.
    const log = newLog();
    const first = (eventId: string, traceId: string) => ({
      provider: 'acme',
      eventId,
      deliveredAt: new Date(TEST_NOW_MS),
      traceId,
      statusCode: 200,
      outcome: 'completed' as const,
      durationMs: 1.5,
      firstStore: true,
    });
    const twice = first(uniqueId('evt'), newTrace().traceId);
    log.add(twice);
    await log.flush(db);
    const other = uniqueId('evt');
    log.add({ ...twice });
    log.add(first(other, newTrace().traceId));
    log.add({
      ...first(other, newTrace().traceId),
      deliveredAt: new Date(TEST_NOW_MS + 1000),
      outcome: 'duplicate',
      firstStore: false,
    });
    await log.flush(db);
    expect(await logRows(twice.eventId)).toHaveLength(1);
    expect((await logRows(other)).map((row) => row.outcome)).toEqual(['completed', 'duplicate']);
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
    const warnings = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(warnings).toMatchObject([
      { msg: 'delivery log records lost', reason: 'overflow', count: 1, window_ms: DELIVERY_LOG_LOST_REPORT_MS },
      {
        msg: 'delivery log records lost',
        reason: 'write_failed',
        count: 2,
        error: 'Error',
      },
    ]);
    // The window belongs to the overflow's line, the error to the failed write's.
    expect(warnings[0]).not.toHaveProperty('error');
    expect(warnings[1]).not.toHaveProperty('window_ms');

    // Without metrics, a loss is still written as a warning.
    const unmetered = createDeliveryLog({
      logger: createLogger({ level: 'warn', now: () => new Date(), write: (line) => lines.push(line) }),
      capacity: 1,
    });
    unmetered.add(record());
    unmetered.add(record());
    expect(lines).toHaveLength(3);
    expect(unmetered.size).toBe(1);
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
      enabledSenders: await enableSenders({ github: [...githubSender.secrets] }),
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
      loggedRow({
        delivered_at: new Date(TEST_NOW_MS + 2000).toISOString(),
        outcome: 'duplicate',
        trace_id: traces[1].traceId,
        repeats: 0,
        last_delivered_at: null,
      }),
      loggedRow({
        delivered_at: new Date(TEST_NOW_MS + 1000).toISOString(),
        outcome: 'completed',
        trace_id: traces[0].traceId,
        repeats: 0,
        last_delivered_at: null,
      }),
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

interface FoldedRow {
  outcome: string;
  status_code: number;
  trace_id: string;
  delivered_at: Date;
  repeats: number;
  last_delivered_at: Date | null;
}

/** An event's rows with their repeat counts, oldest first. */
const foldedRows = (eventId: string, provider = 'acme') =>
  sql<FoldedRow[]>`select outcome, status_code, trace_id, delivered_at, repeats, last_delivered_at
    from webhook_deliveries where provider = ${provider} and event_id = ${eventId} order by delivered_at, trace_id`;

/** A record of `eventId` delivered `second` seconds after TEST_NOW_MS, with its own trace. */
const recordAt = (
  eventId: string,
  second: number,
  outcome: DeliveryRecord['outcome'],
  statusCode: number,
  contentDigest?: string,
): DeliveryRecord => ({
  provider: 'acme',
  eventId,
  contentDigest,
  deliveredAt: new Date(TEST_NOW_MS + second * 1000),
  traceId: newTrace().traceId,
  statusCode,
  outcome,
  durationMs: 1,
});

describe('duplicates fold into a repeat count', () => {
  it('200 duplicate deliveries of one stored event are one duplicate row with repeats 199, across flushes', async () => {
    const log = newLog();
    const test = await buildTestApp(db, { deliveryLog: log });
    const event = acmeEvent();
    const first = newTrace();
    test.setNow(TEST_NOW_MS);
    expect((await deliver(test, event, first.headers)).status).toBe(200);
    await log.flush(db);
    const traces: string[] = [];
    for (let n = 0; n < 200; n++) {
      const trace = newTrace();
      traces.push(trace.traceId);
      test.setNow(TEST_NOW_MS + 1000 + n * 10);
      expect(await (await deliver(test, event, trace.headers)).text()).toBe('{"received":true,"duplicate":true}');
      // The spool folds while records wait (one slot for the run); the flushes fold into the row.
      expect(log.size).toBe(1);
      if (n === 0 || n === 120) await log.flush(db);
    }
    await log.flush(db);
    expect(await foldedRows(event.id)).toEqual([
      {
        outcome: 'completed',
        status_code: 200,
        trace_id: first.traceId,
        delivered_at: new Date(TEST_NOW_MS),
        repeats: 0,
        last_delivered_at: null,
      },
      // The first duplicate's time and trace id; the newest one's time as last_delivered_at.
      {
        outcome: 'duplicate',
        status_code: 200,
        trace_id: traces[0],
        delivered_at: new Date(TEST_NOW_MS + 1000),
        repeats: 199,
        last_delivered_at: new Date(TEST_NOW_MS + 1000 + 199 * 10),
      },
    ]);
  });

  it('a duplicate after any other answer starts a new row, whether the spool or the flush folds', async () => {
    const log = newLog();
    const working = await buildTestApp(db, { deliveryLog: log });
    const late = await buildTestApp(db, {
      deliveryLog: log,
      config: { HANDLER_DEADLINE_MS: 30 },
      // Slower than the deadline on purpose; the deadline's timer, set first, always expires first.
      beforeStore: () => new Promise((resolve) => setTimeout(resolve, 80)),
    });
    for (const flushEach of [true, false]) {
      const event = acmeEvent();
      const traces: string[] = [];
      const steps = [working, working, working, late, working, working] as const;
      for (const [n, app] of steps.entries()) {
        const trace = newTrace();
        traces.push(trace.traceId);
        app.setNow(TEST_NOW_MS + n * 1000);
        await deliver(app, event, trace.headers);
        if (flushEach) await log.flush(db);
      }
      await log.flush(db);
      const at = (second: number) => new Date(TEST_NOW_MS + second * 1000);
      expect(await foldedRows(event.id)).toEqual([
        {
          outcome: 'completed',
          status_code: 200,
          trace_id: traces[0],
          delivered_at: at(0),
          repeats: 0,
          last_delivered_at: null,
        },
        {
          outcome: 'duplicate',
          status_code: 200,
          trace_id: traces[1],
          delivered_at: at(1),
          repeats: 1,
          last_delivered_at: at(2),
        },
        {
          outcome: 'unavailable',
          status_code: 503,
          trace_id: traces[3],
          delivered_at: at(3),
          repeats: 0,
          last_delivered_at: null,
        },
        {
          outcome: 'duplicate',
          status_code: 200,
          trace_id: traces[4],
          delivered_at: at(4),
          repeats: 1,
          last_delivered_at: at(5),
        },
      ]);
    }
  });

  it('a failure between duplicates, or another status code, starts a new row', async () => {
    const eventId = uniqueId('evt');
    const record = (second: number, outcome: 'duplicate' | 'failed', statusCode: number) =>
      recordAt(eventId, second, outcome, statusCode);
    const log = newLog();
    log.add(record(0, 'duplicate', 200));
    log.add(record(1, 'failed', 500));
    await log.flush(db);
    log.add(record(2, 'duplicate', 200));
    log.add(record(3, 'duplicate', 200));
    log.add(record(4, 'failed', 500));
    log.add(record(5, 'duplicate', 200));
    await log.flush(db);
    log.add(record(6, 'duplicate', 200));
    await log.flush(db);
    const rows = await foldedRows(eventId);
    expect(rows.map((row) => [row.outcome, row.repeats, row.last_delivered_at?.getTime() ?? null])).toEqual([
      ['duplicate', 0, null],
      ['failed', 0, null],
      ['duplicate', 1, TEST_NOW_MS + 3000],
      ['failed', 0, null],
      ['duplicate', 1, TEST_NOW_MS + 6000],
    ]);
  });

  it('folds only a duplicate into a duplicate of the same event with the same status code, across digests too', async () => {
    const [first, second, third, fourth] = [uniqueId('evt'), uniqueId('evt'), uniqueId('evt'), uniqueId('evt')];
    const log = newLog();
    // A completed answer after a duplicate, and a duplicate answered with another code, start rows.
    log.add(recordAt(first, 0, 'duplicate', 200));
    log.add(recordAt(first, 1, 'completed', 200));
    log.add(recordAt(second, 0, 'duplicate', 200));
    log.add(recordAt(second, 1, 'duplicate', 202));
    // Duplicates of two events, with no digest or with different digests, never fold into each other.
    log.add(recordAt(third, 0, 'duplicate', 200, 'digest-a'));
    log.add(recordAt(fourth, 1, 'duplicate', 200, 'digest-b'));
    log.add(recordAt(uniqueId('evt'), 2, 'duplicate', 200));
    log.add(recordAt(uniqueId('evt'), 3, 'duplicate', 200));
    expect(log.size).toBe(8);
    await log.flush(db);
    expect((await foldedRows(first)).map((row) => [row.outcome, row.repeats])).toEqual([
      ['duplicate', 0],
      ['completed', 0],
    ]);
    expect((await foldedRows(second)).map((row) => [row.status_code, row.repeats])).toEqual([
      [200, 0],
      [202, 0],
    ]);
    expect((await foldedRows(third)).map((row) => row.repeats)).toEqual([0]);
    expect((await foldedRows(fourth)).map((row) => row.repeats)).toEqual([0]);
  });

  it('a record that folded others in counts them all when it folds', () => {
    const at = (second: number) => new Date(TEST_NOW_MS + second * 1000);
    const duplicate = { provider: 'acme', eventId: 'evt', traceId: 't', statusCode: 200, durationMs: 1 } as const;
    const into = {
      ...duplicate,
      outcome: 'duplicate' as const,
      deliveredAt: at(0),
      repeats: 1,
      lastDeliveredAt: at(1),
    };
    const folded = {
      ...duplicate,
      outcome: 'duplicate' as const,
      deliveredAt: at(2),
      repeats: 2,
      lastDeliveredAt: at(4),
    };
    expect(foldDelivery(into, folded)).toBe(true);
    expect(into).toMatchObject({ repeats: 4, lastDeliveredAt: at(4), deliveredAt: at(0) });
  });

  it('shows no deliveries for an id the database cannot hold, and bounds what a SIGKILL can lose', async () => {
    expect(await deliveriesOf(db, { provider: 'acme', eventId: 'evt\u0000' })).toEqual([]);
    expect(deliveryLogDelayBoundMs(250)).toBe(350);
  });

  it('a replay flood of one event fills no spool: every genuine delivery of other events keeps its row', async () => {
    const capacity = 20;
    const lines: string[] = [];
    const log = createDeliveryLog({
      logger: createLogger({ level: 'warn', now: () => new Date(), write: (line) => lines.push(line) }),
      capacity,
    });
    const test = await buildTestApp(db, { deliveryLog: log });
    const replayed = acmeEvent();
    expect((await deliver(test, replayed)).status).toBe(200);
    await log.flush(db);
    // 600 replays of the captured delivery, and among them 19 genuine events: without the fold the
    // replays would take every slot and push the genuine records out before the flush.
    const genuine = Array.from({ length: capacity - 1 }, () => acmeEvent());
    for (let n = 0; n < 600; n++) {
      expect((await deliver(test, replayed)).status).toBe(200);
      const next = genuine[n / 30];
      if (n % 30 === 0 && next !== undefined) expect((await deliver(test, next)).status).toBe(200);
    }
    expect(log.size).toBe(capacity);
    await log.flush(db);
    const rows = await sql<{ event_id: string; outcome: string; repeats: number }[]>`
      select event_id, outcome, repeats from webhook_deliveries
      where provider = 'acme' and event_id in ${sql([replayed.id, ...genuine.map((event) => event.id)])}`;
    expect(rows).toHaveLength(capacity + 1);
    for (const event of genuine) {
      expect(rows.filter((row) => row.event_id === event.id)).toEqual([
        { event_id: event.id, outcome: 'completed', repeats: 0 },
      ]);
    }
    expect(rows.filter((row) => row.event_id === replayed.id).map((row) => [row.outcome, row.repeats])).toEqual(
      expect.arrayContaining([
        ['completed', 0],
        ['duplicate', 599],
      ]),
    );
    expect(lines).toEqual([]);
  });

  it('records dropped for room write at most one warning a second, with how many, and the metric counts each', async () => {
    const metrics = new Metrics(labelBounds(['acme'], defaultHandlers));
    const lines: string[] = [];
    let now = TEST_NOW_MS;
    const log = createDeliveryLog({
      logger: createLogger({ level: 'warn', now: () => new Date(now), write: (line) => lines.push(line) }),
      metrics,
      capacity: 10,
      now: () => now,
    });
    const record = () => ({
      provider: 'acme',
      eventId: uniqueId('evt'),
      deliveredAt: new Date(now),
      traceId: newTrace().traceId,
      statusCode: 200,
      outcome: 'completed' as const,
      durationMs: 1,
    });
    const warnings = () => lines.map((line) => JSON.parse(line) as { msg: string; reason: string; count: number });
    // 5,010 records of distinct events into 10 slots within one second: 5,000 dropped, one line.
    for (let n = 0; n < 5_010; n++) log.add(record());
    await log.flush(db);
    expect(warnings()).toMatchObject([{ msg: 'delivery log records lost', reason: 'overflow', count: 1 }]);
    now += 500;
    for (let n = 0; n < 20; n++) log.add(record());
    await log.flush(db);
    expect(warnings()).toHaveLength(1);
    // A second after the line: the next drop or flush says how many went since it.
    now += 500;
    await log.flush(db);
    expect(warnings()).toMatchObject([
      { reason: 'overflow', count: 1 },
      { msg: 'delivery log records lost', reason: 'overflow', count: 4_999 + 10 },
    ]);
    expect(metrics.render([])).toContain(
      'webhook_spool_records_lost_total{spool="delivery_log",reason="overflow"} 5010',
    );
  });

  it('the admin API, the CLI and the dashboard show the repeats', async () => {
    const log = newLog();
    const test = await buildTestApp(db, { deliveryLog: log, config: { ADMIN_TOKEN: TOKEN } });
    const event = acmeEvent();
    const traces = [newTrace(), newTrace(), newTrace(), newTrace()] as const;
    for (const [n, trace] of traces.entries()) {
      test.setNow(TEST_NOW_MS + n * 1000);
      await deliver(test, event, trace.headers);
    }
    await log.flush(db);
    const bearer = { authorization: `Bearer ${TOKEN}` };
    const body = (await (await test.request(`/admin/api/events/acme/${event.id}`, { headers: bearer })).json()) as {
      deliveries: unknown[];
    };
    expect(body.deliveries).toEqual([
      loggedRow({
        delivered_at: new Date(TEST_NOW_MS + 1000).toISOString(),
        outcome: 'duplicate',
        trace_id: traces[1].traceId,
        repeats: 2,
        last_delivered_at: new Date(TEST_NOW_MS + 3000).toISOString(),
      }),
      loggedRow({
        delivered_at: new Date(TEST_NOW_MS).toISOString(),
        outcome: 'completed',
        trace_id: traces[0].traceId,
        repeats: 0,
        last_delivered_at: null,
      }),
    ]);
    const document = await (await test.request('/admin/api/openapi.json', { headers: bearer })).text();
    expect(document).toContain('last_delivered_at');

    const page = await (await test.request(`/admin/events/acme/${event.id}`, { headers: bearer })).text();
    expect(page).toContain('×3, last 00:00:03');

    const shown = await runCli(['events', 'show', 'acme', event.id], { DATABASE_URL: url });
    expect(shown.code).toBe(0);
    const line = shown.output.split('\n').find((text) => text.includes(traces[1].traceId));
    expect(line).toMatch(/200 duplicate ×3, last 00:00:03/);
    const json = await runCli(['events', 'show', 'acme', event.id, '--json'], { DATABASE_URL: url });
    const parsed = JSON.parse(json.output) as { deliveries: { repeats: number; last_delivered_at: string | null }[] };
    expect(parsed.deliveries.map((delivery) => [delivery.repeats, delivery.last_delivered_at])).toEqual([
      [2, new Date(TEST_NOW_MS + 3000).toISOString()],
      [0, null],
    ]);
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
