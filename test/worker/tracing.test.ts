// Tracing in workerd through the Worker's own handlers: with OTEL_EXPORTER_OTLP_ENDPOINT among the
// bindings, a delivery's spans and a cron run's publishes are exported over `fetch` to a real OTLP
// receiver (test/worker-global-setup.ts) from each invocation's waitUntil, in the sender's trace.
// Without the binding nothing is sent, and the message still stores the sender's traceparent.
import { createExecutionContext, createScheduledController, waitOnExecutionContext } from 'cloudflare:test';
import { env } from 'cloudflare:workers';
import postgres from 'postgres';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import worker from '../../src/entry/worker.ts';
import { acmeEvent, signedHeaders, uniqueId } from '../helpers/acme.ts';
import type { ReceivedSpan, ReceivedTraces } from '../helpers/otlp-receiver.ts';

const sql = postgres(env.HYPERDRIVE.connectionString, { max: 2, fetch_types: false, onnotice: () => {} });
afterAll(() => sql.end());
afterEach(() => {
  vi.restoreAllMocks();
});

const receiverUrl = (env as Env & { OTLP_RECEIVER_URL: string }).OTLP_RECEIVER_URL;

/** The test's bindings plus OTEL_* ones: a new env object, so the Worker builds a runtime for it. */
const withBindings = (variables: Record<string, string>) => ({ ...env, ...variables }) as Env;

const SERVER = 2;
const PRODUCER = 4;

const hex = (bytes: number) =>
  Array.from(crypto.getRandomValues(new Uint8Array(bytes)), (byte) => byte.toString(16).padStart(2, '0')).join('');

async function received(): Promise<ReceivedTraces> {
  return (await (await fetch(new URL('/received', receiverUrl))).json()) as ReceivedTraces;
}

async function spansOf(traceId: string): Promise<ReceivedSpan[]> {
  return (await received()).spans.filter((span) => span.traceId === traceId);
}

/** One signed acme delivery to the Worker's fetch handler, with the sender's traceparent. */
async function deliver(bindings: Env, traceparent: string) {
  const event = acmeEvent({
    created: Math.floor(Date.now() / 1000) - 10,
    data: { id: uniqueId('sub'), status: 'active' },
  });
  const body = JSON.stringify(event);
  const headers = { ...(await signedHeaders(body, { timestamp: Math.floor(Date.now() / 1000) })), traceparent };
  const ctx = createExecutionContext();
  const response = await worker.fetch(
    new Request('https://inbox.test/webhooks/acme', { method: 'POST', body, headers }),
    bindings,
    ctx,
  );
  // What the Worker hands to waitUntil: the request's writes and its spans' export.
  await waitOnExecutionContext(ctx);
  return { event, response, key: `acme:${event.id}:subscription.changed` };
}

async function runCron(bindings: Env): Promise<void> {
  const ctx = createExecutionContext();
  worker.scheduled(createScheduledController({ cron: '* * * * *', scheduledTime: Date.now() }), bindings, ctx);
  await waitOnExecutionContext(ctx);
}

