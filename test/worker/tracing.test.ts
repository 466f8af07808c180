// Tracing inside workerd: the portable SDK wiring (tracing-sdk.ts: provider, batch processor, the
// OTLP serializers, `fetchTraceExporter`) runs there and exports a request's spans over `fetch` from
// that request's waitUntil. The Worker entry does not wire it (the bundle budget: docs/tracing.md),
// so the app is built here as the entry builds it, plus the tracer. The collector is a stub of
// globalThis.fetch that decodes what it is sent (http/json). Without the endpoint nothing is sent.
import { createExecutionContext, waitOnExecutionContext } from 'cloudflare:test';
import { env } from 'cloudflare:workers';
import postgres from 'postgres';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { createProductionApp } from '../../src/app.ts';
import { parseConfig } from '../../src/config.ts';
import { connectDatabase } from '../../src/db/client.ts';
import { defaultHandlers } from '../../src/domain/handlers.ts';
import { fetchTraceExporter, type TracingEnv, tracingWith } from '../../src/entry/tracing-sdk.ts';
import { createLogger } from '../../src/lib/logger.ts';
import { labelBounds, Metrics } from '../../src/lib/metrics.ts';
import { enableProviders } from '../../src/providers/registry.ts';
import { acmeEvent, signedHeaders, TEST_SECRET } from '../helpers/acme.ts';

const sql = postgres(env.HYPERDRIVE.connectionString, { max: 2, fetch_types: false, onnotice: () => {} });
afterAll(() => sql.end());
afterEach(() => {
  vi.restoreAllMocks();
});

const COLLECTOR = 'https://collector.test';

interface ExportedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
}

/** Every OTLP/JSON export the Worker sends, decoded; other fetches are refused. */
function stubCollector() {
  const exports: { url: string; contentType: string | null; spans: ExportedSpan[]; service: unknown }[] = [];
  vi.spyOn(globalThis, 'fetch').mockImplementation(async (input, init) => {
    const request = new Request(input, init);
    if (!request.url.startsWith(COLLECTOR)) throw new Error(`unexpected fetch of ${request.url}`);
    const body = (await request.json()) as {
      resourceSpans: {
        resource: { attributes: { key: string; value: { stringValue?: string } }[] };
        scopeSpans: { spans: ExportedSpan[] }[];
      }[];
    };
    for (const resourceSpans of body.resourceSpans) {
      exports.push({
        url: request.url,
        contentType: request.headers.get('content-type'),
        spans: resourceSpans.scopeSpans.flatMap((scope) => scope.spans),
        service: resourceSpans.resource.attributes.find((attribute) => attribute.key === 'service.name')?.value
          .stringValue,
      });
    }
    return new Response('{}', { status: 200, headers: { 'content-type': 'application/json' } });
  });
  return exports;
}

/** The production app with the tracer the variables ask for, on this invocation's Hyperdrive client. */
async function tracedApp(variables: TracingEnv) {
  const enabledProviders = await enableProviders({ acme: [TEST_SECRET] });
  const tracing = tracingWith(variables, fetchTraceExporter);
  const app = createProductionApp({
    config: parseConfig({ NODE_ENV: 'test' }),
    enabledProviders,
    metrics: new Metrics(labelBounds(enabledProviders.keys(), defaultHandlers)),
    clock: () => Date.now(),
    logger: createLogger({ level: 'silent', now: () => new Date() }),
    tracer: tracing.tracer,
  });
  return { app, tracer: tracing.tracer };
}

async function deliver(variables: TracingEnv, traceparent: string) {
  const { app, tracer } = await tracedApp(variables);
  const event = acmeEvent({ created: Math.floor(Date.now() / 1000) - 10 });
  const body = JSON.stringify(event);
  const headers = { ...(await signedHeaders(body, { timestamp: Math.floor(Date.now() / 1000) })), traceparent };
  const database = connectDatabase({
    url: env.HYPERDRIVE.connectionString,
    maxConnections: 2,
    statementTimeoutMs: 5000,
  });
  const ctx = createExecutionContext();
  try {
    const response = await app.fetch(
      new Request('https://inbox.test/webhooks/acme', { method: 'POST', body, headers }),
      { db: database.db },
      ctx,
    );
    // As a Worker would: the request's spans are exported inside its own waitUntil.
    ctx.waitUntil(tracer.flush());
    await waitOnExecutionContext(ctx);
    return { event, response };
  } finally {
    await database.close();
  }
}

const hex = (bytes: number) =>
  Array.from(crypto.getRandomValues(new Uint8Array(bytes)), (byte) => byte.toString(16).padStart(2, '0')).join('');

describe('tracing in workerd', () => {
  it('exports the delivery trace over fetch after the request, joined to the sender traceparent', async () => {
    const exports = stubCollector();
    const variables = {
      OTEL_EXPORTER_OTLP_ENDPOINT: COLLECTOR,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_SERVICE_NAME: 'inbox-on-workerd',
    };
    const traceId = hex(16);
    const senderSpanId = hex(8);

    const { event, response } = await deliver(variables, `00-${traceId}-${senderSpanId}-01`);

    expect(response.status).toBe(200);
    expect(exports.map((sent) => [sent.url, sent.contentType, sent.service])).toContainEqual([
      `${COLLECTOR}/v1/traces`,
      'application/json',
      'inbox-on-workerd',
    ]);
    const spans = exports.flatMap((sent) => sent.spans).filter((span) => span.traceId === traceId);
    const delivery = spans.find((span) => span.name === 'POST /webhooks/:provider');
    expect(delivery?.parentSpanId).toBe(senderSpanId);
    for (const name of ['verify', 'claim', 'handler', 'commit']) {
      expect(spans.find((span) => span.name === name)?.parentSpanId, name).toBe(delivery?.spanId);
    }
    const handler = spans.find((span) => span.name === 'handler');
    const rows = await sql<{ traceparent: string | null }[]>`
      select traceparent from outbox_messages where deduplication_key like ${`acme:${event.id}:%`}`;
    expect(rows.map((row) => row.traceparent)).toEqual([`00-${traceId}-${handler?.spanId}-01`]);
  });

  it('sends nothing without an endpoint, and still stores the sender traceparent with the message', async () => {
    const exports = stubCollector();
    const traceparent = `00-${hex(16)}-${hex(8)}-01`;

    const { event, response } = await deliver({}, traceparent);

    expect(response.status).toBe(200);
    expect(exports).toEqual([]);
    const rows = await sql<{ traceparent: string | null }[]>`
      select traceparent from outbox_messages where deduplication_key like ${`acme:${event.id}:%`}`;
    expect(rows.map((row) => row.traceparent)).toEqual([traceparent]);
  });
});
