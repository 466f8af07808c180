// The named senders as the tests play them: each signs with node:crypto following the sender's
// documentation, and carries an oracle that is not ours, the sender's own SDK (or, where it has
// none, its documentation's example) verifying what was signed. A signing mistake here shows up as
// an oracle failure; a verifying mistake of ours as a route failure.

import {
  createHash,
  createHmac,
  generateKeyPairSync,
  type KeyObject,
  randomBytes,
  randomUUID,
  sign,
} from 'node:crypto';
import { readFileSync } from 'node:fs';
import EasyPost from '@easypost/api';
import { Signature as HubSpotSignature } from '@hubspot/api-client';
import { validateSignature as lineValidateSignature } from '@line/bot-sdk';
import { LinearWebhookClient } from '@linear/sdk/webhooks';
import { Mux } from '@mux/mux-node';
import { verifyWebhookSignature as notionVerify } from '@notionhq/client';
import { Paddle } from '@paddle/paddle-node-sdk';
import { webhooks as polarWebhooks } from '@polar-sh/sdk/2027-01';
import { isValidSignature as isValidSanitySignature } from '@sanity/webhook';
import { EventWebhook } from '@sendgrid/eventwebhook';
import { WorkOS } from '@workos-inc/node';
import { AwsLambdaReceiver } from '@zoom/rivet/users';
import { WebhooksManager } from 'box-node-sdk/lib/managers/webhooks';
import coinbase from 'coinbase-commerce-node';
import { verifyKey as discordVerifyKey } from 'discord-interactions';
import { parse as gocardlessParse } from 'gocardless-nodejs/webhooks';
import OpenAI from 'openai';
import Razorpay from 'razorpay';
import { validateWebhook as validateReplicateWebhook } from 'replicate';
import { WebhooksHelper as SquareWebhooks } from 'square';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { TelnyxWebhook } from 'telnyx/lib/webhooks';
import twilioWebhooks from 'twilio/lib/webhooks/webhooks';
import { WebflowClient } from 'webflow-api';
import { type EnabledSender, enableSenders } from '../../src/senders/registry.ts';
import { uniqueId } from './acme.ts';

/** One key of a sender: what is configured here, and how the sender signs with it. */
export interface Credential {
  /** The secret, or the public key as the sender's dashboard shows it. */
  configured: string;
  /** The signature over `content`, encoded as the sender puts it in its header (no prefix). */
  sign(content: string): string;
}

/** What is sent, and what it must be stored as. */
export interface Outgoing {
  body: string;
  /** The id the event is stored under; absent where the body's SHA-256 is the id. */
  eventId?: string;
  eventType: string;
  /** A header id the signature does not cover, backed by the body digest. */
  deliveryId?: string;
  /** One event of a batch: its own JSON text, what its row stores (else the body is). */
  payload?: string;
}

/** A publisher's own example: a secret, the exact body, the headers it signed it with. */
export interface Vector {
  secret: string;
  body: string;
  headers: Record<string, string>;
  /** The same body under a signature the publisher's tests expect refused. */
  refused: Record<string, string>;
  eventId: string;
  eventType: string;
}

export interface NamedSender {
  name: string;
  /** How the suite names it, where one sender is played two ways (GitLab's two tokens). */
  label?: string;
  /** It sends its secret itself and signs nothing: a changed body is still authentic. */
  token?: true;
  /** Which variable enables it: `<NAME>_WEBHOOK_SECRET` or `<NAME>_WEBHOOK_PUBLIC_KEY`. */
  variable: 'secret' | 'publicKey';
  /** [current, previous]: both configured, as during a rotation. */
  credentials: readonly [Credential, Credential];
  /** A well-formed key that is not configured. */
  stranger: Credential;
  /** The signed public URL, for senders that sign it. */
  url?: string;
  /** Whether a time is signed, so the tolerance applies. */
  signsTime: boolean;
  /** Where the stored id comes from; `digest`: the body's SHA-256; `event`: each event's of a batch. */
  id: 'payload' | 'signed-header' | 'unsigned-header' | 'digest' | 'event';
  /** The headers that carry the signature (or token), all removed for the missing-signature case. */
  signatureHeaders: readonly string[];
  /** A new event signed at `nowSeconds`, when the time is in the body (Linear). */
  newEvent(nowSeconds: number): Outgoing;
  headers(outgoing: Outgoing, credential: Credential, nowSeconds: number): Record<string, string>;
  /** The publisher's own verdict on a signed delivery: true when its SDK accepts it. */
  oracle?(outgoing: Outgoing, headers: Record<string, string>, credential: Credential): Promise<boolean>;
  /** Where the publisher has no SDK that verifies: the example its own library's tests publish. */
  vector?: Vector;
  /** What the oracle is, as docs/senders.md names it. */
  oracleName: string;
}

const JSON_TYPE = { 'content-type': 'application/json' };

