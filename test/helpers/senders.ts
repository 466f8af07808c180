// Each sender as the tests play it: secrets, event factories and headers signed by the
// publisher's own library (standardwebhooks, stripe, @octokit/webhooks-methods) or, for Shopify and
// Slack, by node:crypto following their documentation. Never by the service's code, so a signing bug
// of ours cannot hide behind the same bug in the test.
import { createHmac, randomBytes } from 'node:crypto';
import { sign as signGitHub } from '@octokit/webhooks-methods';
import { Webhook } from 'standardwebhooks';
import Stripe from 'stripe';
import type { KeysBySender } from '../../src/sender-variables.ts';
import { TEST_NOW_SECONDS, uniqueId } from './acme.ts';

export type SenderName = 'standard' | 'stripe' | 'github' | 'shopify' | 'slack';

/** What is sent: the exact body, and the id the event must be stored under. */
export interface Delivery {
  body: string;
  eventId: string;
}

export interface SignOptions {
  secret?: string;
  /** Unix seconds, for the senders that sign a time. */
  timestamp?: number;
}

export interface Sender {
  name: SenderName;
  /** [current, previous]: both configured, as during a rotation. */
  secrets: readonly [string, string];
  /** A well-formed secret that is not configured. */
  strangerSecret: string;
  signsTimestamp: boolean;
  /** A new event of a type no handler takes: stored as `ignored`. */
  newEvent(): Delivery;
  headers(delivery: Delivery, options?: SignOptions): Promise<Record<string, string>>;
  /** Signature headers missing or malformed, by name; each must get the one 401. */
  brokenHeaders(good: Record<string, string>, delivery: Delivery): Record<string, Record<string, string>>;
}

const JSON_TYPE = { 'content-type': 'application/json' };

function without(headers: Record<string, string>, ...names: string[]): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).filter(([name]) => !names.includes(name)));
}

function hmac(secret: string | Buffer, content: string, encoding: 'hex' | 'base64'): string {
  return createHmac('sha256', secret).update(content).digest(encoding);
}

/** A `whsec_` secret as Standard Webhooks senders issue them: base64 of random bytes. */
export function standardSecret(): string {
  return `whsec_${randomBytes(24).toString('base64')}`;
}

export const standardSender: Sender = {
  name: 'standard',
  secrets: [standardSecret(), standardSecret()],
  strangerSecret: standardSecret(),
  signsTimestamp: true,
  newEvent: () => ({
    eventId: uniqueId('msg'),
    body: JSON.stringify({ type: 'invoice.paid', timestamp: '2025-12-31T23:59:50Z', data: { id: uniqueId('inv') } }),
  }),
  async headers(delivery, options = {}) {
    const timestamp = options.timestamp ?? TEST_NOW_SECONDS;
    const webhook = new Webhook(options.secret ?? standardSender.secrets[0]);
    return {
      ...JSON_TYPE,
      'webhook-id': delivery.eventId,
      'webhook-timestamp': String(timestamp),
      'webhook-signature': webhook.sign(delivery.eventId, new Date(timestamp * 1000), delivery.body),
    };
  },
  brokenHeaders(good) {
    const signature = good['webhook-signature'] ?? '';
    const value = signature.slice(3);
    return {
      'no webhook-id': without(good, 'webhook-id'),
      'no webhook-timestamp': without(good, 'webhook-timestamp'),
      'no webhook-signature': without(good, 'webhook-signature'),
      'webhook-id changed after signing': { ...good, 'webhook-id': uniqueId('msg') },
      'only a v1a entry': { ...good, 'webhook-signature': `v1a,${value}` },
      'version missing': { ...good, 'webhook-signature': value },
      'base64 unpadded': { ...good, 'webhook-signature': signature.replace(/=+$/, '') },
      'base64 with a tab inside': { ...good, 'webhook-signature': `v1,${value.slice(0, 8)}\t${value.slice(8)}` },
      'base64 of 31 bytes': {
        ...good,
        'webhook-signature': `v1,${Buffer.from(value, 'base64').subarray(1).toString('base64')}`,
      },
      'hex instead of base64': { ...good, 'webhook-signature': `v1,${Buffer.from(value, 'base64').toString('hex')}` },
      'two spaces between entries': { ...good, 'webhook-signature': `${signature}  ${signature}` },
      'empty signature': { ...good, 'webhook-signature': '' },
    };
  },
};

