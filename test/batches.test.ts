// Senders that post several events in one delivery (HubSpot, LINE, SendGrid, GoCardless, Twilio
// Event Streams): each event is a row of its own under its own id and type, and each is applied
// once, whatever shape the sender's retry takes (HubSpot raises `attemptNumber`, LINE marks
// `isRedelivery`, SendGrid and Twilio re-batch in another order or a subset, GoCardless re-sends the
// events under a new `webhook_id`). A delivery is stored whole or not at all.
import { sql as drizzleSql } from 'drizzle-orm';
import { beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineHandler, type HandlerMap } from '../src/domain/handlers.ts';
import { arrayElementTexts } from '../src/lib/json.ts';
import { buildTestApp, type TestApp } from './helpers/app.ts';
import { useTestDatabase } from './helpers/database.ts';
import { barrier, providerRows } from './helpers/facts.ts';
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
const enabledProviders = await enableNamedSenders();

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
function countingHandler(failOn?: Set<string>) {
  return defineHandler({
    schema: z.looseObject({}),
    async apply({ tx, event }) {
      if (failOn?.has(event.eventId)) throw new Error('ledger down');
      await tx.execute(drizzleSql`insert into batch_applications (provider, event_id, n)
        values (${event.provider}, ${event.eventId}, 1)
        on conflict (provider, event_id) do update set n = batch_applications.n + 1`);
    },
  });
}

/** Every batch sender's event type handled by the counting handler. */
function countingHandlers(failOn?: Set<string>): HandlerMap {
  const handler = countingHandler(failOn);
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

describe.each(batchSenders.map((sender) => [sender.name, sender] as const))('%s', (_name, sender) => {
  const signer = named(sender.name);
  const post = (test: TestApp, body: string) => {
    const now = nowSeconds();
    test.setNow(now * 1000);
    return test.request(`/webhooks/${sender.name}`, {
      method: 'POST',
      body,
      headers: signer.headers({ body, eventType: '' }, signer.credentials[0], now),
    });
  };
  const events = (count: number) => Array.from({ length: count }, () => sender.newEvent(nowSeconds()));

  it('stores and applies each event once: first delivery, its retry, a reordered subset', async () => {
    const test = await buildTestApp(db, { enabledProviders, handlers: countingHandlers() });
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
    const test = await buildTestApp(db, { enabledProviders, handlers: countingHandlers() });
    const [seen, fresh] = [events(2), events(2)];
    expect((await post(test, sender.body(seen.map((event) => event.text)))).status).toBe(200);
    const mixed = [fresh[0], seen[1], fresh[1], seen[0]].flatMap((event) => (event ? [event.retried] : []));
    const response = await post(test, sender.body(mixed));
    expect(await response.text()).toBe('{"received":true}');
    const ids = [...seen, ...fresh].map((event) => event.id);
    expect(await rowsPerId(sender.name, ids)).toEqual(once(ids));
    expect(await applications(sender.name, ids)).toEqual(once(ids));
  });

  it('refuses a batch with one malformed event (400) and stores nothing of it', async () => {
    const test = await buildTestApp(db, { enabledProviders, handlers: countingHandlers() });
    const before = (await providerRows(sql, sender.name)).length;
    const good = events(2);
    const [one] = events(1);
    if (one === undefined) throw new Error('one event');
    const event = JSON.parse(one.text) as Record<string, unknown>;
    const idField = Object.keys(event).find((key) => event[key] === one.id || String(event[key]) === one.id) ?? '';
    const { [idField]: _dropped, ...withoutId } = event;
    const malformed = {
      'missing id': JSON.stringify(withoutId),
      'id too long': JSON.stringify({ ...event, [idField]: 'x'.repeat(256) }),
      'not an object': '"event"',
    };
    for (const [name, text] of Object.entries(malformed)) {
      const response = await post(test, sender.body([...good.map((e) => e.text), text]));
      expect({ name, status: response.status, body: await response.text() }).toEqual({
        name,
        status: 400,
        body: '{"error":"invalid_payload"}',
      });
    }
    expect((await providerRows(sql, sender.name)).length).toBe(before);
    expect(
      await applications(
        sender.name,
        good.map((e) => e.id),
      ),
    ).toEqual({});
  });

  it('stores a whole delivery or nothing: a failing handler rolls back its batch, the retry applies each once', async () => {
    const batch = events(3);
    const ids = batch.map((event) => event.id);
    const failing = new Set([ids[1] ?? '']);
    const test = await buildTestApp(db, { enabledProviders, handlers: countingHandlers(failing) });
    const first = await post(test, sender.body(batch.map((event) => event.text)));
    expect(first.status).toBe(500);
    // Only the failing event's row is recorded (`failed`); the others were rolled back with it.
    expect(await rowsPerId(sender.name, ids)).toEqual({ [ids[1] ?? '']: 1 });
    expect(await applications(sender.name, ids)).toEqual({});

    failing.clear();
    const retry = await post(test, sender.body(batch.map((event) => event.retried)));
    expect(await retry.text()).toBe('{"received":true}');
    expect(await rowsPerId(sender.name, ids)).toEqual(once(ids));
    expect(await applications(sender.name, ids)).toEqual(once(ids));
    const statuses = await sql`select distinct status from webhook_events where event_id in ${sql(ids)}`;
    expect(statuses).toEqual([{ status: 'completed' }]);
  });

  it('stores each event as its own `received` row in async mode, and a retry queues nothing twice', async () => {
    const test = await buildTestApp(db, {
      enabledProviders,
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

  it('stores and applies an id repeated inside one delivery once, and answers it as one new event', async () => {
    const test = await buildTestApp(db, { enabledProviders, handlers: countingHandlers() });
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
    const test = await buildTestApp(db, { enabledProviders, handlers: countingHandlers() });
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
    const test = await buildTestApp(db, { enabledProviders, handlers: countingHandlers() });
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
    const test = await buildTestApp(db, { enabledProviders, handlers: countingHandlers() });
    const before = (await providerRows(sql, sender.name)).length;
    const response = await post(test, sender.body([]));
    expect(await response.text()).toBe('{"received":true}');
    expect((await providerRows(sql, sender.name)).length).toBe(before);
  });

  it.each([
    ['group commit', { maxBatch: 64, lanes: 4 }],
    ['a transaction per delivery', undefined],
  ] as const)('applies each event once when the same batch arrives twice at once (%s)', async (_label, groupCommit) => {
    const parties = 2;
    const test = await buildTestApp(db, {
      enabledProviders,
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