// One event of each batch sender, as it writes them; test/batches.test.ts sends several in one body.
export const hubspotEvent = (now: number) => ({
  eventId: Number.parseInt(randomBytes(4).toString('hex'), 16),
  subscriptionId: 1,
  portalId: 1,
  occurredAt: now * 1000,
  subscriptionType: 'contact.creation',
  attemptNumber: 0,
  objectId: 123,
});
export const lineEvent = (now: number) => ({
  type: 'follow',
  mode: 'active',
  timestamp: now * 1000,
  webhookEventId: uniqueId('01'),
  deliveryContext: { isRedelivery: false },
});
export const lineBody = (events: readonly string[]) => `{"destination":"U0001","events":[${events.join(',')}]}`;
export const sendgridEvent = (now: number) => ({
  email: 'a@example.com',
  timestamp: now,
  event: 'delivered',
  sg_event_id: uniqueId('sg'),
  sg_message_id: 'm1',
});
export const gocardlessEvent = (now: number) => ({
  id: uniqueId('EV'),
  action: 'confirmed',
  resource_type: 'payments',
  created_at: iso(now),
  links: { payment: uniqueId('PM') },
});
export const gocardlessBody = (events: readonly string[]) =>
  `{"events":[${events.join(',')}],"meta":{"webhook_id":"${uniqueId('WB')}"}}`;
export const twilioEvent = (now: number) => ({
  specversion: '1.0',
  type: 'com.twilio.messaging.inbound-message.received',
  source: '/2010-04-01/Accounts/AC1/Messages/SM1.json',
  id: uniqueId('EZ'),
  dataschema: 'https://events-schemas.twilio.com/Messaging.InboundMessageV1/1',
  datacontenttype: 'application/json',
  time: iso(now),
  data: {},
});

/** A batch carrying one event, stored under that event's id and type with its own text. */
function batchOfOne(event: object, eventId: string, eventType: string, body: (payload: string) => string): Outgoing {
  const payload = JSON.stringify(event);
  return { body: body(payload), eventId, eventType, payload };
}
const iso = (seconds: number) => new Date(seconds * 1000).toISOString();
export const sha256Hex = (text: string) => createHash('sha256').update(text).digest('hex');

/** Resolves true, or false when `check` throws or rejects: SDKs that throw on a bad signature. */
export async function accepts(check: () => unknown): Promise<boolean> {
  try {
    const result = await check();
    return result !== false;
  } catch {
    return false;
  }
}

export function hmacCredential(
  configured: string,
  encoding: 'hex' | 'base64',
  key: string | Buffer = configured,
  hash: 'sha256' | 'sha1' = 'sha256',
): Credential {
  return { configured, sign: (content) => createHmac(hash, key).update(content).digest(encoding) };
}

const secretOf = (prefix: string) => `${prefix}${randomBytes(18).toString('hex')}`;

export function hmacCredentials(prefix: string, encoding: 'hex' | 'base64') {
  const make = () => hmacCredential(secretOf(prefix), encoding);
  return { credentials: [make(), make()] as const, stranger: make() };
}

/** A `whsec_` secret and its key bytes: Standard Webhooks' form (OpenAI). */
function whsecCredential(): Credential {
  const key = randomBytes(32);
  return hmacCredential(`whsec_${key.toString('base64')}`, 'base64', key);
}

function ed25519Credential(encoding: 'hex' | 'base64'): Credential & { privateKey: KeyObject } {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const raw = Buffer.from(publicKey.export({ format: 'jwk' }).x ?? '', 'base64url');
  return {
    configured: raw.toString(encoding),
    privateKey,
    sign: (content) => sign(null, Buffer.from(content), privateKey).toString(encoding),
  };
}

function p256Credential(): Credential {
  const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  return {
    configured: publicKey.export({ format: 'der', type: 'spki' }).toString('base64'),
    // node:crypto signs ECDSA as DER, as SendGrid does.
    sign: (content) => sign('sha256', Buffer.from(content), privateKey).toString('base64'),
  };
}

function standardLike(credential: Credential, outgoing: Outgoing, nowSeconds: number, id: string) {
  return {
    'webhook-id': id,
    'webhook-timestamp': String(nowSeconds),
    'webhook-signature': `v1,${credential.sign(`${id}.${nowSeconds}.${outgoing.body}`)}`,
  };
}

const paddleSecrets = hmacCredentials('pdl_ntfset_', 'hex');
const paddle: NamedSender = {
  name: 'paddle',
  variable: 'secret',
  ...paddleSecrets,
  signsTime: true,
  id: 'payload',
  signatureHeaders: ['paddle-signature'],
  oracleName: '`@paddle/paddle-node-sdk` `webhooks.isSignatureValid`',
  newEvent(now) {
    const eventId = uniqueId('evt');
    const body = {
      event_id: eventId,
      event_type: 'transaction.completed',
      occurred_at: iso(now),
      data: { id: 'txn_1' },
    };
    return { body: JSON.stringify(body), eventId, eventType: 'transaction.completed' };
  },
  headers: (outgoing, credential, now) => ({
    ...JSON_TYPE,
    'paddle-signature': `ts=${now};h1=${credential.sign(`${now}:${outgoing.body}`)}`,
  }),
  oracle: (outgoing, headers, credential) =>
    new Paddle('pdl_sdbx_apikey_test').webhooks.isSignatureValid(
      outgoing.body,
      credential.configured,
      headers['paddle-signature'] ?? '',
    ),
};