export const STRIPE_SECRETS = ['whsec_test_current_0123456789abcdef', 'whsec_test_previous_0123456789abcdef'] as const;

/** A snapshot event as Stripe sends it (trimmed); `type` and `object` decide what it does. */
export function stripeEvent(type: string, object: Record<string, unknown>, created = TEST_NOW_SECONDS - 5) {
  return {
    id: uniqueId('evt'),
    object: 'event',
    api_version: '2024-06-20',
    created,
    data: { object },
    livemode: false,
    pending_webhooks: 1,
    request: { id: null, idempotency_key: null },
    type,
  };
}

export function stripeHeader(body: string, options: SignOptions = {}): string {
  return Stripe.webhooks.generateTestHeaderString({
    payload: body,
    secret: options.secret ?? STRIPE_SECRETS[0],
    timestamp: options.timestamp ?? TEST_NOW_SECONDS,
  });
}

export const stripeSender: Sender = {
  name: 'stripe',
  secrets: STRIPE_SECRETS,
  strangerSecret: 'whsec_test_stranger_0123456789abcdef',
  signsTimestamp: true,
  newEvent() {
    const event = stripeEvent('invoice.paid', { id: uniqueId('in'), object: 'invoice', amount_paid: 2000 });
    return { eventId: event.id, body: JSON.stringify(event) };
  },
  headers: async (delivery, options) => ({ ...JSON_TYPE, 'stripe-signature': stripeHeader(delivery.body, options) }),
  brokenHeaders(good) {
    const header = good['stripe-signature'] ?? '';
    const [t = '', v1 = ''] = header.split(',');
    return {
      'no Stripe-Signature': without(good, 'stripe-signature'),
      'no t': { ...good, 'stripe-signature': v1 },
      'two t': { ...good, 'stripe-signature': `${t},${t},${v1}` },
      'no v1': { ...good, 'stripe-signature': t },
      'only v0': { ...good, 'stripe-signature': `${t},${v1.replace('v1=', 'v0=')}` },
      'v1 not hex': { ...good, 'stripe-signature': `${t},${v1.slice(0, -2)}zz` },
      'v1 too short': { ...good, 'stripe-signature': `${t},${v1.slice(0, -2)}` },
      'v1 empty': { ...good, 'stripe-signature': `${t},v1=` },
      't changed after signing': { ...good, 'stripe-signature': `t=${TEST_NOW_SECONDS - 1},${v1}` },
      'spaces around entries': { ...good, 'stripe-signature': `${t}, ${v1}` },
      'empty header': { ...good, 'stripe-signature': '' },
    };
  },
};

/** Headers GitHub sends besides the signature. */
export function githubHeaders(deliveryId: string, event = 'issues'): Record<string, string> {
  return { ...JSON_TYPE, 'x-github-delivery': deliveryId, 'x-github-event': event, 'x-github-hook-id': '1' };
}

export const githubSender: Sender = {
  name: 'github',
  secrets: ['github-secret-current', 'github-secret-previous'],
  strangerSecret: 'github-secret-stranger',
  signsTimestamp: false,
  newEvent: () => ({
    eventId: crypto.randomUUID(),
    body: JSON.stringify({ action: 'opened', issue: { number: 1, title: uniqueId('issue') }, sender: { login: 'x' } }),
  }),
  headers: async (delivery, options = {}) => ({
    ...githubHeaders(delivery.eventId),
    'x-hub-signature-256': await signGitHub(options.secret ?? githubSender.secrets[0], delivery.body),
  }),
  brokenHeaders(good) {
    const signature = good['x-hub-signature-256'] ?? '';
    const hex = signature.slice('sha256='.length);
    return {
      'no X-Hub-Signature-256': without(good, 'x-hub-signature-256'),
      'no sha256= prefix': { ...good, 'x-hub-signature-256': hex },
      'sha1= prefix': { ...good, 'x-hub-signature-256': `sha1=${hex}` },
      'hex too short': { ...good, 'x-hub-signature-256': signature.slice(0, -2) },
      'hex not hex': { ...good, 'x-hub-signature-256': `${signature.slice(0, -2)}zz` },
      'base64 instead of hex': {
        ...good,
        'x-hub-signature-256': `sha256=${Buffer.from(hex, 'hex').toString('base64')}`,
      },
      'only the legacy SHA-1 header': { ...without(good, 'x-hub-signature-256'), 'x-hub-signature': `sha1=${hex}` },
    };
  },
};

