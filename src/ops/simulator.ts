// The provider simulator behind `webhook-inbox send`: builds events and signs them the way each
// provider does (the schemes of src/providers, from the sender's side), using the same HMAC
// primitives the service verifies with. The tests sign with the providers' own libraries instead,
// so a shared mistake here would show up there.

import { secretBytes } from '../providers/described.ts';
import { encodeHex, importHmacKey, prefixed, signHmac, utf8 } from '../providers/hmac.ts';

/** One delivery: the exact body and the id it is stored under. */
export interface Outgoing {
  eventId: string;
  body: string;
  /** For schemes that name the type in a header (GitHub, Shopify). */
  eventType: string;
}

export interface SimulatedScheme {
  /** A new event of `type` with an id of its own. */
  newEvent(type: string | undefined, nowSeconds: number): Outgoing;
  /** The file's bytes as they are; the id from the payload, or a fresh one for header-id schemes. */
  fromFile(body: string): Outgoing;
  sign(outgoing: Outgoing, secret: string, nowSeconds: number): Promise<Record<string, string>>;
}

const JSON_TYPE = { 'content-type': 'application/json' };

function freshId(prefix: string): string {
  return `${prefix}_${crypto.randomUUID().replaceAll('-', '').slice(0, 20)}`;
}

const toBase64 = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes));

async function mac(secret: string | Uint8Array<ArrayBuffer>, content: Uint8Array<ArrayBuffer>): Promise<Uint8Array> {
  return signHmac(await importHmacKey(secret), content);
}

/** A field of a JSON body, for schemes whose event id is in the payload. */
function field(body: string, name: string): string {
  const parsed: unknown = JSON.parse(body);
  const value = typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>)[name] : undefined;
  if (typeof value !== 'string') throw new Error(`the file has no string "${name}": the event id of this provider`);
  return value;
}

function typeOf(body: string): string {
  const parsed: unknown = JSON.parse(body);
  const type = typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>).type : undefined;
  return typeof type === 'string' ? type : 'simulated';
}

const SUBSCRIPTION_STATUSES = ['trialing', 'active', 'past_due', 'canceled', 'unpaid'] as const;

export const simulatedSchemes: Readonly<Record<string, SimulatedScheme>> = {
  acme: {
    newEvent(type = 'subscription.updated', nowSeconds) {
      const id = freshId('evt');
      const status = SUBSCRIPTION_STATUSES[Math.floor(Math.random() * SUBSCRIPTION_STATUSES.length)];
      const event = {
        id,
        type,
        api_version: '2024-06-01',
        created: nowSeconds,
        version: nowSeconds,
        data: { id: freshId('sub'), status },
      };
      return { eventId: id, body: JSON.stringify(event), eventType: type };
    },
    fromFile: (body) => ({ eventId: field(body, 'id'), body, eventType: typeOf(body) }),
    async sign(outgoing, secret, nowSeconds) {
      const timestamp = String(nowSeconds);
      const signature = await mac(secret, prefixed(`${timestamp}.`, utf8(outgoing.body)));
      return { ...JSON_TYPE, 'x-acme-timestamp': timestamp, 'x-acme-signature': encodeHex(signature) };
    },
  },
  standard: {
    newEvent(type = 'invoice.paid', nowSeconds) {
      const body = JSON.stringify({ type, timestamp: new Date(nowSeconds * 1000).toISOString(), data: {} });
      return { eventId: freshId('msg'), body, eventType: type };
    },
    fromFile: (body) => ({ eventId: freshId('msg'), body, eventType: typeOf(body) }),
    async sign(outgoing, secret, nowSeconds) {
      const timestamp = String(nowSeconds);
      const content = utf8(`${outgoing.eventId}.${timestamp}.${outgoing.body}`);
      const key = secretBytes(secret, 'whsec');
      if (key === null) throw new Error('standard: the secret must be "whsec_" followed by base64');
      const signature = await mac(key, content);
      return {
        ...JSON_TYPE,
        'webhook-id': outgoing.eventId,
        'webhook-timestamp': timestamp,
        'webhook-signature': `v1,${toBase64(signature)}`,
      };
    },
  },
  stripe: {
    newEvent(type = 'customer.subscription.updated', nowSeconds) {
      const id = freshId('evt');
      const body = JSON.stringify({
        id,
        object: 'event',
        type,
        created: nowSeconds,
        data: { object: { id: freshId('sub'), status: 'active' } },
      });
      return { eventId: id, body, eventType: type };
    },
    fromFile: (body) => ({ eventId: field(body, 'id'), body, eventType: typeOf(body) }),
    async sign(outgoing, secret, nowSeconds) {
      const signature = await mac(secret, prefixed(`${nowSeconds}.`, utf8(outgoing.body)));
      return { ...JSON_TYPE, 'stripe-signature': `t=${nowSeconds},v1=${encodeHex(signature)}` };
    },
  },
  github: {
    newEvent(type = 'issues') {
      const body = JSON.stringify({ action: 'opened', issue: { number: 1, title: freshId('issue') } });
      return { eventId: crypto.randomUUID(), body, eventType: type };
    },
    fromFile: (body) => ({ eventId: crypto.randomUUID(), body, eventType: 'push' }),
    async sign(outgoing, secret) {
      const signature = await mac(secret, utf8(outgoing.body));
      return {
        ...JSON_TYPE,
        'x-github-delivery': outgoing.eventId,
        'x-github-event': outgoing.eventType,
        'x-hub-signature-256': `sha256=${encodeHex(signature)}`,
      };
    },
  },
  shopify: {
    newEvent(type = 'orders/create') {
      const body = JSON.stringify({ id: Math.floor(Math.random() * 1e12), email: 'simulated@example.com' });
      return { eventId: crypto.randomUUID(), body, eventType: type };
    },
    fromFile: (body) => ({ eventId: crypto.randomUUID(), body, eventType: 'orders/create' }),
    async sign(outgoing, secret, nowSeconds) {
      const signature = await mac(secret, utf8(outgoing.body));
      return {
        ...JSON_TYPE,
        'x-shopify-topic': outgoing.eventType,
        'x-shopify-webhook-id': outgoing.eventId,
        'x-shopify-triggered-at': new Date(nowSeconds * 1000).toISOString(),
        'x-shopify-hmac-sha256': toBase64(signature),
      };
    },
  },
  slack: {
    newEvent(type = 'app_mention', nowSeconds) {
      const id = freshId('Ev');
      const body = JSON.stringify({ type: 'event_callback', event_id: id, event_time: nowSeconds, event: { type } });
      return { eventId: id, body, eventType: type };
    },
    fromFile: (body) => ({ eventId: field(body, 'event_id'), body, eventType: typeOf(body) }),
    async sign(outgoing, secret, nowSeconds) {
      const timestamp = String(nowSeconds);
      const signature = await mac(secret, prefixed(`v0:${timestamp}:`, utf8(outgoing.body)));
      return {
        ...JSON_TYPE,
        'x-slack-request-timestamp': timestamp,
        'x-slack-signature': `v0=${encodeHex(signature)}`,
      };
    },
  },
};