const mux: NamedSender = {
  name: 'mux',
  variable: 'secret',
  ...hmacCredentials('mux_', 'hex'),
  signsTime: true,
  id: 'payload',
  signatureHeaders: ['mux-signature'],
  oracleName: '`@mux/mux-node` `webhooks.verifySignature`',
  newEvent(now) {
    const eventId = randomUUID();
    const body = { type: 'video.asset.ready', id: eventId, created_at: iso(now), data: { id: 'asset_1' } };
    return { body: JSON.stringify(body), eventId, eventType: 'video.asset.ready' };
  },
  headers: (outgoing, credential, now) => ({
    ...JSON_TYPE,
    'mux-signature': `t=${now},v1=${credential.sign(`${now}.${outgoing.body}`)}`,
  }),
  oracle: (outgoing, headers, credential) =>
    accepts(() =>
      new Mux({ tokenId: 'id', tokenSecret: 'secret' }).webhooks.verifySignature(
        outgoing.body,
        headers,
        credential.configured,
      ),
    ),
};

const workos: NamedSender = {
  name: 'workos',
  variable: 'secret',
  ...hmacCredentials('wos_', 'hex'),
  signsTime: true,
  id: 'payload',
  signatureHeaders: ['workos-signature'],
  oracleName: '`@workos-inc/node` `webhooks.verifyHeader`',
  newEvent(now) {
    const eventId = uniqueId('event');
    const body = { id: eventId, event: 'user.created', data: { id: 'user_1' }, created_at: iso(now) };
    return { body: JSON.stringify(body), eventId, eventType: 'user.created' };
  },
  headers: (outgoing, credential, now) => {
    const milliseconds = now * 1000;
    return {
      ...JSON_TYPE,
      'workos-signature': `t=${milliseconds}, v1=${credential.sign(`${milliseconds}.${outgoing.body}`)}`,
    };
  },
  oracle: (outgoing, headers, credential) =>
    accepts(() =>
      new WorkOS('sk_test_oracle').webhooks.verifyHeader({
        payload: outgoing.body,
        sigHeader: headers['workos-signature'] ?? '',
        secret: credential.configured,
      }),
    ),
};

const sendgrid: NamedSender = {
  name: 'sendgrid',
  variable: 'publicKey',
  credentials: [p256Credential(), p256Credential()],
  stranger: p256Credential(),
  signsTime: true,
  id: 'event',
  signatureHeaders: ['x-twilio-email-event-webhook-signature'],
  oracleName: '`@sendgrid/eventwebhook` `verifySignature`',
  newEvent(now) {
    const event = sendgridEvent(now);
    return batchOfOne(event, event.sg_event_id, event.event, (payload) => `[${payload}]`);
  },
  headers: (outgoing, credential, now) => ({
    ...JSON_TYPE,
    'x-twilio-email-event-webhook-timestamp': String(now),
    'x-twilio-email-event-webhook-signature': credential.sign(`${now}${outgoing.body}`),
  }),
  async oracle(outgoing, headers, credential) {
    const webhook = new EventWebhook();
    return webhook.verifySignature(
      webhook.convertPublicKeyToECDSA(credential.configured),
      outgoing.body,
      headers['x-twilio-email-event-webhook-signature'] ?? '',
      headers['x-twilio-email-event-webhook-timestamp'] ?? '',
    );
  },
};

export const discordKeys = [ed25519Credential('hex'), ed25519Credential('hex')] as const;
const discord: NamedSender = {
  name: 'discord',
  variable: 'publicKey',
  credentials: discordKeys,
  stranger: ed25519Credential('hex'),
  signsTime: true,
  id: 'digest',
  signatureHeaders: ['x-signature-ed25519'],
  oracleName: '`discord-interactions` `verifyKey`',
  newEvent(now) {
    const event = { type: 'APPLICATION_AUTHORIZED', timestamp: iso(now), data: { user: { id: uniqueId('u') } } };
    return { body: JSON.stringify({ version: 1, application_id: '1', type: 1, event }), eventType: event.type };
  },
  headers: (outgoing, credential, now) => ({
    ...JSON_TYPE,
    'x-signature-timestamp': String(now),
    'x-signature-ed25519': credential.sign(`${now}${outgoing.body}`),
  }),
  oracle: (outgoing, headers, credential) =>
    discordVerifyKey(
      outgoing.body,
      headers['x-signature-ed25519'] ?? '',
      headers['x-signature-timestamp'] ?? '',
      credential.configured,
    ),
};