export function shopifyHmac(secret: string, body: string): string {
  return hmac(secret, body, 'base64');
}

export const shopifySender: Sender = {
  name: 'shopify',
  secrets: ['shopify-secret-current', 'shopify-secret-previous'],
  strangerSecret: 'shopify-secret-stranger',
  signsTimestamp: false,
  newEvent: () => ({
    eventId: crypto.randomUUID(),
    body: JSON.stringify({ id: Number.parseInt(randomBytes(5).toString('hex'), 16), email: 'x@example.com' }),
  }),
  headers: async (delivery, options = {}) => ({
    ...JSON_TYPE,
    'x-shopify-topic': 'orders/create',
    'x-shopify-webhook-id': delivery.eventId,
    'x-shopify-triggered-at': '2025-12-31T23:59:50.123456789Z',
    'x-shopify-api-version': '2025-10',
    'x-shopify-hmac-sha256': shopifyHmac(options.secret ?? shopifySender.secrets[0], delivery.body),
  }),
  brokenHeaders(good) {
    const signature = good['x-shopify-hmac-sha256'] ?? '';
    return {
      'no X-Shopify-Hmac-Sha256': without(good, 'x-shopify-hmac-sha256'),
      'hex instead of base64': { ...good, 'x-shopify-hmac-sha256': Buffer.from(signature, 'base64').toString('hex') },
      'base64 unpadded': { ...good, 'x-shopify-hmac-sha256': signature.replace(/=+$/, '') },
      'base64 with a space': { ...good, 'x-shopify-hmac-sha256': `${signature.slice(0, 8)} ${signature.slice(8)}` },
      'sha256= prefix': { ...good, 'x-shopify-hmac-sha256': `sha256=${signature}` },
      'empty signature': { ...good, 'x-shopify-hmac-sha256': '' },
    };
  },
};

export function slackSignature(secret: string, timestamp: string, body: string): string {
  return `v0=${hmac(secret, `v0:${timestamp}:${body}`, 'hex')}`;
}

export function slackEventCallback(overrides: Record<string, unknown> = {}) {
  return {
    token: 'legacy-verification-token',
    team_id: 'T0001',
    api_app_id: 'A0001',
    event: { type: 'app_mention', user: 'U0001', text: 'hello', ts: '1767225590.000100', channel: 'C0001' },
    type: 'event_callback',
    event_id: uniqueId('Ev'),
    event_time: TEST_NOW_SECONDS - 10,
    ...overrides,
  };
}

export const slackSender: Sender = {
  name: 'slack',
  secrets: ['slack-signing-secret-current', 'slack-signing-secret-previous'],
  strangerSecret: 'slack-signing-secret-stranger',
  signsTimestamp: true,
  newEvent() {
    const event = slackEventCallback();
    return { eventId: event.event_id, body: JSON.stringify(event) };
  },
  async headers(delivery, options = {}) {
    const timestamp = String(options.timestamp ?? TEST_NOW_SECONDS);
    return {
      ...JSON_TYPE,
      'x-slack-request-timestamp': timestamp,
      'x-slack-signature': slackSignature(options.secret ?? slackSender.secrets[0], timestamp, delivery.body),
    };
  },
  brokenHeaders(good) {
    const signature = good['x-slack-signature'] ?? '';
    return {
      'no X-Slack-Signature': without(good, 'x-slack-signature'),
      'no X-Slack-Request-Timestamp': without(good, 'x-slack-request-timestamp'),
      'v1= instead of v0=': { ...good, 'x-slack-signature': signature.replace('v0=', 'v1=') },
      'no v0= prefix': { ...good, 'x-slack-signature': signature.slice(3) },
      'hex not hex': { ...good, 'x-slack-signature': `${signature.slice(0, -2)}zz` },
      'timestamp changed after signing': { ...good, 'x-slack-request-timestamp': String(TEST_NOW_SECONDS - 1) },
      'timestamp not a number': { ...good, 'x-slack-request-timestamp': 'now' },
    };
  },
};

export const senders: readonly Sender[] = [standardSender, stripeSender, githubSender, shopifySender, slackSender];

/** Every sender here enabled with both of its secrets, acme with none. */
export function allSenderSecrets(): KeysBySender {
  return Object.fromEntries(senders.map((sender) => [sender.name, sender.secrets]));
}
