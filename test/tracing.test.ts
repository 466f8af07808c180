// Tracing end to end: a real app and relay with the OpenTelemetry SDK exporting over OTLP/HTTP (both
// protocols) to a receiver the test runs, and consumers reading each broker's message back. One trace
// runs from the sender's traceparent through verify, claim, the handler and commit to each publish,
// and every destination hands the consumer a traceparent of that trace. With no endpoint nothing is
// exported and no SDK exists. Async mode: the same one trace, the worker's apply a child of the
// delivery through the traceparent its row kept, whether the worker applies it alone or in a batch.
import { randomBytes } from 'node:crypto';
import { StorageType } from '@nats-io/jetstream';
import { nanos } from '@nats-io/transport-node';
import { trace } from '@opentelemetry/api';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defaultHandlers, defineHandler } from '../src/domain/handlers.ts';
import { tracingFromEnv } from '../src/entry/setup/tracing-node.ts';
import { DEFAULT_SERVICE_NAME, type TracingEnv, tracesUrl } from '../src/entry/setup/tracing-sdk.ts';
import { createLogger } from '../src/lib/logger.ts';
import { noTracing, type Tracer } from '../src/lib/tracing.ts';
import { replayEvents } from '../src/ops/actions/replay.ts';
import type { Publisher } from '../src/outbox/publishers/publisher.ts';
import { acmeEvent, signedHeaders, uniqueId } from './helpers/acme.ts';
import { buildTestApp } from './helpers/app.ts';
import {
  type Consumed,
  natsAdmin,
  publishersForFile,
  rabbitTopology,
  readNatsStream,
  readRedisStream,
  redisAdmin,
  SHARED_AMQP,
  SHARED_NATS,
  SHARED_REDIS,
} from './helpers/brokers.ts';
import { useTestDatabase } from './helpers/database.ts';
import { startOtlpReceiver } from './helpers/otlp-receiver.ts';
import { buildTestRelay } from './helpers/outbox.ts';
import { startSink } from './helpers/sink.ts';
import { buildTestWorker } from './helpers/worker.ts';

const database = await useTestDatabase();
const { db, sql } = database;
const receiver = await startOtlpReceiver();
const sink = await startSink();

const SERVER = 2;
const PRODUCER = 4;
const CONSUMER = 5;

const tracings: { shutdown(): Promise<void> }[] = [];
function tracingTo(env: TracingEnv): Tracer {
  const tracing = tracingFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, ...env });
  tracings.push(tracing);
  return tracing.tracer;
}
afterAll(() => Promise.all(tracings.map((tracing) => tracing.shutdown())));

afterEach(async () => {
  await sql`delete from outbox_messages`;
  sink.requests.length = 0;
});

/** A sender's sampled traceparent: a trace id and a span id of its own. */
function senderTrace() {
  const traceId = randomBytes(16).toString('hex');
  const spanId = randomBytes(8).toString('hex');
  return { traceId, spanId, traceparent: `00-${traceId}-${spanId}-01` };
}

async function deliverTraced(test: Awaited<ReturnType<typeof buildTestApp>>, traceparent: string | undefined) {
  const event = acmeEvent({ data: { id: uniqueId('sub'), status: 'active' } });
  const body = JSON.stringify(event);
  const response = await test.request('/webhooks/acme', {
    method: 'POST',
    body,
    headers: { ...(await signedHeaders(body)), ...(traceparent === undefined ? {} : { traceparent }) },
  });
  return { event, response };
}

/** The traceparent the event's row kept for the worker (async mode). */
async function storedTraceparent(eventId: string) {
  const [row] = await sql<{ traceparent: string | null }[]>`
    select traceparent from webhook_events where provider = 'acme' and event_id = ${eventId}`;
  expect(row, eventId).toBeDefined();
  return row?.traceparent;
}

async function messageOf(eventId: string) {
  const rows = await sql<{ id: string; traceparent: string | null }[]>`
    select id, traceparent from outbox_messages where deduplication_key like ${`acme:${eventId}:%`}`;
  expect(rows).toHaveLength(1);
  return rows[0] as { id: string; traceparent: string | null };
}

const spansOf = (traceId: string) => receiver.spans.filter((span) => span.traceId === traceId);
function only(traceId: string, name: string) {
  const found = spansOf(traceId).filter((span) => span.name === name);
  expect(found, name).toHaveLength(1);
  return found[0] as (typeof found)[number];
}