const coinbaseSender: NamedSender = {
  name: 'coinbase',
  variable: 'secret',
  ...hmacCredentials('cb_', 'hex'),
  signsTime: false,
  id: 'payload',
  signatureHeaders: ['x-cc-webhook-signature'],
  oracleName: '`coinbase-commerce-node` `Webhook.verifySigHeader`',
  newEvent(now) {
    const eventId = randomUUID();
    const event = { id: eventId, type: 'charge:confirmed', created_at: iso(now), api_version: '2018-03-22', data: {} };
    return { body: JSON.stringify({ id: 1, scheduled_for: iso(now), event }), eventId, eventType: event.type };
  },
  headers: (outgoing, credential) => ({ ...JSON_TYPE, 'x-cc-webhook-signature': credential.sign(outgoing.body) }),
  oracle: (outgoing, headers, credential) =>
    accepts(() =>
      coinbase.Webhook.verifySigHeader(outgoing.body, headers['x-cc-webhook-signature'] ?? '', credential.configured),
    ),
};

const openai: NamedSender = {
  name: 'openai',
  variable: 'secret',
  credentials: [whsecCredential(), whsecCredential()],
  stranger: whsecCredential(),
  signsTime: true,
  id: 'signed-header',
  signatureHeaders: ['webhook-signature'],
  oracleName: '`openai` `webhooks.verifySignature`',
  newEvent(now) {
    const body = { id: uniqueId('evt'), object: 'event', created_at: now, type: 'response.completed', data: {} };
    return { body: JSON.stringify(body), eventId: uniqueId('wh'), eventType: 'response.completed' };
  },
  headers: (outgoing, credential, now) => ({
    ...JSON_TYPE,
    ...standardLike(credential, outgoing, now, outgoing.eventId ?? ''),
  }),
  oracle: (outgoing, headers, credential) =>
    accepts(() =>
      new OpenAI({ apiKey: 'sk-oracle' }).webhooks.verifySignature(outgoing.body, headers, credential.configured),
    ),
};

const polar: NamedSender = {
  name: 'polar',
  variable: 'secret',
  // Polar's secret is used as its UTF-8 bytes, not base64-decoded.
  ...(() => {
    const make = () => hmacCredential(secretOf('polar_whs_'), 'base64');
    return { credentials: [make(), make()] as const, stranger: make() };
  })(),
  signsTime: true,
  id: 'signed-header',
  signatureHeaders: ['webhook-signature'],
  oracleName: '`@polar-sh/sdk` `webhooks.validateEvent`',
  newEvent(now) {
    const body = { type: 'order.created', timestamp: iso(now), data: { id: randomUUID() } };
    return { body: JSON.stringify(body), eventId: uniqueId('msg'), eventType: 'order.created' };
  },
  headers: (outgoing, credential, now) => ({
    ...JSON_TYPE,
    ...standardLike(credential, outgoing, now, outgoing.eventId ?? ''),
  }),
  oracle: (outgoing, headers, credential) =>
    accepts(() => polarWebhooks.validateEvent(outgoing.body, headers, credential.configured)),
};

const linear: NamedSender = {
  name: 'linear',
  variable: 'secret',
  ...hmacCredentials('lin_wh_', 'hex'),
  signsTime: true,
  id: 'unsigned-header',
  signatureHeaders: ['linear-signature'],
  oracleName: '`@linear/sdk` `LinearWebhookClient.verify`',
  newEvent(now) {
    const body = {
      action: 'create',
      type: 'Issue',
      data: { id: randomUUID(), title: uniqueId('issue') },
      createdAt: iso(now),
      webhookTimestamp: now * 1000,
      webhookId: randomUUID(),
    };
    const deliveryId = randomUUID();
    return { body: JSON.stringify(body), eventId: deliveryId, deliveryId, eventType: 'Issue.create' };
  },
  headers: (outgoing, credential) => ({
    ...JSON_TYPE,
    'linear-delivery': outgoing.deliveryId ?? '',
    'linear-event': 'Issue',
    'linear-signature': credential.sign(outgoing.body),
  }),
  oracle: (outgoing, headers, credential) =>
    accepts(() =>
      new LinearWebhookClient(credential.configured).verify(
        Buffer.from(outgoing.body),
        headers['linear-signature'] ?? '',
      ),
    ),
};

const razorpay: NamedSender = {
  name: 'razorpay',
  variable: 'secret',
  ...hmacCredentials('rzp_', 'hex'),
  signsTime: false,
  id: 'unsigned-header',
  signatureHeaders: ['x-razorpay-signature'],
  oracleName: '`razorpay` `validateWebhookSignature`',
  newEvent(now) {
    const body = {
      entity: 'event',
      account_id: 'acc_1',
      event: 'payment.captured',
      contains: ['payment'],
      payload: { payment: { entity: { id: uniqueId('pay') } } },
      created_at: now,
    };
    const deliveryId = uniqueId('evt');
    return { body: JSON.stringify(body), eventId: deliveryId, deliveryId, eventType: 'payment.captured' };
  },
  headers: (outgoing, credential) => ({
    ...JSON_TYPE,
    'x-razorpay-event-id': outgoing.deliveryId ?? '',
    'x-razorpay-signature': credential.sign(outgoing.body),
  }),
  oracle: async (outgoing, headers, credential) =>
    Razorpay.validateWebhookSignature(outgoing.body, headers['x-razorpay-signature'] ?? '', credential.configured),
};

