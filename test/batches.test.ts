// Senders that post several events in one delivery (HubSpot, LINE, SendGrid, GoCardless, Twilio
// Event Streams): each event is a row of its own under its own id and type, and each is applied
// once, whatever shape the sender's retry takes (HubSpot raises `attemptNumber`, LINE marks
// `isRedelivery`, SendGrid and Twilio re-batch in another order or a subset, GoCardless re-sends the
// events under a new `webhook_id`). An event's batch-mates never depend on it: a malformed event is set
// aside as refused while they are stored, and a failing handler's event is recorded `failed` while
// they are stored and applied.
import { randomBytes } from 'node:crypto';
import { sql as drizzleSql } from 'drizzle-orm';
import { beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineHandler, type HandlerMap } from '../src/domain/handlers.ts';
import { createDeliveryLog } from '../src/inbox/delivery-log.ts';
import { RejectionLog } from '../src/inbox/rejection-log.ts';
import { arrayElementTexts } from '../src/lib/json.ts';
import { createLogger } from '../src/lib/logger.ts';
import { buildTestApp, type TestApp } from './helpers/app.ts';
import { useTestDatabase } from './helpers/database.ts';
import { barrier, senderRows } from './helpers/facts.ts';
import {
  enableNamedSenders,
  gocardlessBody,
  gocardlessEvent,
  hubspotEvent,
  lineBody,
  lineEvent,
  type NamedSender,
  namedSenders,
  sendgridEvent,
  twilioEvent,
} from './helpers/named-senders.ts';

const { sql, db } = await useTestDatabase();
const enabledSenders = await enableNamedSenders();

/** Real time: the signed times are checked against the app's clock, set to now for each request. */
const nowSeconds = () => Math.floor(Date.now() / 1000);

/** One event as the sender first writes it, and as its retry writes the same event. */
interface BatchEvent {
  id: string;
  type: string;
  text: string;
  retried: string;
}

interface BatchSender {
  name: string;
  newEvent(now: number): BatchEvent;
  /** A delivery of these events' texts, as the sender wraps them (a fresh envelope each time). */
  body(texts: readonly string[]): string;
  /** Where the events' array stands in the body (member names; empty: the body is the array). */
  eventsPath: readonly string[];
}

/**
 * Strings a naive cut would end early or late at: an escaped quote before a bracket and a comma, a
 * quoted object inside a string, a value ending in a backslash (its escape, then the closing quote).
 */
const TRICKY_STRINGS = ['say \\"}],{\\"', 'a "quoted" }],{"id":"x"}, and a \\', '\\"'];

const asArray = (texts: readonly string[]) => `[${texts.join(',')}]`;
const changedOnRetry = (event: object, retried: object, id: string, type: string): BatchEvent => ({
  id,
  type,
  text: JSON.stringify(event),
  retried: JSON.stringify(retried),
});
/** An event its sender's retry sends unchanged: id and type (and a type suffix) read by field name. */
function same<Event extends Record<string, string | number | object>>(
  event: Event,
  id: keyof Event,
  type: keyof Event,
  suffix?: keyof Event,
): BatchEvent {
  const typeText = suffix === undefined ? String(event[type]) : `${String(event[type])}.${String(event[suffix])}`;
  return changedOnRetry(event, event, String(event[id]), typeText);
}

const batchSenders: readonly BatchSender[] = [
  {
    name: 'hubspot',
    newEvent(now) {
      const event = hubspotEvent(now);
      const retried = { ...event, attemptNumber: event.attemptNumber + 1 };
      return changedOnRetry(event, retried, String(event.eventId), event.subscriptionType);
    },
    body: asArray,
    eventsPath: [],
  },
  {
    name: 'line',
    newEvent(now) {
      const event = lineEvent(now);
      const retried = { ...event, deliveryContext: { isRedelivery: true } };
      return changedOnRetry(event, retried, event.webhookEventId, event.type);
    },
    body: lineBody,
    eventsPath: ['events'],
  },
  {
    name: 'sendgrid',
    newEvent: (now) => same(sendgridEvent(now), 'sg_event_id', 'event'),
    body: asArray,
    eventsPath: [],
  },
  // A new `meta.webhook_id` on every delivery, retries included.
  {
    name: 'gocardless',
    newEvent: (now) => same(gocardlessEvent(now), 'id', 'resource_type', 'action'),
    body: gocardlessBody,
    eventsPath: ['events'],
  },
  { name: 'twilio', newEvent: (now) => same(twilioEvent(now), 'id', 'type'), body: asArray, eventsPath: [] },
];