describe('tracing in the Worker', () => {
  it('exports a delivery trace from the sender traceparent through verify, claim, handler and commit', async () => {
    const bindings = withBindings({
      OTEL_EXPORTER_OTLP_ENDPOINT: receiverUrl,
      OTEL_SERVICE_NAME: 'inbox-on-workerd',
      OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer%20collector-token',
    });
    const traceId = hex(16);
    const senderSpanId = hex(8);

    const { response, key } = await deliver(bindings, `00-${traceId}-${senderSpanId}-01`);

    expect(response.status).toBe(200);
    const spans = await spansOf(traceId);
    const delivery = spans.find((span) => span.name === 'POST /webhooks/:provider');
    expect(delivery).toMatchObject({ parentSpanId: senderSpanId, kind: SERVER, service: 'inbox-on-workerd' });
    expect(delivery?.attributes).toMatchObject({ 'http.response.status_code': 200, 'webhook.provider': 'acme' });
    for (const name of ['verify', 'claim', 'handler', 'commit']) {
      expect(
        spans.filter((span) => span.name === name).map((span) => span.parentSpanId),
        name,
      ).toEqual([delivery?.spanId]);
    }
    // http/protobuf unless OTEL_EXPORTER_OTLP_PROTOCOL says otherwise, to <endpoint>/v1/traces, with the headers.
    expect((await received()).requests).toContainEqual({
      path: '/v1/traces',
      contentType: 'application/x-protobuf',
      authorization: 'Bearer collector-token',
    });
    const handler = spans.find((span) => span.name === 'handler');
    const rows = await sql<{ traceparent: string | null }[]>`
      select traceparent from outbox_messages where deduplication_key = ${key}`;
    expect(rows).toEqual([{ traceparent: `00-${traceId}-${handler?.spanId}-01` }]);
  });

  it("exports the cron run's outbox publish in the delivery's trace (http/json)", async () => {
    const bindings = withBindings({
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${receiverUrl}/v1/traces`,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    });
    const traceId = hex(16);
    const { response, key } = await deliver(bindings, `00-${traceId}-${hex(8)}-01`);
    expect(response.status).toBe(200);

    await runCron(bindings);

    const [row] = await sql<{ status: string }[]>`
      select status::text from outbox_messages where deduplication_key = ${key}`;
    expect(row?.status).toBe('published');
    const spans = await spansOf(traceId);
    const handler = spans.find((span) => span.name === 'handler');
    const publishes = spans.filter((span) => span.name === 'outbox publish');
    expect(publishes).toHaveLength(1);
    expect(publishes[0]).toMatchObject({ parentSpanId: handler?.spanId, kind: PRODUCER, service: 'webhook-inbox' });
    expect(publishes[0]?.attributes).toMatchObject({ 'outbox.destination': 'default', 'outbox.outcome': 'published' });
    expect((await received()).requests.some((request) => request.contentType === 'application/json')).toBe(true);
  });

  it('sends nothing without an endpoint binding, and the message keeps the sender traceparent', async () => {
    const exportsBefore = (await received()).requests.length;
    const traceId = hex(16);
    const traceparent = `00-${traceId}-${hex(8)}-01`;

    const { response, key } = await deliver(env, traceparent);
    await runCron(env);

    expect(response.status).toBe(200);
    const after = await received();
    expect(after.requests).toHaveLength(exportsBefore);
    expect(after.spans.filter((span) => span.traceId === traceId)).toEqual([]);
    const rows = await sql<{ traceparent: string | null; status: string }[]>`
      select traceparent, status::text from outbox_messages where deduplication_key = ${key}`;
    expect(rows).toEqual([{ traceparent, status: 'published' }]);
  });

  it('answers 503 naming OTEL_EXPORTER_OTLP_PROTOCOL when it asks for grpc, and stores nothing', async () => {
    const logs: string[] = [];
    vi.spyOn(console, 'log').mockImplementation((line: unknown) => {
      logs.push(String(line));
    });
    const bindings = withBindings({ OTEL_EXPORTER_OTLP_ENDPOINT: receiverUrl, OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' });

    const { response, key } = await deliver(bindings, `00-${hex(16)}-${hex(8)}-01`);

    expect(response.status).toBe(503);
    expect(logs.map((line) => JSON.parse(line) as Record<string, unknown>)).toEqual([
      expect.objectContaining({
        msg: 'configuration unusable',
        error: expect.stringContaining('OTEL_EXPORTER_OTLP_PROTOCOL'),
      }),
    ]);
    expect(await sql`select 1 from outbox_messages where deduplication_key = ${key}`).toHaveLength(0);
  });

  it('answers and publishes as usual when the collector refuses the exports, logging each failed one', async () => {
    const logs: Record<string, unknown>[] = [];
    vi.spyOn(console, 'log').mockImplementation((line: unknown) => {
      logs.push(JSON.parse(String(line)) as Record<string, unknown>);
    });
    const bindings = withBindings({ OTEL_EXPORTER_OTLP_ENDPOINT: `${receiverUrl}/unavailable`, LOG_LEVEL: 'warn' });
    const refusedBefore = (await received()).requests.filter((request) => request.path.startsWith('/unavailable/'));

    const { response, key } = await deliver(bindings, `00-${hex(16)}-${hex(8)}-01`);
    await runCron(bindings);

    expect(response.status).toBe(200);
    const [row] = await sql<{ status: string }[]>`
      select status::text from outbox_messages where deduplication_key = ${key}`;
    expect(row?.status).toBe('published');
    // One refused export after the request, one after the cron run, each logged once.
    const refused = (await received()).requests.filter((request) => request.path.startsWith('/unavailable/'));
    expect(refused.length - refusedBefore.length).toBe(2);
    expect(logs.filter((line) => line.msg === 'trace export failed')).toEqual([
      expect.objectContaining({ level: 'warn', errors: ['Error'] }),
      expect.objectContaining({ level: 'warn', errors: ['Error'] }),
    ]);
  });
});