const line: NamedSender = {
  name: 'line',
  variable: 'secret',
  ...hmacCredentials('', 'base64'),
  signsTime: false,
  id: 'event',
  signatureHeaders: ['x-line-signature'],
  oracleName: '`@line/bot-sdk` `validateSignature`',
  newEvent(now) {
    const event = lineEvent(now);
    return batchOfOne(event, event.webhookEventId, event.type, (payload) => lineBody([payload]));
  },
  headers: (outgoing, credential) => ({ ...JSON_TYPE, 'x-line-signature': credential.sign(outgoing.body) }),
  oracle: async (outgoing, headers, credential) =>
    lineValidateSignature(outgoing.body, credential.configured, headers['x-line-signature'] ?? ''),
};

/** EasyPost normalises its secret (NFKD) before keying: a composed é tells whether we do too. */
function easypostCredential(): Credential {
  const configured = `s\u00e9cret-${randomBytes(9).toString('hex')}`;
  return hmacCredential(configured, 'hex', Buffer.from(configured.normalize('NFKD')));
}
const easypost: NamedSender = {
  name: 'easypost',
  variable: 'secret',
  credentials: [easypostCredential(), easypostCredential()],
  stranger: easypostCredential(),
  signsTime: false,
  id: 'payload',
  signatureHeaders: ['x-hmac-signature'],
  oracleName: '`@easypost/api` `utils.validateWebhook`',
  newEvent(now) {
    const eventId = uniqueId('evt');
    const body = { id: eventId, object: 'Event', description: 'tracker.updated', created_at: iso(now), result: {} };
    return { body: JSON.stringify(body), eventId, eventType: 'tracker.updated' };
  },
  headers: (outgoing, credential) => ({
    ...JSON_TYPE,
    'x-hmac-signature': `hmac-sha256-hex=${credential.sign(outgoing.body)}`,
  }),
  oracle: (outgoing, headers, credential) =>
    accepts(() =>
      new EasyPost('EZTK_oracle').Utils.validateWebhook(Buffer.from(outgoing.body), headers, credential.configured),
    ),
};

const gocardless: NamedSender = {
  name: 'gocardless',
  variable: 'secret',
  ...hmacCredentials('gc_', 'hex'),
  signsTime: false,
  id: 'event',
  signatureHeaders: ['webhook-signature'],
  oracleName: '`gocardless-nodejs` `webhooks.parse`',
  newEvent(now) {
    const event = gocardlessEvent(now);
    return batchOfOne(event, event.id, 'payments.confirmed', (payload) => gocardlessBody([payload]));
  },
  headers: (outgoing, credential) => ({ ...JSON_TYPE, 'webhook-signature': credential.sign(outgoing.body) }),
  oracle: (outgoing, headers, credential) =>
    accepts(() => gocardlessParse(outgoing.body, credential.configured, headers['webhook-signature'] ?? '')),
};

export const HUBSPOT_URL = 'https://hooks.example.com/webhooks/hubspot?portal=1';
const hubspot: NamedSender = {
  name: 'hubspot',
  variable: 'secret',
  ...hmacCredentials('', 'base64'),
  url: HUBSPOT_URL,
  signsTime: true,
  id: 'event',
  signatureHeaders: ['x-hubspot-signature-v3'],
  oracleName: '`@hubspot/api-client` `Signature.isValid` (v3)',
  newEvent(now) {
    const event = hubspotEvent(now);
    return batchOfOne(event, String(event.eventId), event.subscriptionType, (payload) => `[${payload}]`);
  },
  headers: (outgoing, credential, now) => ({
    ...JSON_TYPE,
    'x-hubspot-request-timestamp': String(now * 1000),
    'x-hubspot-signature-v3': credential.sign(`POST${HUBSPOT_URL}${outgoing.body}${now * 1000}`),
  }),
  oracle: async (outgoing, headers, credential) =>
    HubSpotSignature.isValid({
      signatureVersion: 'v3',
      signature: headers['x-hubspot-signature-v3'] ?? '',
      method: 'POST',
      clientSecret: credential.configured,
      requestBody: outgoing.body,
      url: HUBSPOT_URL,
      timestamp: Number(headers['x-hubspot-request-timestamp']),
    }),
};

export const SQUARE_URL = 'https://hooks.example.com/webhooks/square';
const square: NamedSender = {
  name: 'square',
  variable: 'secret',
  ...hmacCredentials('sq_', 'base64'),
  url: SQUARE_URL,
  signsTime: false,
  id: 'payload',
  signatureHeaders: ['x-square-hmacsha256-signature'],
  oracleName: '`square` `WebhooksHelper.verifySignature`',
  newEvent(now) {
    const eventId = randomUUID();
    const body = {
      merchant_id: 'M1',
      type: 'payment.updated',
      event_id: eventId,
      created_at: iso(now),
      data: { type: 'payment', id: 'p1', object: {} },
    };
    return { body: JSON.stringify(body), eventId, eventType: 'payment.updated' };
  },
  headers: (outgoing, credential) => ({
    ...JSON_TYPE,
    'x-square-hmacsha256-signature': credential.sign(`${SQUARE_URL}${outgoing.body}`),
  }),
  oracle: (outgoing, headers, credential) =>
    SquareWebhooks.verifySignature({
      requestBody: outgoing.body,
      signatureHeader: headers['x-square-hmacsha256-signature'] ?? '',
      signatureKey: credential.configured,
      notificationUrl: SQUARE_URL,
    }),
};