const named = (name: string): NamedSender => {
  const sender = namedSenders.find((candidate) => candidate.name === name);
  if (sender === undefined) throw new Error(`no named sender ${name}`);
  return sender;
};

beforeAll(async () => {
  await sql`create table batch_applications (provider text, event_id text, n int not null,
    primary key (provider, event_id))`;
});

/** A handler that counts each application of an event by its stored id, in the delivery's transaction. */
function countingHandler(failOn?: Set<string>, schema: z.ZodType<unknown> = z.looseObject({})) {
  return defineHandler({
    schema,
    async apply({ tx, event }) {
      if (failOn?.has(event.eventId)) throw new Error('ledger down');
      await tx.execute(drizzleSql`insert into batch_applications (provider, event_id, n)
        values (${event.provider}, ${event.eventId}, 1)
        on conflict (provider, event_id) do update set n = batch_applications.n + 1`);
    },
  });
}

/** Every batch sender's event type handled by the counting handler. */
function countingHandlers(failOn?: Set<string>, schema?: z.ZodType<unknown>): HandlerMap {
  const handler = countingHandler(failOn, schema);
  const now = nowSeconds();
  return Object.fromEntries(batchSenders.map((sender) => [sender.name, { [sender.newEvent(now).type]: handler }]));
}

async function applications(provider: string, ids: readonly string[]): Promise<Record<string, number>> {
  const rows = await sql<{ event_id: string; n: number }[]>`select event_id, n from batch_applications
    where provider = ${provider} and event_id in ${sql(ids)}`;
  return Object.fromEntries(rows.map((row) => [row.event_id, row.n]));
}

async function rowsPerId(provider: string, ids: readonly string[]): Promise<Record<string, number>> {
  const rows = await sql<{ event_id: string; n: number }[]>`select event_id, count(*)::int as n from webhook_events
    where provider = ${provider} and event_id in ${sql(ids)} group by event_id`;
  return Object.fromEntries(rows.map((row) => [row.event_id, row.n]));
}

const once = (ids: readonly string[]) => Object.fromEntries(ids.map((id) => [id, 1]));

/** Each event's row: its status, failures so far and last error. */
async function statusesOf(provider: string, ids: readonly string[]) {
  const rows = await sql<{ event_id: string; status: string; attempt_count: number; last_error: string | null }[]>`
    select event_id, status, attempt_count, last_error from webhook_events
    where provider = ${provider} and event_id in ${sql(ids)}`;
  return Object.fromEntries(rows.map(({ event_id, ...row }) => [event_id, row]));
}

const ADMIN_TOKEN = 'batches-admin-token-0123456789abcdef';

