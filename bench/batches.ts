// `npx tsx bench/batches.ts`: what one delivery of a batch sender costs (HubSpot, LINE, SendGrid,
// GoCardless, Twilio Event Streams), each event stored in a row of its own. For each sender: the size
// of a realistic event, how many fit in MAX_BODY_BYTES (262144), and the time from the request to the
// answer (signature, parse, per-event validation, one insert statement, commit) for 1,000 events, or
// as many as fit, with no handler (rows `ignored`) and with a handler that runs one statement per
// event; both against HANDLER_DEADLINE_MS (5000). Signed with node:crypto, not the service's code.
// Uses BENCH_DATABASE_URL when set (a fresh database on it), else an embedded server.
import { createHash, createHmac, generateKeyPairSync, randomUUID, sign } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'drizzle-orm';
import { z } from 'zod';
import { createApp } from '../src/app.ts';
import { connectDatabase } from '../src/db/client.ts';
import { expectedMigration } from '../src/db/migrations.ts';
import { defineHandler, type HandlerMap } from '../src/domain/handlers.ts';
import { createLogger } from '../src/lib/logger.ts';
import { labelBounds, Metrics } from '../src/lib/metrics.ts';
import { defaultGaugeSources } from '../src/ops/metrics-routes.ts';
import { enableProviders } from '../src/providers/registry.ts';
import { freshDatabase } from './lib/database.ts';
import { round } from './lib/stats.ts';

const MAX_BODY_BYTES = 262_144;
const DEADLINE_MS = 5000;
const EVENTS = 1000;
const RUNS = Number(process.env.BENCH_BATCH_RUNS ?? 5);
const URL_SIGNED = 'https://hooks.example.com/webhooks/';

const hmac = (hash: string, key: string, text: string, encoding: 'hex' | 'base64') =>
  createHmac(hash, key).update(text).digest(encoding);
const ecdsa = generateKeyPairSync('ec', { namedCurve: 'P-256' });

interface Sender {
  name: string;
  /** One realistic event, with a fresh id. */
  event(now: number): object;
  body(events: readonly string[]): string;
  headers(body: string, now: number): Record<string, string>;
  type: string;
}

const iso = (now: number) => new Date(now * 1000).toISOString();
const secret = 'bench-secret';
const senders: readonly Sender[] = [
  {
    name: 'hubspot',
    type: 'contact.propertyChange',
    event: (now) => ({
      eventId: Math.floor(Math.random() * 2 ** 52),
      subscriptionId: 2_345_678,
      portalId: 62_515,
      appId: 1_160_452,
      occurredAt: now * 1000,
      subscriptionType: 'contact.propertyChange',
      attemptNumber: 0,
      objectId: 123_456_789_012,
      propertyName: 'lifecyclestage',
      propertyValue: 'customer',
      changeSource: 'CRM_UI',
      sourceId: 'userId:12345678',
    }),
    body: (events) => `[${events.join(',')}]`,
    headers: (body, now) => ({
      'x-hubspot-request-timestamp': String(now * 1000),
      'x-hubspot-signature-v3': hmac('sha256', secret, `POST${URL_SIGNED}hubspot${body}${now * 1000}`, 'base64'),
    }),
  },
  {
    name: 'line',
    type: 'message',
    event: (now) => ({
      type: 'message',
      message: { type: 'text', id: '468789577898262530', quoteToken: 'q3Plxr4AgKd...', text: 'Hello, world' },
      webhookEventId: `01${randomUUID().replaceAll('-', '').toUpperCase().slice(0, 24)}`,
      deliveryContext: { isRedelivery: false },
      timestamp: now * 1000,
      source: { type: 'user', userId: 'U4af4980629b4d1c8f0c5d2c5e4a5e9a1' },
      replyToken: 'b60d432864f44d079f6d8efe86cf404b',
      mode: 'active',
    }),
    body: (events) => `{"destination":"Uxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx","events":[${events.join(',')}]}`,
    headers: (body) => ({ 'x-line-signature': hmac('sha256', secret, body, 'base64') }),
  },
  {
    name: 'sendgrid',
    type: 'delivered',
    event: (now) => ({
      email: 'example.recipient@example.com',
      timestamp: now,
      'smtp-id': '<14c5d75ce93.dfd.64b469@ismtpd-555>',
      event: 'delivered',
      category: ['cat facts'],
      sg_event_id: randomUUID().replaceAll('-', ''),
      sg_message_id: '14c5d75ce93.dfd.64b469.filter0001.16648.5515E0B88.0',
      response: '250 OK',
      ip: '168.1.1.1',
      tls: 1,
      marketing_campaign_id: 12_345,
    }),
    body: (events) => `[${events.join(',')}]`,
    headers: (body, now) => ({
      'x-twilio-email-event-webhook-timestamp': String(now),
      'x-twilio-email-event-webhook-signature': sign('sha256', Buffer.from(`${now}${body}`), ecdsa.privateKey).toString(
        'base64',
      ),
    }),
  },
  {
    name: 'gocardless',
    type: 'payments.confirmed',
    event: (now) => ({
      id: `EV${randomUUID().replaceAll('-', '').slice(0, 12).toUpperCase()}`,
      created_at: iso(now),
      resource_type: 'payments',
      action: 'confirmed',
      links: { payment: 'PM00017EXAMPLE', organisation: 'OR0000EXAMPLE' },
      details: {
        origin: 'gocardless',
        cause: 'payment_confirmed',
        description: 'Enough time has passed since the payment was submitted for the banks to return an error.',
        bank_account_id: 'BA0000EXAMPLE',
      },
      metadata: {},
      resource_metadata: { order_dispatch_date: '2024-06-01' },
    }),
    body: (events) => `{"events":[${events.join(',')}],"meta":{"webhook_id":"WB${randomUUID().slice(0, 12)}"}}`,
    headers: (body) => ({ 'webhook-signature': hmac('sha256', secret, body, 'hex') }),
  },
  {
    name: 'twilio',
    type: 'com.twilio.messaging.message.delivered',
    event: (now) => ({
      specversion: '1.0',
      type: 'com.twilio.messaging.message.delivered',
      source:
        '/2010-04-01/Accounts/ACxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx/Messages/SMxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx.json',
      id: `EZ${randomUUID().replaceAll('-', '')}`,
      dataschema: 'https://events-schemas.twilio.com/Messaging.MessageStatus/2',
      datacontenttype: 'application/json',
      time: iso(now),
      data: {
        messageSid: 'SMxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx',
        accountSid: 'ACxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx',
        messagingServiceSid: 'MGxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx',
        to: '+15017122661',
        from: '+15557122661',
        timestamp: iso(now),
        eventName: 'com.twilio.messaging.message.delivered',
        messageStatus: 'DELIVERED',
        errorCode: null,
        numSegments: 1,
      },
    }),
    body: (events) => `[${events.join(',')}]`,
    headers: (body) => ({
      'x-twilio-signature': hmac(
        'sha1',
        secret,
        `${URL_SIGNED}twilio?bodySHA256=${createHash('sha256').update(body).digest('hex')}`,
        'base64',
      ),
    }),
  },
];