const telnyx: NamedSender = {
  name: 'telnyx',
  variable: 'publicKey',
  credentials: [ed25519Credential('base64'), ed25519Credential('base64')],
  stranger: ed25519Credential('base64'),
  signsTime: true,
  id: 'payload',
  signatureHeaders: ['telnyx-signature-ed25519'],
  oracleName: '`telnyx` `TelnyxWebhook.verify`',
  newEvent(now) {
    const eventId = randomUUID();
    const data = {
      event_type: 'message.received',
      id: eventId,
      occurred_at: iso(now),
      payload: {},
      record_type: 'event',
    };
    return { body: JSON.stringify({ data, meta: { attempt: 1 } }), eventId, eventType: 'message.received' };
  },
  headers: (outgoing, credential, now) => ({
    ...JSON_TYPE,
    'telnyx-timestamp': String(now),
    'telnyx-signature-ed25519': credential.sign(`${now}|${outgoing.body}`),
  }),
  oracle: (outgoing, headers, credential) =>
    accepts(() => new TelnyxWebhook(credential.configured).verify(outgoing.body, headers)),
};

export const zoomSecrets = hmacCredentials('', 'hex');
const zoom: NamedSender = {
  name: 'zoom',
  variable: 'secret',
  ...zoomSecrets,
  signsTime: true,
  id: 'digest',
  signatureHeaders: ['x-zm-signature'],
  oracleName: '`@zoom/rivet` `AwsLambdaReceiver` (also answers the URL validation)',
  newEvent(now) {
    const body = {
      event: 'meeting.started',
      event_ts: now * 1000,
      payload: { account_id: 'a', object: { id: uniqueId('m') } },
    };
    return { body: JSON.stringify(body), eventType: 'meeting.started' };
  },
  headers: (outgoing, credential, now) => ({
    ...JSON_TYPE,
    'x-zm-request-timestamp': String(now),
    'x-zm-signature': `v0=${credential.sign(`v0:${now}:${outgoing.body}`)}`,
  }),
  oracle: async (outgoing, headers, credential) =>
    (await zoomOracle(outgoing.body, headers, credential)).statusCode === 200,
};

/** What Zoom's own receiver answers to a delivery: its status and body. */
export async function zoomOracle(body: string, headers: Record<string, string>, credential: Credential) {
  const handler = new AwsLambdaReceiver({ webhooksSecretToken: credential.configured }).start();
  const quiet = console.debug;
  console.debug = () => {};
  try {
    const response = await handler({ body, headers, isBase64Encoded: false } as never, {} as never);
    return response as { statusCode: number; body: string };
  } finally {
    console.debug = quiet;
  }
}

const notion: NamedSender = {
  name: 'notion',
  variable: 'secret',
  ...hmacCredentials('secret_', 'hex'),
  signsTime: false,
  id: 'payload',
  signatureHeaders: ['x-notion-signature'],
  oracleName: '`@notionhq/client` `verifyWebhookSignature`',
  newEvent(now) {
    const eventId = randomUUID();
    const body = {
      id: eventId,
      timestamp: iso(now),
      workspace_id: randomUUID(),
      type: 'page.created',
      entity: { id: randomUUID(), type: 'page' },
      attempt_number: 1,
    };
    return { body: JSON.stringify(body), eventId, eventType: 'page.created' };
  },
  headers: (outgoing, credential) => ({
    ...JSON_TYPE,
    'x-notion-signature': `sha256=${credential.sign(outgoing.body)}`,
  }),
  oracle: (outgoing, headers, credential) =>
    notionVerify({
      body: outgoing.body,
      signature: headers['x-notion-signature'] ?? '',
      verificationToken: credential.configured,
    }),
};

const box: NamedSender = {
  name: 'box',
  variable: 'secret',
  ...hmacCredentials('', 'base64'),
  signsTime: true,
  id: 'payload',
  signatureHeaders: ['box-signature-primary', 'box-signature-secondary'],
  oracleName: '`box-node-sdk` `WebhooksManager.validateMessage`',
  newEvent(now) {
    const eventId = randomUUID();
    const body = {
      type: 'webhook_event',
      id: eventId,
      created_at: iso(now),
      trigger: 'FILE.UPLOADED',
      webhook: { id: '1' },
      source: { id: '2', type: 'file' },
    };
    return { body: JSON.stringify(body), eventId, eventType: 'FILE.UPLOADED' };
  },
  headers: (outgoing, credential, now) => ({
    ...JSON_TYPE,
    'box-delivery-id': randomUUID(),
    'box-delivery-timestamp': iso(now),
    'box-signature-algorithm': 'HmacSHA256',
    'box-signature-version': '1',
    'box-signature-primary': credential.sign(`${outgoing.body}${iso(now)}`),
  }),
  oracle: (outgoing, headers, credential) =>
    WebhooksManager.validateMessage(outgoing.body, headers, credential.configured),
};

