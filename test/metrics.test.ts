// GET /metrics: counters by outcome with bounded labels, the latency histogram, database gauges,
// and the optional bearer token.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defaultHandlers, defineHandler } from '../src/domain/handlers.ts';
import { processMetrics } from '../src/entry/setup/process-metrics.ts';
import { DomainRejection } from '../src/lib/errors.ts';
import { labelBounds, Metrics } from '../src/lib/metrics.ts';
import { acmeEvent, signedHeaders, TEST_NOW_MS, uniqueId } from './helpers/acme.ts';
import { buildTestApp, type TestApp } from './helpers/app.ts';
import { useTestDatabase } from './helpers/database.ts';
import { insertEvent } from './helpers/events.ts';
import { buildTestRelay, insertMessages } from './helpers/outbox.ts';

const { db, sql } = await useTestDatabase();

async function deliver(test: TestApp, event: object, headers?: Record<string, string>) {
  const body = JSON.stringify(event);
  return test.request('/webhooks/acme', { method: 'POST', body, headers: headers ?? (await signedHeaders(body)) });
}

const sample = (text: string, series: string) => {
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
};

describe('GET /metrics', () => {
  it('counts outcomes by provider and bounded event type, never by event id', async () => {
    const test = await buildTestApp(db);
    const applied = acmeEvent();
    await deliver(test, applied);
    // The sender's retry, signed anew: a duplicate of its one event.
    const retry = JSON.stringify(applied);
    await deliver(test, applied, await signedHeaders(retry, { timestamp: Math.floor(TEST_NOW_MS / 1000) - 1 }));
    // A byte-identical copy of a delivery answered in full: answered from memory, counted per sender.
    await deliver(test, applied);
    await deliver(test, acmeEvent({ type: `customer.${'x'.repeat(40)}` }));
    await deliver(test, acmeEvent({ api_version: '2099-01-01' }));
    await deliver(test, acmeEvent(), { 'content-type': 'application/json' });
    await deliver(test, { nonsense: true });
    await test.request('/webhooks/made-up-provider', { method: 'POST', body: '{}' });

    const response = await test.request('/metrics', { method: 'GET' });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toContain('text/plain');
    const text = await response.text();
    const events = (eventType: string, outcome: string) =>
      sample(text, `webhook_events_total{provider="acme",event_type="${eventType}",outcome="${outcome}"}`);
    expect(events('subscription.updated', 'accepted')).toBe(1);
    expect(events('subscription.updated', 'duplicate')).toBe(1);
    expect(sample(text, 'webhook_repeated_deliveries_total{provider="acme"}')).toBe(1);
    expect(events('other', 'ignored')).toBe(1);
    expect(events('subscription.updated', 'parked')).toBe(1);
    expect(sample(text, 'webhook_rejections_total{provider="acme",reason="unauthorized"}')).toBe(1);
    expect(sample(text, 'webhook_rejections_total{provider="acme",reason="invalid_payload"}')).toBe(1);
    expect(sample(text, 'webhook_rejections_total{provider="other",reason="not_found"}')).toBe(1);
    expect(sample(text, 'webhook_processing_duration_seconds_count{provider="acme"}')).toBe(4);
    expect(sample(text, 'webhook_inbox_events{status="parked"}')).toBe(1);
    expect(sample(text, 'webhook_database_up')).toBe(1);
    // The applied event announced its change: one message waits for the relay.
    expect(sample(text, 'webhook_outbox_messages{status="pending"}')).toBe(1);
    expect(sample(text, 'webhook_outbox_messages{status="dead"}')).toBe(0);
    // The test clock (2026-01-01) is before the message was written: its age is clamped at 0.
    expect(sample(text, 'webhook_outbox_oldest_pending_age_seconds')).toBe(0);
    // Nothing received, processing or failed: no age at all, 0.
    expect(sample(text, 'webhook_inbox_oldest_unprocessed_age_seconds')).toBe(0);
    expect(text).not.toContain(applied.id);
    expect(text).not.toContain('made-up-provider');

    const [pending] = await sql<{ ms: number }[]>`
      select (extract(epoch from min(created_at)) * 1000)::float8 as ms from outbox_messages where status = 'pending'`;
    test.setNow((pending?.ms ?? 0) + 90_000);
    const later = await (await test.request('/metrics', { method: 'GET' })).text();
    expect(sample(later, 'webhook_outbox_oldest_pending_age_seconds')).toBeCloseTo(90, 3);
  });

  it('counts failures and retries, and shows the failed backlog and its age', async () => {
    const failing = await buildTestApp(db, {
      handlers: {
        acme: {
          'subscription.updated': defineHandler({
            schema: z.unknown(),
            apply: async () => {
              throw new DomainRejection('not now');
            },
          }),
        },
      },
    });
    const event = acmeEvent();
    await deliver(failing, event);
    // Received 90 seconds ago by the database's clock, which this gauge reads (not the test clock).
    await sql`update webhook_events set received_at = now() - interval '90 seconds'
      where provider = 'acme' and event_id = ${event.id}`;
    const text = await (await failing.request('/metrics', { method: 'GET' })).text();
    expect(
      sample(text, 'webhook_events_total{provider="acme",event_type="subscription.updated",outcome="failed"}'),
    ).toBe(1);
    expect(sample(text, 'webhook_inbox_events{status="failed"}')).toBe(1);
    const age = sample(text, 'webhook_inbox_oldest_unprocessed_age_seconds') ?? 0;
    expect(age).toBeGreaterThanOrEqual(90);
    expect(age).toBeLessThan(100);

    const healthy = await buildTestApp(db);
    await deliver(healthy, event);
    const after = await (await healthy.request('/metrics', { method: 'GET' })).text();
    expect(
      sample(after, 'webhook_events_total{provider="acme",event_type="subscription.updated",outcome="retried"}'),
    ).toBe(1);
  });

  it('requires the bearer token when METRICS_TOKEN is set, answering JSON 401s', async () => {
    const token = 'metrics-token-0123456789';
    const test = await buildTestApp(db, { config: { METRICS_TOKEN: token } });
    for (const authorization of [
      undefined,
      'Bearer wrong-token-0123456789',
      'Basic abc',
      'Bearer',
      `Bearer ${token}x`,
    ]) {
      const headers: Record<string, string> = authorization === undefined ? {} : { authorization };
      const refused = await test.request('/metrics', { method: 'GET', headers });
      expect(refused.status, String(authorization)).toBe(401);
      expect(await refused.text()).toBe('{"error":"unauthorized"}');
    }
    const allowed = await test.request('/metrics', { method: 'GET', headers: { authorization: `Bearer ${token}` } });
    expect(allowed.status).toBe(200);
  });

  it('counts outbox outcomes by topic, and operator replays and retries by outcome', async () => {
    const metrics = new Metrics(labelBounds(['acme'], defaultHandlers));
    const token = 'admin-token-for-metrics-0123456789';
    const test = await buildTestApp(db, { metrics, config: { ADMIN_TOKEN: token } });
    const topic = uniqueId('topic');
    await insertMessages(sql, 2, { topic: `${topic}.ok` });
    await insertMessages(sql, 1, { topic: `${topic}.gone` });
    await insertMessages(sql, 1, { topic: `${topic}.later` });
    const relay = buildTestRelay(db, {
      metrics,
      publisher: {
        kind: 'test',
        publish: async (message) =>
          message.topic.endsWith('.ok')
            ? { outcome: 'published' }
            : message.topic.endsWith('.gone')
              ? { outcome: 'permanent', error: 'HTTP 410' }
              : { outcome: 'retry', error: 'HTTP 503' },
      },
    });
    await relay.relay.drain();

    const admin = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const { eventId } = await insertEvent(sql, { status: 'failed', lastError: 'ledger down' });
    await test.request(`/admin/api/events/acme/${eventId}/replay`, {
      method: 'POST',
      headers: admin,
      body: '{"operator":"ann"}',
    });
    const [dead] = (await insertMessages(sql, 1, { status: 'dead' })) as [string];
    await test.request(`/admin/api/outbox/${dead}/retry`, {
      method: 'POST',
      headers: admin,
      body: '{"operator":"ann"}',
    });
    await test.request(`/admin/api/outbox/${dead}/retry`, {
      method: 'POST',
      headers: admin,
      body: '{"operator":"ann"}',
    });

    const text = await (await test.request('/metrics', { method: 'GET' })).text();
    const deliveries = (suffix: string, outcome: string) =>
      sample(
        text,
        `webhook_outbox_deliveries_total{topic="${topic}.${suffix}",outcome="${outcome}",destination="default"}`,
      );
    expect(deliveries('ok', 'published')).toBe(2);
    expect(deliveries('gone', 'dead')).toBe(1);
    expect(deliveries('later', 'retried')).toBe(1);
    expect(sample(text, 'webhook_operator_replays_total{outcome="completed"}')).toBe(1);
    expect(sample(text, 'webhook_operator_retries_total{outcome="retried"}')).toBe(1);
    expect(sample(text, 'webhook_operator_retries_total{outcome="skipped"}')).toBe(1);
  });

  it("on Node, adds the process's metrics under their conventional names", async () => {
    const metrics = new Metrics(labelBounds(['acme'], defaultHandlers));
    metrics.attach(processMetrics());
    const test = await buildTestApp(db, { metrics });
    const text = await (await test.request('/metrics', { method: 'GET' })).text();
    for (const name of [
      'process_cpu_user_seconds_total',
      'process_cpu_seconds_total',
      'process_resident_memory_bytes',
      'process_start_time_seconds',
      'nodejs_eventloop_lag_p99_seconds',
      'nodejs_heap_size_used_bytes',
      'nodejs_gc_duration_seconds',
    ]) {
      expect(text).toContain(`# TYPE ${name} `);
    }
    expect(sample(text, 'process_resident_memory_bytes')).toBeGreaterThan(0);
    // Each family is described once: our own and prom-client's never share a name.
    const types = text.split('\n').filter((line) => line.startsWith('# TYPE '));
    expect(new Set(types).size).toBe(types.length);
  });
});