/** A handler that runs one statement per event in the delivery's transaction: the least a real one does. */
const oneStatement = defineHandler({
  schema: z.looseObject({}),
  apply: async ({ tx }) => {
    await tx.execute(sql`select 1`);
  },
});
const handled: HandlerMap = Object.fromEntries(senders.map((sender) => [sender.name, { [sender.type]: oneStatement }]));

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;

const database = await freshDatabase(mkdtempSync(join(tmpdir(), 'bench-batches-')));
const handle = connectDatabase({ url: database.url, maxConnections: 10, statementTimeoutMs: DEADLINE_MS });
try {
  const enabledProviders = await enableProviders(
    Object.fromEntries(senders.filter((s) => s.name !== 'sendgrid').map((s) => [s.name, [secret]])),
    {
      publicKeys: { sendgrid: [ecdsa.publicKey.export({ format: 'der', type: 'spki' }).toString('base64')] },
      urls: { hubspot: `${URL_SIGNED}hubspot`, twilio: `${URL_SIGNED}twilio` },
    },
  );
  const appWith = (handlers: HandlerMap) =>
    createApp({
      db: handle.db,
      enabledProviders,
      handlers,
      metrics: new Metrics(labelBounds(enabledProviders.keys(), handlers)),
      gaugeSources: defaultGaugeSources,
      clock: () => Date.now(),
      newId: () => randomUUID(),
      logger: createLogger({ level: 'warn', now: () => new Date(), write: () => {} }),
      expectedMigration,
      groupCommit: { maxBatch: 64, lanes: 4 },
      config: {
        HANDLER_DEADLINE_MS: DEADLINE_MS,
        MAX_BODY_BYTES,
        WEBHOOK_TOLERANCE_SECONDS: 300,
        METRICS_TOKEN: undefined,
        PROCESSING_MODE: 'sync',
        INBOX_MAX_BACKLOG: 10_000,
      },
    });
  const apps = { ignored: appWith({}), handled: appWith(handled) };
  const rows: Record<string, string | number>[] = [];
  for (const sender of senders) {
    const now = Math.floor(Date.now() / 1000);
    const eventBytes = Buffer.byteLength(JSON.stringify(sender.event(now)));
    const envelope = Buffer.byteLength(sender.body([]));
    const fit = Math.floor((MAX_BODY_BYTES - envelope + 1) / (eventBytes + 1));
    const count = Math.min(EVENTS, fit);
    const timings: Record<keyof typeof apps, number[]> = { ignored: [], handled: [] };
    let bodyBytes = 0;
    for (const [mode, app] of Object.entries(apps) as [keyof typeof apps, (typeof apps)['ignored']][]) {
      for (let run = 0; run < RUNS; run += 1) {
        const at = Math.floor(Date.now() / 1000);
        const body = sender.body(Array.from({ length: count }, () => JSON.stringify(sender.event(at))));
        bodyBytes = Buffer.byteLength(body);
        const started = performance.now();
        const response = await app.request(`/webhooks/${sender.name}`, {
          method: 'POST',
          body,
          headers: { 'content-type': 'application/json', ...sender.headers(body, at) },
        });
        const text = await response.text();
        timings[mode].push(performance.now() - started);
        if (response.status !== 200) throw new Error(`${sender.name}: ${response.status} ${text}`);
      }
    }
    rows.push({
      sender: sender.name,
      event_bytes: eventBytes,
      fit_in_262144: fit,
      events_sent: count,
      body_bytes: bodyBytes,
      ms_no_handler: round(median(timings.ignored), 1),
      ms_one_statement_each: round(median(timings.handled), 1),
    });
  }
  // A Markdown table, as docs/benchmarks.md shows it.
  const columns = Object.keys(rows[0] ?? {});
  console.log(`batch deliveries, median of ${RUNS} runs each, database ${database.kind}\n`);
  console.log(`| ${columns.join(' | ')} |\n|${columns.map(() => ' --- |').join('')}`);
  for (const row of rows) console.log(`| ${columns.map((column) => row[column]).join(' | ')} |`);
} finally {
  await handle.close();
  await database.dispose();
}