const pagerDutyFixture = JSON.parse(
  readFileSync(new URL('../fixtures/pagerduty-webhookv3.json', import.meta.url), 'utf8'),
) as { secret: string; body: string; signature: string; mismatch: string };

const pagerduty: NamedSender = {
  name: 'pagerduty',
  variable: 'secret',
  ...hmacCredentials('', 'hex'),
  signsTime: false,
  id: 'payload',
  signatureHeaders: ['x-pagerduty-signature'],
  oracleName: "the signed example in PagerDuty's own `go-pagerduty` tests (`webhookv3_test.go`)",
  newEvent(now) {
    const eventId = uniqueId('01');
    const event = {
      id: eventId,
      event_type: 'incident.triggered',
      resource_type: 'incident',
      occurred_at: iso(now),
      data: {},
    };
    return { body: JSON.stringify({ event }), eventId, eventType: 'incident.triggered' };
  },
  headers: (outgoing, credential) => ({
    ...JSON_TYPE,
    'x-pagerduty-signature': `v1=${credential.sign(outgoing.body)}`,
  }),
  vector: {
    secret: pagerDutyFixture.secret,
    body: pagerDutyFixture.body,
    headers: { ...JSON_TYPE, 'x-pagerduty-signature': pagerDutyFixture.signature },
    refused: { ...JSON_TYPE, 'x-pagerduty-signature': pagerDutyFixture.mismatch },
    eventId: '01BWDWL3NYY7LUFPZCC28QUCMK',
    eventType: 'incident.priority_updated',
  },
};

export const TWILIO_URL = 'https://hooks.example.com/webhooks/twilio';
const twilio: NamedSender = {
  name: 'twilio',
  variable: 'secret',
  ...(() => {
    const make = () => hmacCredential(randomBytes(16).toString('hex'), 'base64', undefined, 'sha1');
    return { credentials: [make(), make()] as const, stranger: make() };
  })(),
  url: TWILIO_URL,
  signsTime: false,
  id: 'event',
  signatureHeaders: ['x-twilio-signature'],
  oracleName: '`twilio` `validateRequestWithBody`',
  newEvent(now) {
    const event = twilioEvent(now);
    return batchOfOne(event, event.id, event.type, (payload) => `[${payload}]`);
  },
  headers: (outgoing, credential) => ({
    ...JSON_TYPE,
    'x-twilio-signature': credential.sign(`${TWILIO_URL}?bodySHA256=${sha256Hex(outgoing.body)}`),
  }),
  oracle: async (outgoing, headers, credential) =>
    twilioWebhooks.validateRequestWithBody(
      credential.configured,
      headers['x-twilio-signature'] ?? '',
      `${TWILIO_URL}?bodySHA256=${sha256Hex(outgoing.body)}`,
      outgoing.body,
    ),
};

const replicate: NamedSender = {
  name: 'replicate',
  variable: 'secret',
  credentials: [whsecCredential(), whsecCredential()],
  stranger: whsecCredential(),
  signsTime: true,
  id: 'signed-header',
  signatureHeaders: ['webhook-signature'],
  oracleName: '`replicate` `validateWebhook`',
  newEvent() {
    const body = { id: uniqueId('p'), model: 'owner/model', status: 'succeeded', output: ['x'] };
    return { body: JSON.stringify(body), eventId: uniqueId('msg'), eventType: 'succeeded' };
  },
  headers: (outgoing, credential, now) => ({
    ...JSON_TYPE,
    ...standardLike(credential, outgoing, now, outgoing.eventId ?? ''),
  }),
  oracle: (outgoing, headers, credential) =>
    accepts(() =>
      validateReplicateWebhook({
        id: headers['webhook-id'] ?? '',
        timestamp: headers['webhook-timestamp'] ?? '',
        signature: headers['webhook-signature'] ?? '',
        body: outgoing.body,
        secret: credential.configured,
      }),
    ),
};

const webflow: NamedSender = {
  name: 'webflow',
  variable: 'secret',
  ...hmacCredentials('wf_', 'hex'),
  signsTime: true,
  id: 'digest',
  signatureHeaders: ['x-webflow-signature'],
  oracleName: '`webflow-api` `webhooks.verifySignature`',
  newEvent() {
    const body = { triggerType: 'form_submission', payload: { id: randomUUID(), name: 'Contact', data: {} } };
    return { body: JSON.stringify(body), eventType: 'form_submission' };
  },
  headers: (outgoing, credential, now) => ({
    ...JSON_TYPE,
    'x-webflow-timestamp': String(now * 1000),
    'x-webflow-signature': credential.sign(`${now * 1000}:${outgoing.body}`),
  }),
  oracle: (outgoing, headers, credential) =>
    new WebflowClient({ accessToken: 'oracle' }).webhooks.verifySignature({
      headers,
      body: outgoing.body,
      secret: credential.configured,
    }),
};