describe('latency by minute, for the dashboard', () => {
  it('keeps a day of per-minute histograms and estimates p50 and p99 per bucket', () => {
    let now = Date.UTC(2026, 5, 1, 12, 0, 30);
    const metrics = new Metrics(labelBounds(['acme'], defaultHandlers), () => now);
    // Minute 12:00: 98 fast requests and 2 slow ones; 12:01: nothing; 12:02: one.
    for (let i = 0; i < 98; i++) metrics.observeProcessing('acme', 0.004);
    metrics.observeProcessing('acme', 3);
    metrics.observeProcessing('acme', 4);
    now += 120_000;
    metrics.observeProcessing('acme', 0.2);
    const [first, empty, third] = metrics.latencyQuantiles({
      fromMs: Date.UTC(2026, 5, 1, 12, 0),
      bucketMs: 60_000,
      buckets: 3,
    });
    expect(first?.count).toBe(100);
    expect(first?.p50).toBeLessThanOrEqual(0.005);
    expect(first?.p99).toBeGreaterThan(2.5);
    expect(first?.p99).toBeLessThanOrEqual(5);
    expect(empty).toBeNull();
    expect(third).toMatchObject({ count: 1 });
    // Buckets of several minutes merge them.
    const [merged] = metrics.latencyQuantiles({ fromMs: Date.UTC(2026, 5, 1, 12, 0), bucketMs: 180_000, buckets: 1 });
    expect(merged?.count).toBe(101);
    // A day later the first minute is forgotten.
    now += 24 * 3_600_000;
    metrics.observeProcessing('acme', 0.01);
    const [gone] = metrics.latencyQuantiles({ fromMs: Date.UTC(2026, 5, 1, 12, 0), bucketMs: 60_000, buckets: 1 });
    expect(gone).toBeNull();
  });
});