/** A fresh W3C trace: the refusals of one delivery are found by its trace id. */
function traced(): { traceId: string; traceparent: string } {
  const traceId = randomBytes(16).toString('hex');
  return { traceId, traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01` };
}

/** An app whose refusals are recorded in a log of its own and listed by its admin API. */
async function appWithRefusals(
  overrides: { handlers?: HandlerMap; config?: { PROCESSING_MODE?: 'sync' | 'async' } } = {},
): Promise<{ test: TestApp; log: RejectionLog }> {
  const log = new RejectionLog();
  const test = await buildTestApp(db, {
    enabledSenders,
    handlers: overrides.handlers ?? countingHandlers(),
    rejections: log,
    config: { ADMIN_TOKEN, ...overrides.config },
  });
  return { test, log };
}

/** The refusals of the delivery traced `traceId`, as the operator's API lists them. */
async function refusalsOf(test: TestApp, provider: string, traceId: string) {
  const response = await test.request(`/admin/api/rejections?provider=${provider}`, {
    method: 'GET',
    headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
  });
  expect(response.status).toBe(200);
  const { rejections } = (await response.json()) as {
    rejections: { trace_id: string | null; status: number; reason: string; detail: string | null }[];
  };
  return rejections
    .filter((rejection) => rejection.trace_id === traceId)
    .map(({ status, reason, detail }) => ({ status, reason, detail }));
}

describe.each(batchSenders.map((sender) => [sender.name, sender] as const))('%s', (_name, sender) => {
  const signer = named(sender.name);
  const post = (test: TestApp, body: string, extra: Record<string, string> = {}) => {
    const now = nowSeconds();
    test.setNow(now * 1000);
    return test.request(`/webhooks/${sender.name}`, {
      method: 'POST',
      body,
      headers: { ...signer.headers({ body, eventType: '' }, signer.credentials[0], now), ...extra },
    });
  };
  const events = (count: number) => Array.from({ length: count }, () => sender.newEvent(nowSeconds()));

  it('stores and applies each event once: first delivery, its retry, a reordered subset', async () => {
    const test = await buildTestApp(db, { enabledSenders, handlers: countingHandlers() });
    const batch = events(3);
    const ids = batch.map((event) => event.id);
    const [a, b, c] = batch;
    if (a === undefined || b === undefined || c === undefined) throw new Error('three events');

    const first = await post(test, sender.body(batch.map((event) => event.text)));
    expect(await first.text()).toBe('{"received":true}');
    const rows = await sql<{ event_id: string; event_type: string; status: string; payload: unknown }[]>`
      select event_id, event_type, status, payload from webhook_events
      where provider = ${sender.name} and event_id in ${sql(ids)}`;
    expect(rows.map((row) => row.event_id).sort()).toEqual([...ids].sort());
    for (const event of batch) {
      // Each row is the event's own JSON under its own id and type: no `batch` row, no envelope.
      expect(rows.find((row) => row.event_id === event.id)).toMatchObject({
        event_type: event.type,
        status: 'completed',
        payload: JSON.parse(event.text),
      });
    }

    const retry = await post(test, sender.body(batch.map((event) => event.retried)));
    expect(await retry.text()).toBe('{"received":true,"duplicate":true}');
    const subset = await post(test, sender.body([c.retried, a.retried]));
    expect(await subset.text()).toBe('{"received":true,"duplicate":true}');

    expect(await rowsPerId(sender.name, ids)).toEqual(once(ids));
    expect(await applications(sender.name, ids)).toEqual(once(ids));
    expect(await sql`select 1 from webhook_events where provider = ${sender.name} and event_type = 'batch'`).toEqual(
      [],
    );
  });

  it('applies only the new events of a delivery mixing seen and new ones, and does not call it a duplicate', async () => {
    const test = await buildTestApp(db, { enabledSenders, handlers: countingHandlers() });
    const [seen, fresh] = [events(2), events(2)];
    expect((await post(test, sender.body(seen.map((event) => event.text)))).status).toBe(200);
    const mixed = [fresh[0], seen[1], fresh[1], seen[0]].flatMap((event) => (event ? [event.retried] : []));
    const response = await post(test, sender.body(mixed));
    expect(await response.text()).toBe('{"received":true}');
    const ids = [...seen, ...fresh].map((event) => event.id);
    expect(await rowsPerId(sender.name, ids)).toEqual(once(ids));
    expect(await applications(sender.name, ids)).toEqual(once(ids));
  });

  /** A copy of `event`'s text with its id dropped, its id too long, or no object at all. */
  function malformedCopies(event: BatchEvent) {
    const fields = JSON.parse(event.text) as Record<string, unknown>;
    const idField =
      Object.keys(fields).find((key) => fields[key] === event.id || String(fields[key]) === event.id) ?? '';
    const { [idField]: _dropped, ...withoutId } = fields;
    // Where the refusal names it: the event's place in the body (second of three), then the field.
    const at = (...field: string[]) => [...sender.eventsPath, 1, ...field].join('.');
    return [
      { name: 'missing id', text: JSON.stringify(withoutId), detail: at(idField) },
      { name: 'id too long', text: JSON.stringify({ ...fields, [idField]: 'x'.repeat(256) }), detail: at(idField) },
      { name: 'not an object', text: '"event"', detail: at() },
    ];
  }

  it('stores the well-formed events of a batch beside a malformed one, set aside as refused for the operator (200)', async () => {
    const { test, log } = await appWithRefusals();
    const [model] = events(1);
    if (model === undefined) throw new Error('one event');
    for (const malformed of malformedCopies(model)) {
      const good = events(2);
      const ids = good.map((event) => event.id);
      const { traceId, traceparent } = traced();
      const texts = [good[0]?.text ?? '', malformed.text, good[1]?.text ?? ''];
      const response = await post(test, sender.body(texts), { traceparent });
      expect({ name: malformed.name, status: response.status, body: await response.text() }).toEqual({
        name: malformed.name,
        status: 200,
        body: '{"received":true}',
      });
      expect(await rowsPerId(sender.name, ids)).toEqual(once(ids));
      expect(await applications(sender.name, ids)).toEqual(once(ids));
      // The refused event is where the operator looks for refusals, with its reason and field.
      await log.flush(db);
      expect(await refusalsOf(test, sender.name, traceId)).toEqual([
        { status: 200, reason: 'invalid_event', detail: malformed.detail },
      ]);
      // The sender's retry (every event again) stores nothing twice and refuses the malformed one again.
      const retry = await post(test, sender.body([good[1]?.retried ?? '', malformed.text, good[0]?.retried ?? '']));
      expect(await retry.text()).toBe('{"received":true,"duplicate":true}');
      expect(await applications(sender.name, ids)).toEqual(once(ids));
    }
  });

  it('sets aside an event its handler schema refuses, naming its id and field, and stores its batch-mates (200)', async () => {
    const schema = z.looseObject({ note: z.string().max(10).optional() });
    const { test, log } = await appWithRefusals({ handlers: countingHandlers(undefined, schema) });
    const [good, refused] = events(2);
    if (good === undefined || refused === undefined) throw new Error('two events');
    const invalid = `${refused.text.slice(0, -1)},"note":${JSON.stringify('x'.repeat(11))}}`;
    const { traceId, traceparent } = traced();
    const response = await post(test, sender.body([invalid, good.text]), { traceparent });
    expect(await response.text()).toBe('{"received":true}');
    expect(await rowsPerId(sender.name, [good.id, refused.id])).toEqual({ [good.id]: 1 });
    await log.flush(db);
    expect(await refusalsOf(test, sender.name, traceId)).toEqual([
      { status: 200, reason: 'invalid_event', detail: `${refused.id}: note` },
    ]);
  });

  it("names an event its schema refuses as a whole `(the event)`, and a 400 for a batch of refused events names the first one's field", async () => {
    const schema = z
      .looseObject({ note: z.string().max(10).optional() })
      .refine((payload) => payload.note !== 'refuse me');
    const { test, log } = await appWithRefusals({ handlers: countingHandlers(undefined, schema) });
    const [good, whole, long, longer] = events(4);
    if (good === undefined || whole === undefined || long === undefined || longer === undefined) {
      throw new Error('four events');
    }
    const noted = (event: BatchEvent, note: string) => `${event.text.slice(0, -1)},"note":${JSON.stringify(note)}}`;
    const first = traced();
    const response = await post(test, sender.body([noted(whole, 'refuse me'), good.text]), {
      traceparent: first.traceparent,
    });
    expect(await response.text()).toBe('{"received":true}');
    const second = traced();
    const refusedAll = await post(test, sender.body([noted(long, 'x'.repeat(11)), noted(longer, 'y'.repeat(12))]), {
      traceparent: second.traceparent,
    });
    expect(refusedAll.status).toBe(400);
    await log.flush(db);
    expect(await refusalsOf(test, sender.name, first.traceId)).toEqual([
      { status: 200, reason: 'invalid_event', detail: `${whole.id}: (the event)` },
    ]);
    expect(await refusalsOf(test, sender.name, second.traceId)).toEqual([
      { status: 400, reason: 'invalid_payload', detail: 'note' },
    ]);
  });

  it('refuses (400) a batch none of whose events is well-formed, and stores nothing of it', async () => {
    const test = await buildTestApp(db, { enabledSenders, handlers: countingHandlers() });
    const before = (await senderRows(sql, sender.name)).length;
    const [model] = events(1);
    if (model === undefined) throw new Error('one event');
    const response = await post(test, sender.body(malformedCopies(model).map((malformed) => malformed.text)));
    expect({ status: response.status, body: await response.text() }).toEqual({
      status: 400,
      body: '{"error":"invalid_payload"}',
    });
    expect((await senderRows(sql, sender.name)).length).toBe(before);
  });

  it.each([
    ['group commit', { maxBatch: 64, lanes: 4 }],
    ['a transaction per delivery', undefined],
  ] as const)(
    'stores and applies the batch-mates of an event whose handler fails, records it `failed`, and answers 500 (%s)',
    async (_label, groupCommit) => {
      const batch = events(10);
      const ids = batch.map((event) => event.id);
      const failingId = ids[3] ?? '';
      const goodIds = ids.filter((id) => id !== failingId);
      const failing = new Set([failingId]);
      const test = await buildTestApp(db, { enabledSenders, handlers: countingHandlers(failing), groupCommit });
      const first = await post(test, sender.body(batch.map((event) => event.text)));
      // 500: every batch sender retries it (docs/senders.md, what each sender does with each answer).
      expect({ status: first.status, body: await first.text() }).toEqual({
        status: 500,
        body: '{"error":"processing_failed"}',
      });
      expect(await rowsPerId(sender.name, ids)).toEqual(once(ids));
      expect(await applications(sender.name, ids)).toEqual(once(goodIds));
      expect(await statusesOf(sender.name, ids)).toEqual({
        ...Object.fromEntries(goodIds.map((id) => [id, { status: 'completed', attempt_count: 0, last_error: null }])),
        [failingId]: { status: 'failed', attempt_count: 1, last_error: 'Error: ledger down' },
      });

      // Its retries, in the sender's retry shape: the batch-mates are duplicates, applied no second time.
      const again = await post(test, sender.body(batch.map((event) => event.retried).reverse()));
      expect(again.status).toBe(500);
      expect((await statusesOf(sender.name, [failingId]))[failingId]).toMatchObject({ attempt_count: 2 });
      failing.clear();
      const retry = await post(test, sender.body(batch.map((event) => event.retried)));
      expect(await retry.text()).toBe('{"received":true}');
      expect(await rowsPerId(sender.name, ids)).toEqual(once(ids));
      expect(await applications(sender.name, ids)).toEqual(once(ids));
      const statuses = await sql`select distinct status from webhook_events where event_id in ${sql(ids)}`;
      expect(statuses).toEqual([{ status: 'completed' }]);
    },
  );

  it("logs a failing event's batch-mates as stored (completed) and it as failed, each under the delivery's 500", async () => {
    const log = createDeliveryLog({ logger: createLogger({ level: 'silent', now: () => new Date() }) });
    const batch = events(3);
    const ids = batch.map((event) => event.id);
    const failingId = ids[1] ?? '';
    const test = await buildTestApp(db, {
      enabledSenders,
      handlers: countingHandlers(new Set([failingId])),
      deliveryLog: log,
    });
    expect((await post(test, sender.body(batch.map((event) => event.text)))).status).toBe(500);
    await log.flush(db);
    const rows = await sql<{ event_id: string; status_code: number; outcome: string }[]>`
      select event_id, status_code, outcome from webhook_deliveries
      where provider = ${sender.name} and event_id in ${sql(ids)}`;
    expect(Object.fromEntries(rows.map((row) => [row.event_id, [row.status_code, row.outcome]]))).toEqual(
      Object.fromEntries(ids.map((id) => [id, [500, id === failingId ? 'failed' : 'completed']])),
    );
  });

  it('records every failing event of a batch `failed` and stores the others, in one more transaction each', async () => {
    const batch = events(6);
    const ids = batch.map((event) => event.id);
    const failingIds = [ids[0] ?? '', ids[4] ?? ''];
    const test = await buildTestApp(db, {
      enabledSenders,
      handlers: countingHandlers(new Set(failingIds)),
      groupCommit: undefined,
    });
    expect((await post(test, sender.body(batch.map((event) => event.text)))).status).toBe(500);
    const goodIds = ids.filter((id) => !failingIds.includes(id));
    expect(await applications(sender.name, ids)).toEqual(once(goodIds));
    const statuses = await statusesOf(sender.name, ids);
    const failedRow = { status: 'failed', attempt_count: 1, last_error: 'Error: ledger down' };
    expect(failingIds.map((id) => statuses[id])).toEqual([failedRow, failedRow]);
    expect(goodIds.map((id) => statuses[id]?.status)).toEqual(goodIds.map(() => 'completed'));
    // The 500's line counts the first failing event's attempt.
    const failure = test.logs.map((line) => JSON.parse(line)).find((line) => line.outcome === 'processing_failed');
    expect(failure).toMatchObject({ msg: 'event not accepted', attempt: 1, error: 'Error: ledger down' });
  });

  it('stores each event as its own `received` row in async mode, and a retry queues nothing twice', async () => {
    const test = await buildTestApp(db, {
      enabledSenders,
      handlers: countingHandlers(),
      config: { PROCESSING_MODE: 'async' },
    });
    const batch = events(3);
    const ids = batch.map((event) => event.id);
    const response = await post(test, sender.body(batch.map((event) => event.text)));
    expect(response.status).toBe(202);
    expect(await response.text()).toBe('{"received":true,"queued":true}');
    const retry = await post(test, sender.body(batch.map((event) => event.retried).reverse()));
    expect(await retry.text()).toBe('{"received":true,"duplicate":true}');
    const rows = await sql`select event_id, status from webhook_events where event_id in ${sql(ids)}`;
    expect(rows.map((row) => row.status)).toEqual(['received', 'received', 'received']);
    expect(await rowsPerId(sender.name, ids)).toEqual(once(ids));
  });

  it('sets a malformed event aside in async mode too, and queues its batch-mates (202)', async () => {
    const { test, log } = await appWithRefusals({ config: { PROCESSING_MODE: 'async' } });
    const [model, ...good] = events(3);
    const [malformed] = model === undefined ? [] : malformedCopies(model);
    if (malformed === undefined || good.length !== 2) throw new Error('three events');
    const ids = good.map((event) => event.id);
    const { traceId, traceparent } = traced();
    const texts = [good[0]?.text ?? '', malformed.text, good[1]?.text ?? ''];
    const response = await post(test, sender.body(texts), { traceparent });
    expect({ status: response.status, body: await response.text() }).toEqual({
      status: 202,
      body: '{"received":true,"queued":true}',
    });
    expect(await statusesOf(sender.name, ids)).toEqual(
      Object.fromEntries(ids.map((id) => [id, { status: 'received', attempt_count: 0, last_error: null }])),
    );
    await log.flush(db);
    expect(await refusalsOf(test, sender.name, traceId)).toEqual([
      { status: 202, reason: 'invalid_event', detail: malformed.detail },
    ]);
  });

  it('stores and applies an id repeated inside one delivery once, and answers it as one new event', async () => {
    const test = await buildTestApp(db, { enabledSenders, handlers: countingHandlers() });
    const [repeated, other] = events(2);
    if (repeated === undefined || other === undefined) throw new Error('two events');
    const body = sender.body([repeated.text, other.text, repeated.retried]);
    const response = await post(test, body);
    expect({ status: response.status, body: await response.text() }).toEqual({
      status: 200,
      body: '{"received":true}',
    });
    const ids = [repeated.id, other.id];
    expect(await rowsPerId(sender.name, ids)).toEqual(once(ids));
    expect(await applications(sender.name, ids)).toEqual(once(ids));
  });

  it('reads a member repeated inside an event as JSON.parse does: the last one names the event', async () => {
    const test = await buildTestApp(db, { enabledSenders, handlers: countingHandlers() });
    const [first, last] = events(2);
    if (first === undefined || last === undefined) throw new Error('two events');
    const fields = JSON.parse(first.text) as Record<string, unknown>;
    const idField = Object.keys(fields).find((key) => String(fields[key]) === first.id) ?? '';
    const lastId = (JSON.parse(last.text) as Record<string, unknown>)[idField];
    // The event's id twice: first its own, then another event's.
    const text = `${first.text.slice(0, -1)},${JSON.stringify(idField)}:${JSON.stringify(lastId)}}`;
    expect(String((JSON.parse(text) as Record<string, unknown>)[idField])).toBe(last.id);
    expect((await post(test, sender.body([text]))).status).toBe(200);
    expect(await rowsPerId(sender.name, [first.id, last.id])).toEqual({ [last.id]: 1 });
    const [row] = await sql<{ payload: unknown }[]>`select payload from webhook_events
      where provider = ${sender.name} and event_id = ${last.id}`;
    expect(row?.payload).toEqual(JSON.parse(text));
  });

  it("cuts a body whose strings hold escaped quotes, brackets and commas into each event's own text", async () => {
    const test = await buildTestApp(db, { enabledSenders, handlers: countingHandlers() });
    const batch = events(TRICKY_STRINGS.length);
    const texts = batch.map((event, n) => `${event.text.slice(0, -1)},"note":${JSON.stringify(TRICKY_STRINGS[n])}}`);
    const body = sender.body(texts);
    // Each event's text exactly as it stands in the body: what is stored as its payload.
    expect(arrayElementTexts(body, sender.eventsPath)).toEqual(texts);
    expect((await post(test, body)).status).toBe(200);
    for (const [n, event] of batch.entries()) {
      const [row] = await sql<{ payload: unknown }[]>`select payload from webhook_events
        where provider = ${sender.name} and event_id = ${event.id}`;
      expect(row?.payload).toEqual(JSON.parse(texts[n] ?? ''));
    }
  });

  it('answers an empty batch 200 and stores nothing', async () => {
    const test = await buildTestApp(db, { enabledSenders, handlers: countingHandlers() });
    const before = (await senderRows(sql, sender.name)).length;
    const response = await post(test, sender.body([]));
    expect(await response.text()).toBe('{"received":true}');
    expect((await senderRows(sql, sender.name)).length).toBe(before);
  });

  it.each([
    ['group commit', { maxBatch: 64, lanes: 4 }],
    ['a transaction per delivery', undefined],
  ] as const)('applies each event once when the same batch arrives twice at once (%s)', async (_label, groupCommit) => {
    const parties = 2;
    const test = await buildTestApp(db, {
      enabledSenders,
      handlers: countingHandlers(),
      beforeStore: barrier(parties),
      groupCommit,
    });
    const batch = events(5);
    const ids = batch.map((event) => event.id);
    const bodies = [sender.body(batch.map((event) => event.text)), sender.body(batch.map((e) => e.retried).reverse())];
    const answers = await Promise.all(bodies.map(async (body) => (await post(test, body)).text()));
    expect(answers.sort()).toEqual(['{"received":true,"duplicate":true}', '{"received":true}']);
    expect(await rowsPerId(sender.name, ids)).toEqual(once(ids));
    expect(await applications(sender.name, ids)).toEqual(once(ids));
  });
});