/** Sanity writes its HMAC as unpadded base64url. */
function sanityCredential(): Credential {
  const configured = secretOf('sanity_');
  return {
    configured,
    sign: (content) => createHmac('sha256', configured).update(content).digest('base64url'),
  };
}
const sanity: NamedSender = {
  name: 'sanity',
  variable: 'secret',
  credentials: [sanityCredential(), sanityCredential()],
  stranger: sanityCredential(),
  signsTime: true,
  id: 'digest',
  signatureHeaders: ['sanity-webhook-signature'],
  oracleName: '`@sanity/webhook` `isValidSignature` (its `encodeSignatureHeader` signs alike)',
  newEvent() {
    const body = { _id: randomUUID(), _type: 'post', _rev: uniqueId('r'), title: 'Hello' };
    return { body: JSON.stringify(body), eventType: 'document' };
  },
  headers: (outgoing, credential, now) => ({
    ...JSON_TYPE,
    'sanity-webhook-signature': `t=${now * 1000},v1=${credential.sign(`${now * 1000}.${outgoing.body}`)}`,
  }),
  oracle: (outgoing, headers, credential) =>
    isValidSanitySignature(outgoing.body, headers['sanity-webhook-signature'] ?? '', credential.configured),
};

function gitlabPush(): Outgoing {
  const deliveryId = randomUUID();
  const body = { object_kind: 'push', ref: 'refs/heads/main', checkout_sha: randomBytes(20).toString('hex') };
  return { body: JSON.stringify(body), eventId: deliveryId, deliveryId, eventType: 'push' };
}

/** GitLab's signing token: Standard Webhooks' headers, which GitLab validates with `standardwebhooks`. */
const gitlab: NamedSender = {
  name: 'gitlab',
  variable: 'secret',
  credentials: [whsecCredential(), whsecCredential()],
  stranger: whsecCredential(),
  signsTime: true,
  id: 'signed-header',
  signatureHeaders: ['webhook-signature'],
  oracleName: '`standardwebhooks` `Webhook.verify`, the validator GitLab documents for its signing token',
  newEvent: gitlabPush,
  headers: (outgoing, credential, now) => ({
    ...JSON_TYPE,
    'x-gitlab-event': 'Push Hook',
    'idempotency-key': outgoing.deliveryId ?? '',
    ...standardLike(credential, outgoing, now, outgoing.deliveryId ?? ''),
  }),
  oracle: (outgoing, headers, credential) =>
    accepts(() => new StandardWebhook(credential.configured).verify(outgoing.body, headers)),
};

/** GitLab's older secret token: the token itself in `X-Gitlab-Token`, nothing signed. */
const gitlabToken: NamedSender = {
  name: 'gitlab',
  label: 'gitlab (secret token)',
  token: true,
  variable: 'secret',
  ...(() => {
    const make = (): Credential => ({ configured: secretOf('glwt-'), sign: () => '' });
    return { credentials: [make(), make()] as const, stranger: make() };
  })(),
  signsTime: false,
  id: 'unsigned-header',
  signatureHeaders: ['x-gitlab-token'],
  oracleName: "GitLab's documentation: `X-Gitlab-Token` carries the secret token as configured",
  newEvent: gitlabPush,
  headers: (outgoing, credential) => ({
    ...JSON_TYPE,
    'x-gitlab-event': 'Push Hook',
    'idempotency-key': outgoing.deliveryId ?? '',
    'x-gitlab-token': credential.configured,
  }),
  // The documented rule itself: the header is the configured token, byte for byte.
  oracle: async (_outgoing, headers, credential) => headers['x-gitlab-token'] === credential.configured,
};

export const namedSenders: readonly NamedSender[] = [
  paddle,
  mux,
  workos,
  sendgrid,
  discord,
  coinbaseSender,
  openai,
  polar,
  linear,
  razorpay,
  line,
  easypost,
  gocardless,
  hubspot,
  square,
  telnyx,
  zoom,
  notion,
  box,
  pagerduty,
  twilio,
  replicate,
  webflow,
  sanity,
  gitlab,
  gitlabToken,
];

/** Every named sender enabled with both of its keys (and its signed URL), as configuration would. */
export async function enableNamedSenders(): Promise<ReadonlyMap<string, EnabledSender>> {
  const of = (variable: NamedSender['variable']) => {
    const keys: Record<string, string[]> = {};
    for (const sender of namedSenders.filter((candidate) => candidate.variable === variable)) {
      keys[sender.name] = [...(keys[sender.name] ?? []), ...sender.credentials.map((key) => key.configured)];
    }
    return keys;
  };
  const urls = Object.fromEntries(namedSenders.flatMap((s) => (s.url === undefined ? [] : [[s.name, s.url]])));
  return enableSenders(of('secret'), { publicKeys: of('publicKey'), urls });
}
