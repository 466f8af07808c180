// GET /metrics: counters by outcome with bounded labels, the latency histogram, database gauges,
// and the optional bearer token.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineHandler } from '../src/domain/handlers.ts';
import { DomainRejection } from '../src/lib/errors.ts';
import { acmeEvent, signedHeaders } from './helpers/acme.ts';
import { buildTestApp, type TestApp } from './helpers/app.ts';
import { useTestDatabase } from './helpers/database.ts';

const { db } = await useTestDatabase();

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
    expect(sample(text, 'webhook_outbox_oldest_pending_age_seconds')).toBeGreaterThanOrEqual(0);
    expect(text).not.toContain(applied.id);
    expect(text).not.toContain('made-up-provider');
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
    const text = await (await failing.request('/metrics', { method: 'GET' })).text();
    expect(
      sample(text, 'webhook_events_total{provider="acme",event_type="subscription.updated",outcome="failed"}'),
    ).toBe(1);
    expect(sample(text, 'webhook_inbox_events{status="failed"}')).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'webhook_inbox_oldest_unprocessed_age_seconds')).toBeGreaterThanOrEqual(0);

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
});
