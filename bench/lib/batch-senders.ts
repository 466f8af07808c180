// bench/batches.ts's batch senders (HubSpot, LINE, SendGrid, GoCardless, Twilio Event Streams): one
// realistic event each, the envelope around a batch of them and the headers each signs it with
// (node:crypto, not the service's code). Kept apart from the bench so test/bench-inputs.test.ts posts
// the very deliveries the bench times through the service.
import { createHash, createHmac, generateKeyPairSync, randomUUID, sign } from 'node:crypto';
import { enableSenders } from '../../src/senders/registry.ts';

const URL_SIGNED = 'https://hooks.example.com/webhooks/';

export interface BatchSender {
  name: string;
  /** One realistic event, with a fresh id. */
  event(now: number): object;
  body(events: readonly string[]): string;
  headers(body: string, now: number): Record<string, string>;
  /** The event type every event has, for a handler bound to it. */
  type: string;
}

const hmac = (hash: string, key: string, text: string, encoding: 'hex' | 'base64') =>
  createHmac(hash, key).update(text).digest(encoding);
const ecdsa = generateKeyPairSync('ec', { namedCurve: 'P-256' });

const iso = (now: number) => new Date(now * 1000).toISOString();
const secret = 'bench-secret';
export const batchSenders: readonly BatchSender[] = [
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

/** Every batch sender enabled in the service, configured as the bench signs. */
export function enabledBatchSenders(): ReturnType<typeof enableSenders> {
  return enableSenders(
    Object.fromEntries(batchSenders.filter((s) => s.name !== 'sendgrid').map((s) => [s.name, [secret]])),
    {
      publicKeys: { sendgrid: [ecdsa.publicKey.export({ format: 'der', type: 'spki' }).toString('base64')] },
      urls: { hubspot: `${URL_SIGNED}hubspot`, twilio: `${URL_SIGNED}twilio` },
    },
  );
}