/** The trace a delivery made, checked span by span: what every protocol and mode must produce. */
function expectDeliveryTrace(sender: ReturnType<typeof senderTrace>, batchSize: number) {
  const delivery = only(sender.traceId, 'POST /webhooks/:provider');
  expect(delivery).toMatchObject({ parentSpanId: sender.spanId, kind: SERVER });
  expect(delivery.attributes).toMatchObject({
    'http.route': '/webhooks/:provider',
    'http.response.status_code': 200,
    'webhook.provider': 'acme',
  });
  for (const name of ['verify', 'claim', 'handler', 'commit']) {
    expect(only(sender.traceId, name).parentSpanId, name).toBe(delivery.spanId);
  }
  expect(only(sender.traceId, 'verify').attributes['webhook.verification']).toBe('verified');
  expect(only(sender.traceId, 'handler').attributes).toMatchObject({
    'webhook.provider': 'acme',
    'webhook.event_type': 'subscription.updated',
  });
  expect(only(sender.traceId, 'claim').attributes['inbox.batch.size']).toBe(batchSize);
  expect(only(sender.traceId, 'commit').attributes['inbox.batch.size']).toBe(batchSize);
  return { delivery, handler: only(sender.traceId, 'handler') };
}

describe('tracing on', () => {
  it('http/json: one trace from the sender through commit (group commit) to the HTTP publish, whose header carries it', async () => {
    const tracer = tracingTo({ OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_SERVICE_NAME: 'inbox-under-test' });
    const test = await buildTestApp(db, { tracer });
    const sender = senderTrace();

    const { event, response } = await deliverTraced(test, sender.traceparent);
    expect(response.status).toBe(200);
    const message = await messageOf(event.id);
    const relay = buildTestRelay(db, { target: sink.url, tracer });
    expect(await relay.relay.drain()).toMatchObject({ published: 1 });
    await tracer.flush();

    const { handler } = expectDeliveryTrace(sender, 1);
    // The message stored the handler span's traceparent, and the HTTP target got it as a header.
    expect(message.traceparent).toBe(`00-${sender.traceId}-${handler.spanId}-01`);
    expect(sink.requests.map((request) => request.headers.traceparent)).toEqual([message.traceparent]);
    expect(Object.keys(JSON.parse(sink.requests[0]?.body ?? '{}'))).toEqual([
      'id',
      'topic',
      'deduplication_key',
      'payload',
      'created_at',
    ]);
    // The publish continues the trace under the handler, linked to its batch's claim.
    const publish = only(sender.traceId, 'outbox publish');
    expect(publish).toMatchObject({ parentSpanId: handler.spanId, kind: PRODUCER });
    expect(publish.attributes).toMatchObject({ 'messaging.system': 'http', 'outbox.outcome': 'published' });
    const claims = receiver.spans.filter((span) => span.name === 'outbox claim');
    const claim = claims.find((span) => publish.links.some((link) => link.spanId === span.spanId));
    expect(claim?.attributes['outbox.claimed']).toBe(1);
    const outcome = receiver.spans.find(
      (span) => span.name === 'outbox outcome' && span.parentSpanId === claim?.spanId,
    );
    expect(outcome?.attributes['outbox.published']).toBe(1);
    // Log lines and spans share the trace id; every span names the service.
    const line = test.logs.map((text) => JSON.parse(text)).find((fields) => fields.event_id === event.id);
    expect(line?.trace_id).toBe(sender.traceId);
    expect(new Set(spansOf(sender.traceId).map((span) => span.service))).toEqual(new Set(['inbox-under-test']));
    expect(receiver.requests.some((request) => request.contentType?.startsWith('application/json'))).toBe(true);
  });

  it('http/protobuf (the default): the same trace through a transaction of its own, named webhook-inbox', async () => {
    const tracer = tracingTo({});
    const test = await buildTestApp(db, { tracer, groupCommit: undefined });
    const sender = senderTrace();

    const { event, response } = await deliverTraced(test, sender.traceparent);
    expect(response.status).toBe(200);
    const message = await messageOf(event.id);
    await buildTestRelay(db, { target: sink.url, tracer }).relay.drain();
    await tracer.flush();

    const { handler } = expectDeliveryTrace(sender, 1);
    expect(message.traceparent).toBe(`00-${sender.traceId}-${handler.spanId}-01`);
    expect(only(sender.traceId, 'outbox publish').parentSpanId).toBe(handler.spanId);
    expect(only(sender.traceId, 'verify').service).toBe(DEFAULT_SERVICE_NAME);
    expect(receiver.requests.some((request) => request.contentType === 'application/x-protobuf')).toBe(true);
  });

  it('starts a trace of its own when the sender sends no valid traceparent, and logs that trace id', async () => {
    const tracer = tracingTo({ OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' });
    const test = await buildTestApp(db, { tracer });

    const { event, response } = await deliverTraced(test, `00-${'0'.repeat(32)}-${'1'.repeat(16)}-01`);
    expect(response.status).toBe(200);
    await tracer.flush();
    const message = await messageOf(event.id);
    const traceId = message.traceparent?.split('-')[1] ?? '';
    const delivery = only(traceId, 'POST /webhooks/:provider');
    expect(delivery.parentSpanId).toBeUndefined();
    const line = test.logs.map((text) => JSON.parse(text)).find((fields) => fields.event_id === event.id);
    expect(line?.trace_id).toBe(traceId);
  });

  it('marks a refused delivery (401) on its server span and stores nothing', async () => {
    const tracer = tracingTo({ OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' });
    const test = await buildTestApp(db, { tracer });
    const sender = senderTrace();
    const body = JSON.stringify(acmeEvent());
    const headers = { ...(await signedHeaders(body, { secret: 'not-the-secret' })), traceparent: sender.traceparent };

    expect((await test.request('/webhooks/acme', { method: 'POST', body, headers })).status).toBe(401);
    await tracer.flush();
    const delivery = only(sender.traceId, 'POST /webhooks/:provider');
    expect(delivery.attributes['http.response.status_code']).toBe(401);
    expect(only(sender.traceId, 'verify').attributes['webhook.verification']).toBe('unauthorized');
    expect(spansOf(sender.traceId).map((span) => span.name)).not.toContain('claim');
  });

  it("fails the server span of a delivery answered 5xx, and only that one: a refusal is the sender's", async () => {
    const tracer = tracingTo({ OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' });
    const failing = defineHandler({
      schema: z.unknown(),
      apply() {
        throw new Error('handler down');
      },
    });
    const test = await buildTestApp(db, { tracer, handlers: { acme: { 'subscription.updated': failing } } });
    const failed = senderTrace();
    expect((await deliverTraced(test, failed.traceparent)).response.status).toBe(500);
    const refused = senderTrace();
    const body = JSON.stringify(acmeEvent());
    const headers = { ...(await signedHeaders(body, { secret: 'not-the-secret' })), traceparent: refused.traceparent };
    expect((await test.request('/webhooks/acme', { method: 'POST', body, headers })).status).toBe(401);
    await tracer.flush();
    const ERROR = 2;
    const failedSpan = only(failed.traceId, 'POST /webhooks/:provider');
    expect(failedSpan.statusCode).toBe(ERROR);
    expect(failedSpan.attributes).toMatchObject({ 'http.request.method': 'POST', 'http.response.status_code': 500 });
    expect(only(refused.traceId, 'POST /webhooks/:provider').statusCode).not.toBe(ERROR);
  });

  it('takes a traceparent that is not one as none: the delivery is stored under a trace of its own', async () => {
    const test = await buildTestApp(db);
    const { event, response } = await deliverTraced(test, 'not-a-traceparent');
    expect(response.status).toBe(200);
    const line = test.logs.map((text) => JSON.parse(text)).find((fields) => fields.event_id === event.id);
    expect(line?.trace_id).toMatch(/^[0-9a-f]{32}$/);
  });
});

const publisherOn = publishersForFile();
const natsStream = uniqueId('TRACED');
const nats = await natsAdmin(SHARED_NATS);
await nats.jsm.streams.add({
  name: natsStream,
  subjects: [`${natsStream}.>`],
  storage: StorageType.Memory,
  duplicate_window: nanos(120_000),
});
afterAll(() => nats.jsm.streams.delete(natsStream));
const rabbitNames = { exchange: uniqueId('traced'), queue: uniqueId('traced') };
const rabbit = await rabbitTopology(rabbitNames);
const redisStream = uniqueId('traced');
const redis = redisAdmin(SHARED_REDIS);
afterAll(() => redis.del(redisStream));

describe('every destination hands the consumer the trace', () => {
  const destinations: { name: string; publisher: () => Publisher; consume: () => Promise<Consumed[]> }[] = [
    {
      name: 'HTTP',
      publisher: () => publisherOn(sink.url),
      consume: async () =>
        sink.requests.map((request) => ({
          body: JSON.parse(request.body),
          brokerKey: undefined,
          address: request.path,
          headers: { traceparent: String(request.headers.traceparent) },
        })),
    },
    {
      name: 'NATS JetStream',
      publisher: () => publisherOn(`${SHARED_NATS}?stream=${natsStream}&subject_prefix=${natsStream}.`),
      consume: () => readNatsStream(nats.nc, natsStream),
    },
    {
      name: 'RabbitMQ',
      publisher: () => publisherOn(`${SHARED_AMQP}?exchange=${rabbitNames.exchange}`),
      consume: () => rabbit.drainQueue(),
    },
    {
      name: 'Redis Streams',
      publisher: () => publisherOn(`${SHARED_REDIS}?stream=${redisStream}`),
      consume: () => readRedisStream(redis, redisStream),
    },
  ];

  it.each(destinations)('$name: the consumer reads the sender trace id outside the body', async (destination) => {
    const tracer = tracingTo({ OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' });
    const test = await buildTestApp(db, { tracer });
    const sender = senderTrace();
    const { event } = await deliverTraced(test, sender.traceparent);
    const message = await messageOf(event.id);

    const relay = buildTestRelay(db, { publisher: destination.publisher(), tracer, settings: { timeoutMs: 5000 } });
    expect(await relay.relay.drain()).toMatchObject({ published: 1 });
    const consumed = (await destination.consume()).filter((read) => read.body.id === message.id);
    expect(consumed).toHaveLength(1);
    const [read] = consumed as [Consumed];
    expect(read.headers.traceparent).toBe(message.traceparent);
    expect(read.headers.traceparent?.split('-')[1]).toBe(sender.traceId);
    expect(Object.keys(read.body).sort()).toEqual(['created_at', 'deduplication_key', 'id', 'payload', 'topic']);
    await tracer.flush();
    expect(only(sender.traceId, 'outbox publish').attributes['outbox.outcome']).toBe('published');
  });
});

describe('tracing off', () => {
  it('without an endpoint: no SDK, nothing exported, and the sender traceparent still reaches the consumer', async () => {
    const tracing = tracingFromEnv({ OTEL_SERVICE_NAME: 'ignored', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' });
    expect(tracing.tracer).toBe(noTracing);
    // No global provider was registered by this file's SDK tracers either: the API's stays a no-op.
    expect(trace.getTracerProvider().getTracer('probe').startSpan('probe').isRecording()).toBe(false);
    const exportsBefore = receiver.requests.length;
    const test = await buildTestApp(db, { tracer: tracing.tracer });
    const sender = senderTrace();

    const { event, response } = await deliverTraced(test, sender.traceparent);
    expect(response.status).toBe(200);
    const message = await messageOf(event.id);
    expect(message.traceparent).toBe(sender.traceparent);
    await buildTestRelay(db, { target: sink.url, tracer: tracing.tracer }).relay.drain();
    expect(sink.requests.map((request) => request.headers.traceparent)).toEqual([sender.traceparent]);
    await tracing.tracer.flush();
    await tracing.shutdown();
    expect(receiver.requests.length).toBe(exportsBefore);
    expect(spansOf(sender.traceId)).toEqual([]);
  });

  it('reads the endpoint variables as the spec says, and refuses a protocol it cannot speak', () => {
    expect(tracesUrl({})).toBeUndefined();
    expect(tracesUrl({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' })).toBe(
      'http://collector:4318/v1/traces',
    );
    expect(
      tracesUrl({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://traces:9999/custom',
      }),
    ).toBe('http://traces:9999/custom');
    expect(() =>
      tracingFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://x', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }),
    ).toThrow(/OTEL_EXPORTER_OTLP_PROTOCOL/);
    expect(() => tracingFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://x', OTEL_BSP_MAX_QUEUE_SIZE: 'lots' })).toThrow(
      /OTEL_BSP_MAX_QUEUE_SIZE/,
    );
  });
});

describe('async mode', () => {
  it('one trace from the sender through claim, then the worker apply, its handler and the publish', async () => {
    const tracer = tracingTo({ OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' });
    const test = await buildTestApp(db, { tracer, config: { PROCESSING_MODE: 'async' } });
    // One lane: the two queued together are claimed by one batch, never split between lanes.
    const worker = buildTestWorker(db, { tracer, settings: { lanes: 1 } });
    const senders = [senderTrace(), senderTrace(), senderTrace()];

    // The first alone (the worker's one-event path), the other two in one batch (its batch claim).
    const alone = await deliverTraced(test, senders[0]?.traceparent);
    expect(alone.response.status).toBe(202);
    expect(await worker.worker.work()).toMatchObject({ completed: 1 });
    const batched = [
      await deliverTraced(test, senders[1]?.traceparent),
      await deliverTraced(test, senders[2]?.traceparent),
    ];
    expect(batched.map(({ response }) => response.status)).toEqual([202, 202]);
    const stored = await Promise.all([alone, ...batched].map(({ event }) => storedTraceparent(event.id)));
    expect(await worker.worker.work()).toMatchObject({ completed: 2 });
    const applied = (eventId: string) =>
      worker.logs.find((line) => line.msg === 'inbox event applied' && line.event_id === eventId);
    expect(applied(alone.event.id)?.batch_size).toBeUndefined();
    for (const { event } of batched) expect(applied(event.id)?.batch_size).toBe(2);
    expect(await buildTestRelay(db, { target: sink.url, tracer }).relay.drain()).toMatchObject({ published: 3 });
    await tracer.flush();

    for (const [index, { event }] of [alone, ...batched].entries()) {
      const sender = senders[index] as ReturnType<typeof senderTrace>;
      const delivery = only(sender.traceId, 'POST /webhooks/:provider');
      expect(delivery).toMatchObject({ parentSpanId: sender.spanId, kind: SERVER });
      expect(delivery.attributes['http.response.status_code']).toBe(202);
      for (const name of ['verify', 'claim'])
        expect(only(sender.traceId, name).parentSpanId, name).toBe(delivery.spanId);
      expect(spansOf(sender.traceId).map((span) => span.name)).not.toContain('commit');
      // The row kept the delivery span's traceparent, and the apply is that span's child.
      expect(stored[index]).toBe(`00-${sender.traceId}-${delivery.spanId}-01`);
      const apply = only(sender.traceId, 'apply');
      expect(apply).toMatchObject({ kind: CONSUMER, parentSpanId: delivery.spanId });
      expect(apply.attributes).toEqual({ 'webhook.provider': 'acme', 'webhook.event_type': 'subscription.updated' });
      const handler = only(sender.traceId, 'handler');
      expect(handler.parentSpanId).toBe(apply.spanId);
      const message = await messageOf(event.id);
      expect(message.traceparent).toBe(`00-${sender.traceId}-${handler.spanId}-01`);
      expect(only(sender.traceId, 'outbox publish')).toMatchObject({ parentSpanId: handler.spanId, kind: PRODUCER });
      expect(sink.requests.filter((request) => request.headers.traceparent === message.traceparent)).toHaveLength(1);
    }
    // No apply went to a trace of its own.
    const traceIds = new Set(senders.map((sender) => sender.traceId));
    expect(receiver.spans.filter((span) => span.name === 'apply' && !traceIds.has(span.traceId))).toEqual([]);
  });

  it("tracing off: the row keeps the sender's valid traceparent (else null) and the worker passes it on", async () => {
    const test = await buildTestApp(db, { tracer: noTracing, config: { PROCESSING_MODE: 'async' } });
    const sender = senderTrace();

    const traced = await deliverTraced(test, sender.traceparent);
    const bare = await deliverTraced(test, undefined);
    const invalid = await deliverTraced(test, `00-${'0'.repeat(32)}-${'1'.repeat(16)}-01`);
    expect([traced, bare, invalid].map(({ response }) => response.status)).toEqual([202, 202, 202]);
    expect(await storedTraceparent(traced.event.id)).toBe(sender.traceparent);
    expect(await storedTraceparent(bare.event.id)).toBeNull();
    expect(await storedTraceparent(invalid.event.id)).toBeNull();

    expect(await buildTestWorker(db).worker.work()).toMatchObject({ completed: 3 });
    expect((await messageOf(traced.event.id)).traceparent).toBe(sender.traceparent);
    expect((await messageOf(bare.event.id)).traceparent).toBeNull();
    expect((await messageOf(invalid.event.id)).traceparent).toBeNull();
  });

  it("an operator's replay continues no trace: its message carries none, and the row keeps the delivery's", async () => {
    const sender = senderTrace();
    const event = acmeEvent();
    await sql`insert into webhook_events (provider, event_id, event_type, status, payload, attempt_count, traceparent)
      values ('acme', ${event.id}, ${event.type}, 'failed', ${JSON.stringify(event)}::text::jsonb, 1, ${sender.traceparent})`;
    const logger = createLogger({ level: 'silent', now: () => new Date() });
    const replayed = await replayEvents(
      { db, handlers: defaultHandlers, clock: () => Date.now(), logger },
      { provider: 'acme', eventIds: [event.id], operator: 'alice' },
    );
    expect(replayed).toMatchObject({ kind: 'replayed', events: [{ outcome: 'applied' }] });
    expect((await messageOf(event.id)).traceparent).toBeNull();
    expect(await storedTraceparent(event.id)).toBe(sender.traceparent);
  });
});
