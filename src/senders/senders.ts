// Every sender this service understands, as data: each entry says which headers carry what, how the
// signature is written and what it covers, and where the id, the type and the time are; how long
// the sender delivers an event again (retention and pauses are judged by it); and a realistic
// delivery of its own. The one engine in described.ts runs them all; docs/senders.md tells an
// operator where each value comes from on the sender's side. Ordered as the table of senders there.
import { z } from 'zod';
import { MAX_UNIX_SECONDS } from '../lib/occurrence.ts';
import { valueAt } from './described.ts';
import type { Redelivery, Sample, SampleContext, SenderDescription, SignatureMethod } from './description.ts';
import { boundedString } from './scheme.ts';

/**
 * A built-in sender: described, with a realistic delivery of its own for `webhook-inbox send` and
 * what it does with a refused delivery: a sender missing either does not compile.
 */
export type BuiltInDescription = SenderDescription & {
  sample: (context: SampleContext) => Sample;
  redelivery: Redelivery;
};

const SAMPLE_ALPHABET = '0123456789abcdefghijklmnopqrstuvwxyz';

/** `prefix` and `length` random letters and digits: ids shaped as each sender writes them. */
function sampleId(prefix: string, length = 20): string {
  const random = crypto.getRandomValues(new Uint8Array(length));
  return prefix + Array.from(random, (byte) => SAMPLE_ALPHABET[byte % SAMPLE_ALPHABET.length]).join('');
}

/** A random positive integer id below 2^40 (Shopify's, HubSpot's, …). */
const sampleInteger = () => Math.floor(Math.random() * 2 ** 40) + 1;

const pick = <T>(choices: readonly T[]): T => choices[Math.floor(Math.random() * choices.length)] as T;

const iso = (seconds: number) => new Date(seconds * 1000).toISOString();

const HMAC_SHA256: SignatureMethod = { algorithm: 'HMAC', hash: 'SHA-256', secret: 'utf8' };

/** Standard Webhooks' signature header: `v1,<base64>` entries (and `v1a` Ed25519 ones), space-separated. */
const standardSignature = (secret: 'whsec' | 'utf8') => ({
  headers: ['webhook-signature'],
  encoding: 'base64' as const,
  list: { separator: ' ', assign: ',' },
  methods: [{ ...HMAC_SHA256, secret, entry: 'v1' }],
});

/** Standard Webhooks' headers around the signature: the signed id and unix-seconds timestamp. */
const standardHeaders = {
  signed: '{id}.{timestamp}.{body}',
  timestamp: { from: { header: 'webhook-timestamp' }, format: 'unix' },
  id: { header: 'webhook-id' },
} as const;

export const ACME_API_VERSIONS: ReadonlySet<string> = new Set(['2024-06-01']);

/** The envelope every acme event carries; unknown fields are kept, known ones strictly typed. */
export const acmeEnvelope = z.looseObject({
  id: boundedString,
  type: boundedString,
  api_version: z.string().min(1).max(64),
  // Required, so out of range is the payload's fault (400), not a time to drop.
  created: z.int().nonnegative().max(MAX_UNIX_SECONDS),
  version: z.int().nonnegative(),
  data: z.looseObject({}),
});
export type AcmeEnvelope = z.infer<typeof acmeEnvelope>;

/**
 * A Stripe snapshot event (`object: "event"`). Its `api_version` is the endpoint's, chosen by the
 * user; nothing is parked for it, because the mapping reads only fields every API version shares.
 * `created` is only when it happened: any value is kept, one that is no storable time stored as none.
 */
const stripeEnvelope = z.looseObject({
  id: boundedString,
  object: z.literal('event'),
  type: boundedString,
  api_version: z.string().max(64).nullable().optional(),
  data: z.looseObject({ object: z.looseObject({}) }),
});

/**
 * Slack's Events API envelopes: events, and the two protocol messages answered without storing.
 * `event_time` is informational: any value is kept, one that is no storable time stored as none.
 */
const slackEnvelope = z.discriminatedUnion('type', [
  z.looseObject({
    type: z.literal('event_callback'),
    event_id: boundedString,
    event: z.looseObject({ type: boundedString }),
  }),
  z.looseObject({ type: z.literal('url_verification'), challenge: boundedString }),
  z.looseObject({ type: z.literal('app_rate_limited') }),
]);

/**
 * Senders that put several events in one delivery: an array of objects, each with its own id and
 * type (named by `shape`), every event checked before anything is stored. Empty is allowed: it is
 * answered and stores nothing (LINE sends one to check a new URL).
 */
const eventsOf = (shape: Record<string, z.ZodType<unknown>>) => z.array(z.looseObject(shape));

/** An event id written as text or as a non-negative integer (HubSpot's, exact beyond 2^53). */
const idValue = z.union([boundedString, z.int().nonnegative(), z.bigint().nonnegative()]);

/** Zoom's endpoint check: answered with the token's HMAC, never stored. */
const zoomValidation = z.looseObject({
  event: z.literal('endpoint.url_validation'),
  payload: z.looseObject({ plainToken: boundedString }),
});

export const senderDescriptions: readonly BuiltInDescription[] = [
  {
    name: 'acme',
    redelivery: { windowDays: 3 },
    signature: { headers: ['x-acme-signature'], encoding: 'hex', methods: [HMAC_SHA256] },
    signed: '{timestamp}.{body}',
    timestamp: { from: { header: 'x-acme-timestamp' }, format: 'unix' },
    id: { path: ['id'] },
    type: { path: ['type'] },
    occurredAt: { from: { path: ['created'] }, format: 'unix' },
    payload: acmeEnvelope,
    schemaVersion: { path: ['api_version'], known: ACME_API_VERSIONS },
    sample: ({ nowSeconds, type = 'subscription.updated' }) => ({
      type,
      payload: {
        id: sampleId('evt_'),
        type,
        api_version: '2024-06-01',
        created: nowSeconds,
        version: nowSeconds,
        data: { id: sampleId('sub_'), status: pick(['trialing', 'active', 'past_due', 'canceled', 'unpaid']) },
      },
    }),
  },
  {
    name: 'standard',
    redelivery: { windowDays: 2 },
    // Svix, the scheme's largest sender (Clerk, Resend, …), names the same headers `svix-id`,
    // `svix-timestamp`, `svix-signature`: either set, one per delivery, never mixed.
    headerSets: ['webhook-', 'svix-'],
    signature: {
      ...standardSignature('whsec'),
      headers: ['signature'],
      methods: [
        { ...HMAC_SHA256, secret: 'whsec', entry: 'v1' },
        { algorithm: 'Ed25519', publicKey: 'whpk', entry: 'v1a' },
      ],
    },
    ...standardHeaders,
    timestamp: { from: { header: 'timestamp' }, format: 'unix' },
    id: { header: 'id' },
    type: { path: ['type'] },
    // Informational, and written every way (RFC 3339, Clerk's unix milliseconds): any value is kept.
    occurredAt: { from: { path: ['timestamp'] }, format: 'rfc3339' },
    // The type routes the event; the specification has no schema version to park on.
    payload: z.looseObject({ type: boundedString }),
    sample: ({ nowSeconds, type = 'invoice.paid' }) => ({
      type,
      id: sampleId('msg_'),
      payload: {
        type,
        timestamp: iso(nowSeconds),
        data: { id: sampleId('in_'), object: 'invoice', status: 'paid', amount_paid: 2000, currency: 'usd' },
      },
    }),
  },
  {
    name: 'stripe',
    redelivery: { windowDays: 3 },
    signature: {
      headers: ['stripe-signature'],
      encoding: 'hex',
      list: { separator: ',', assign: '=' },
      methods: [{ ...HMAC_SHA256, entry: 'v1' }],
    },
    signed: '{timestamp}.{body}',
    timestamp: { from: { entry: 't' }, format: 'unix' },
    id: { path: ['id'] },
    type: { path: ['type'] },
    occurredAt: { from: { path: ['created'] }, format: 'unix' },
    payload: stripeEnvelope,
    sample: ({ nowSeconds, type = 'customer.subscription.updated' }) => ({
      type,
      payload: {
        id: sampleId('evt_'),
        object: 'event',
        api_version: '2024-06-20',
        created: nowSeconds,
        data: {
          object: {
            id: sampleId('sub_'),
            object: 'subscription',
            customer: sampleId('cus_', 14),
            status: 'active',
            current_period_end: nowSeconds + 30 * 86_400,
          },
          previous_attributes: { status: 'trialing' },
        },
        livemode: false,
        pending_webhooks: 1,
        request: { id: sampleId('req_', 14), idempotency_key: crypto.randomUUID() },
        type,
      },
    }),
  },
  {
    name: 'github',
    redelivery: { windowDays: 3, byHand: "the webhook's Recent Deliveries (settings page) or GitHub's REST API" },
    signature: { headers: ['x-hub-signature-256'], encoding: 'hex', prefix: 'sha256=', methods: [HMAC_SHA256] },
    signed: '{body}',
    id: { header: 'x-github-delivery' },
    // `issues.opened`, as @octokit/webhooks names them; `push` has no action.
    type: { header: 'x-github-event' },
    typeSuffix: ['action'],
    sample: ({ nowSeconds, type = 'issues' }) => ({
      type,
      id: crypto.randomUUID(),
      payload: {
        action: 'opened',
        issue: {
          id: sampleInteger(),
          number: 1347,
          title: 'Found a bug',
          state: 'open',
          user: { login: 'octocat', id: 1, type: 'User' },
          created_at: iso(nowSeconds),
        },
        repository: { id: 1296269, name: 'Hello-World', full_name: 'octocat/Hello-World', private: false },
        sender: { login: 'octocat', id: 1, type: 'User' },
      },
    }),
  },
  {
    name: 'shopify',
    redelivery: { windowDays: 2, retriesForMinutes: 4 * 60 },
    // One header set or the other, never a mix: the prefixed set wins when its signature is there.
    headerSets: ['x-shopify-', 'shopify-'],
    signature: { headers: ['hmac-sha256'], encoding: 'base64', methods: [HMAC_SHA256] },
    signed: '{body}',
    id: { header: 'webhook-id' },
    type: { header: 'topic' },
    occurredAt: { from: { header: 'triggered-at' }, format: 'rfc3339' },
    sample: ({ nowSeconds, type = 'orders/create' }) => {
      const id = sampleInteger();
      return {
        type,
        id: crypto.randomUUID(),
        payload: {
          id,
          admin_graphql_api_id: `gid://shopify/Order/${id}`,
          email: 'jon@example.com',
          created_at: iso(nowSeconds),
          currency: 'USD',
          financial_status: 'paid',
          total_price: '199.00',
          line_items: [{ id: sampleInteger(), product_id: sampleInteger(), title: 'IPod Nano - 8gb', quantity: 1 }],
        },
      };
    },
  },
  {
    name: 'slack',
    // Slack's own schedule: at once, after a minute, after five minutes.
    redelivery: { windowDays: 1, retriesForMinutes: 5 },
    signature: { headers: ['x-slack-signature'], encoding: 'hex', prefix: 'v0=', methods: [HMAC_SHA256] },
    signed: 'v0:{timestamp}:{body}',
    timestamp: { from: { header: 'x-slack-request-timestamp' }, format: 'unix' },
    id: { path: ['event_id'] },
    type: { path: ['event', 'type'] },
    occurredAt: { from: { path: ['event_time'] }, format: 'unix' },
    payload: slackEnvelope,
    // Already checked against the envelope: only the protocol messages' own fields are read.
    answer(payload) {
      const type = valueAt(payload, ['type']);
      if (type === 'url_verification') {
        return { body: JSON.stringify({ challenge: valueAt(payload, ['challenge']) }), reason: type };
      }
      return type === 'app_rate_limited' ? { body: '{"received":true}', reason: type } : undefined;
    },
    sample: ({ nowSeconds, type = 'app_mention' }) => ({
      type,
      payload: {
        token: 'Jhj5dZrVaK7ZwHHjRyZWjbDl',
        team_id: 'T061EG9R6',
        api_app_id: 'A0PNCHHK2',
        event: {
          type,
          user: 'U061F7AUR',
          text: '<@U0LAN0Z89> is it everything a river should be?',
          ts: `${nowSeconds}.000200`,
          channel: 'C0LAN2Q65',
          event_ts: `${nowSeconds}.000200`,
        },
        type: 'event_callback',
        event_id: `Ev${sampleId('', 10).toUpperCase()}`,
        event_time: nowSeconds,
        authorizations: [{ team_id: 'T061EG9R6', user_id: 'U0LAN0Z89', is_bot: true }],
      },
    }),
  },
  {
    name: 'paddle',
    redelivery: { windowDays: 3 },
    signature: {
      headers: ['paddle-signature'],
      encoding: 'hex',
      list: { separator: ';', assign: '=' },
      methods: [{ ...HMAC_SHA256, entry: 'h1' }],
    },
    signed: '{timestamp}:{body}',
    timestamp: { from: { entry: 'ts' }, format: 'unix' },
    id: { path: ['event_id'] },
    type: { path: ['event_type'] },
    occurredAt: { from: { path: ['occurred_at'] }, format: 'rfc3339' },
    sample: ({ nowSeconds, type = 'transaction.completed' }) => ({
      type,
      payload: {
        event_id: sampleId('evt_01'),
        event_type: type,
        occurred_at: iso(nowSeconds),
        notification_id: sampleId('ntf_01'),
        data: {
          id: sampleId('txn_01'),
          status: 'completed',
          customer_id: sampleId('ctm_01'),
          currency_code: 'USD',
          origin: 'web',
          items: [{ price: { id: sampleId('pri_01') }, quantity: 1 }],
        },
      },
    }),
  },
  {
    name: 'mux',
    redelivery: { windowDays: 1 },
    signature: {
      headers: ['mux-signature'],
      encoding: 'hex',
      list: { separator: ',', assign: '=' },
      methods: [{ ...HMAC_SHA256, entry: 'v1' }],
    },
    signed: '{timestamp}.{body}',
    timestamp: { from: { entry: 't' }, format: 'unix' },
    id: { path: ['id'] },
    type: { path: ['type'] },
    occurredAt: { from: { path: ['created_at'] }, format: 'rfc3339' },
    sample: ({ nowSeconds, type = 'video.asset.ready' }) => {
      const asset = sampleId('', 24);
      return {
        type,
        payload: {
          type,
          object: { type: 'asset', id: asset },
          id: crypto.randomUUID(),
          environment: { name: 'Production', id: sampleId('', 6) },
          data: { id: asset, status: 'ready', duration: 23.86, aspect_ratio: '16:9', playback_ids: [] },
          created_at: iso(nowSeconds),
          accessor_source: null,
          accessor: null,
          request_id: null,
        },
      };
    },
  },
  {
    name: 'workos',
    redelivery: { windowDays: 3 },
    signature: {
      headers: ['workos-signature'],
      encoding: 'hex',
      // WorkOS writes `t=…, v1=…`; its SDK also takes the entries without the space.
      list: { separator: /, ?/, assign: '=', joins: ', ' },
      methods: [{ ...HMAC_SHA256, entry: 'v1' }],
    },
    signed: '{timestamp}.{body}',
    timestamp: { from: { entry: 't' }, format: 'unix-ms' },
    id: { path: ['id'] },
    type: { path: ['event'] },
    occurredAt: { from: { path: ['created_at'] }, format: 'rfc3339' },
    sample: ({ nowSeconds, type = 'user.created' }) => ({
      type,
      payload: {
        id: sampleId('event_01'),
        event: type,
        data: {
          object: 'user',
          id: sampleId('user_01'),
          email: 'todd@example.com',
          first_name: 'Todd',
          last_name: 'Rundgren',
          email_verified: false,
          created_at: iso(nowSeconds),
          updated_at: iso(nowSeconds),
        },
        created_at: iso(nowSeconds),
      },
    }),
  },
  {
    name: 'sendgrid',
    redelivery: { windowDays: 1 },
    signature: {
      headers: ['x-twilio-email-event-webhook-signature'],
      encoding: 'base64',
      methods: [{ algorithm: 'ECDSA-P256', publicKey: 'spki' }],
    },
    signed: '{timestamp}{body}',
    timestamp: { from: { header: 'x-twilio-email-event-webhook-timestamp' }, format: 'unix' },
    // An array of events, each stored under its own `sg_event_id`.
    events: { path: [] },
    id: { path: ['sg_event_id'] },
    type: { path: ['event'] },
    occurredAt: { from: { path: ['timestamp'] }, format: 'unix' },
    payload: eventsOf({ sg_event_id: boundedString, event: boundedString }),
    sample: ({ nowSeconds, type }) => {
      const message = `${sampleId('', 22)}.filterdrecv-p3mdw1-756b745b58-kmzbl-18-5F5FC76C-9.0`;
      const event = (event: string, extra: object) => ({
        email: 'example@test.com',
        timestamp: nowSeconds,
        'smtp-id': `<${message}@ismtpd0001p1lon1.sendgrid.net>`,
        event: type ?? event,
        category: ['cat facts'],
        sg_event_id: sampleId('', 22),
        sg_message_id: message,
        ...extra,
      });
      return {
        type: type ?? 'processed',
        payload: [
          event('processed', {}),
          event('delivered', { response: '250 OK' }),
          event('open', { useragent: 'Mozilla/4.0 (compatible; MSIE 6.1; Windows XP)', ip: '255.255.255.255' }),
        ],
      };
    },
  },
  {
    name: 'discord',
    redelivery: { windowDays: 3 },
    signature: {
      headers: ['x-signature-ed25519'],
      encoding: 'hex',
      methods: [{ algorithm: 'Ed25519', publicKey: 'hex' }],
    },
    signed: '{timestamp}{body}',
    timestamp: { from: { header: 'x-signature-timestamp' }, format: 'unix' },
    // Webhook events carry no id: the signed body (which includes the event's own timestamp) is it.
    id: { bodyDigest: true },
    type: { path: ['event', 'type'] },
    occurredAt: { from: { path: ['event', 'timestamp'] }, format: 'rfc3339' },
    payload: z.looseObject({ type: z.int() }),
    // Discord checks a new URL with a signed PING (type 0) and expects an empty 204.
    // Stryker disable next-line StringLiteral: a 204 is answered with no body whatever `body` says (intake.ts); the 'ping' reason is pinned by its log line all the same
    answer: (payload) => (valueIsPing(payload) ? { body: '', reason: 'ping', status: 204 } : undefined),
    sample: ({ nowSeconds, type = 'APPLICATION_AUTHORIZED' }) => ({
      type,
      payload: {
        version: 1,
        application_id: '1234560123453231555',
        type: 1,
        event: {
          type,
          timestamp: iso(nowSeconds),
          data: {
            integration_type: 0,
            scopes: ['applications.commands'],
            user: { id: sampleInteger().toString(), username: 'nelly', global_name: 'Nelly' },
          },
        },
      },
    }),
  },
  {
    name: 'coinbase',
    redelivery: { windowDays: 3 },
    signature: { headers: ['x-cc-webhook-signature'], encoding: 'hex', methods: [HMAC_SHA256] },
    signed: '{body}',
    id: { path: ['event', 'id'] },
    type: { path: ['event', 'type'] },
    occurredAt: { from: { path: ['event', 'created_at'] }, format: 'rfc3339' },
    sample: ({ nowSeconds, type = 'charge:confirmed' }) => ({
      type,
      payload: {
        id: sampleInteger(),
        scheduled_for: iso(nowSeconds),
        attempt_number: 1,
        event: {
          id: crypto.randomUUID(),
          resource: 'event',
          type,
          api_version: '2018-03-22',
          created_at: iso(nowSeconds),
          data: {
            id: crypto.randomUUID(),
            code: sampleId('', 8).toUpperCase(),
            name: 'The Sovereign Individual',
            pricing: { local: { amount: '100.00', currency: 'USD' } },
          },
        },
      },
    }),
  },
  {
    name: 'openai',
    redelivery: { windowDays: 3 },
    signature: standardSignature('whsec'),
    ...standardHeaders,
    type: { path: ['type'] },
    occurredAt: { from: { path: ['created_at'] }, format: 'unix' },
    sample: ({ nowSeconds, type = 'response.completed' }) => ({
      type,
      id: sampleId('wh_'),
      payload: { object: 'event', id: sampleId('evt_'), type, created_at: nowSeconds, data: { id: sampleId('resp_') } },
    }),
  },
  {
    name: 'polar',
    redelivery: { windowDays: 3 },
    // Standard Webhooks, keyed with the secret's own bytes rather than its base64 decoding.
    signature: standardSignature('utf8'),
    ...standardHeaders,
    type: { path: ['type'] },
    occurredAt: { from: { path: ['timestamp'] }, format: 'rfc3339' },
    sample: ({ nowSeconds, type = 'order.created' }) => ({
      type,
      id: sampleId('msg_'),
      payload: {
        type,
        timestamp: iso(nowSeconds),
        data: {
          id: crypto.randomUUID(),
          created_at: iso(nowSeconds),
          status: 'paid',
          amount: 1000,
          currency: 'usd',
          billing_reason: 'purchase',
          customer_id: crypto.randomUUID(),
          product_id: crypto.randomUUID(),
        },
      },
    }),
  },
  {
    name: 'linear',
    // After a minute, an hour and six hours.
    redelivery: { windowDays: 1, retriesForMinutes: 7 * 60 },
    signature: { headers: ['linear-signature'], encoding: 'hex', methods: [HMAC_SHA256] },
    signed: '{body}',
    // The signed time is inside the body; the delivery id is a header the signature does not cover.
    timestamp: { from: { path: ['webhookTimestamp'] }, format: 'unix-ms' },
    id: { header: 'linear-delivery' },
    type: { path: ['type'] },
    typeSuffix: ['action'],
    occurredAt: { from: { path: ['createdAt'] }, format: 'rfc3339' },
    sample: ({ nowSeconds, type = 'Issue' }) => ({
      type,
      id: crypto.randomUUID(),
      payload: {
        action: 'create',
        type,
        createdAt: iso(nowSeconds),
        data: {
          id: crypto.randomUUID(),
          identifier: 'ENG-123',
          title: 'Crash when opening settings',
          priority: 2,
          teamId: crypto.randomUUID(),
          createdAt: iso(nowSeconds),
        },
        url: 'https://linear.app/example/issue/ENG-123',
        organizationId: crypto.randomUUID(),
        webhookTimestamp: nowSeconds * 1000,
        webhookId: crypto.randomUUID(),
      },
    }),
  },
  {
    name: 'razorpay',
    redelivery: { windowDays: 1 },
    signature: { headers: ['x-razorpay-signature'], encoding: 'hex', methods: [HMAC_SHA256] },
    signed: '{body}',
    id: { header: 'x-razorpay-event-id' },
    type: { path: ['event'] },
    occurredAt: { from: { path: ['created_at'] }, format: 'unix' },
    sample: ({ nowSeconds, type = 'payment.captured' }) => ({
      type,
      id: sampleId('', 20),
      payload: {
        entity: 'event',
        account_id: sampleId('acc_', 14),
        event: type,
        contains: ['payment'],
        payload: {
          payment: {
            entity: {
              id: sampleId('pay_', 14),
              entity: 'payment',
              amount: 50000,
              currency: 'INR',
              status: 'captured',
              method: 'upi',
              captured: true,
              created_at: nowSeconds,
            },
          },
        },
        created_at: nowSeconds,
      },
    }),
  },
  {
    name: 'line',
    redelivery: { windowDays: 3 },
    signature: { headers: ['x-line-signature'], encoding: 'base64', methods: [HMAC_SHA256] },
    signed: '{body}',
    // `events` (empty when LINE checks the URL), each stored under its own `webhookEventId`; a
    // redelivery is the same event with `deliveryContext.isRedelivery` set.
    events: { path: ['events'] },
    id: { path: ['webhookEventId'] },
    type: { path: ['type'] },
    occurredAt: { from: { path: ['timestamp'] }, format: 'unix-ms' },
    payload: z.looseObject({
      destination: boundedString,
      events: eventsOf({ webhookEventId: boundedString, type: boundedString }),
    }),
    sample: ({ nowSeconds, type }) => {
      const event = (usual: string, extra: object) => ({
        type: type ?? usual,
        mode: 'active',
        timestamp: nowSeconds * 1000,
        source: { type: 'user', userId: `U${sampleId('', 32)}` },
        webhookEventId: sampleId('01', 24).toUpperCase(),
        deliveryContext: { isRedelivery: false },
        ...extra,
      });
      return {
        type: type ?? 'message',
        payload: {
          destination: 'xxxxxxxxxx',
          events: [
            event('message', {
              replyToken: sampleId('', 32),
              message: {
                type: 'text',
                id: String(sampleInteger()),
                quoteToken: sampleId('q', 20),
                text: 'Hello, world',
              },
            }),
            event('follow', { replyToken: sampleId('', 32), follow: { isUnblocked: false } }),
          ],
        },
      };
    },
  },
  {
    name: 'easypost',
    redelivery: { windowDays: 3 },
    signature: {
      headers: ['x-hmac-signature'],
      encoding: 'hex',
      prefix: 'hmac-sha256-hex=',
      methods: [{ ...HMAC_SHA256, secret: 'nfkd' }],
    },
    signed: '{body}',
    id: { path: ['id'] },
    type: { path: ['description'] },
    occurredAt: { from: { path: ['created_at'] }, format: 'rfc3339' },
    sample: ({ nowSeconds, type = 'tracker.updated' }) => ({
      type,
      payload: {
        id: sampleId('evt_', 32),
        object: 'Event',
        mode: 'test',
        description: type,
        previous_attributes: { status: 'in_transit' },
        created_at: iso(nowSeconds),
        updated_at: iso(nowSeconds),
        pending_urls: [],
        completed_urls: [],
        status: 'pending',
        result: {
          id: sampleId('trk_', 32),
          object: 'Tracker',
          mode: 'test',
          tracking_code: 'EZ4000000004',
          status: 'delivered',
          carrier: 'USPS',
        },
      },
    }),
  },
  {
    name: 'gocardless',
    redelivery: { windowDays: 3 },
    signature: { headers: ['webhook-signature'], encoding: 'hex', methods: [HMAC_SHA256] },
    signed: '{body}',
    // `events`, each stored under its own id: a retry may carry them under another `meta.webhook_id`.
    events: { path: ['events'] },
    id: { path: ['id'] },
    type: { path: ['resource_type'] },
    typeSuffix: ['action'],
    occurredAt: { from: { path: ['created_at'] }, format: 'rfc3339' },
    payload: z.looseObject({
      events: eventsOf({ id: boundedString, resource_type: boundedString, action: boundedString }),
    }),
    sample: ({ nowSeconds, type }) => {
      const event = (action: string) => ({
        id: sampleId('EV', 12).toUpperCase(),
        created_at: iso(nowSeconds),
        action,
        resource_type: type ?? 'payments',
        links: { payment: sampleId('PM', 12).toUpperCase() },
        details: { origin: 'gocardless', cause: `payment_${action}`, description: `Payment ${action}.` },
        metadata: {},
      });
      return {
        type: type ?? 'payments',
        payload: {
          events: [event('submitted'), event('confirmed')],
          meta: { webhook_id: sampleId('WB', 12).toUpperCase() },
        },
      };
    },
  },
  {
    name: 'hubspot',
    redelivery: { windowDays: 1 },
    signature: { headers: ['x-hubspot-signature-v3'], encoding: 'base64', methods: [HMAC_SHA256] },
    signed: '{method}{url}{body}{timestamp}',
    timestamp: { from: { header: 'x-hubspot-request-timestamp' }, format: 'unix-ms' },
    // An array of events, each stored under its own `eventId`; a retry raises their `attemptNumber`.
    events: { path: [] },
    id: { path: ['eventId'] },
    type: { path: ['subscriptionType'] },
    occurredAt: { from: { path: ['occurredAt'] }, format: 'unix-ms' },
    payload: eventsOf({ eventId: idValue, subscriptionType: boundedString }),
    sample: ({ nowSeconds, type }) => {
      const objectId = sampleInteger();
      const event = (usual: string, extra: object) => ({
        eventId: sampleInteger(),
        subscriptionId: 12345,
        portalId: 62515,
        appId: 54321,
        occurredAt: nowSeconds * 1000,
        subscriptionType: type ?? usual,
        attemptNumber: 0,
        objectId,
        changeSource: 'CRM',
        ...extra,
      });
      return {
        type: type ?? 'contact.creation',
        payload: [
          event('contact.creation', { changeFlag: 'CREATED' }),
          event('contact.propertyChange', { propertyName: 'email', propertyValue: 'sample@example.com' }),
        ],
      };
    },
  },
  {
    name: 'square',
    redelivery: { windowDays: 3 },
    signature: { headers: ['x-square-hmacsha256-signature'], encoding: 'base64', methods: [HMAC_SHA256] },
    signed: '{url}{body}',
    id: { path: ['event_id'] },
    type: { path: ['type'] },
    occurredAt: { from: { path: ['created_at'] }, format: 'rfc3339' },
    sample: ({ nowSeconds, type = 'payment.updated' }) => {
      const payment = sampleId('', 28);
      return {
        type,
        payload: {
          merchant_id: sampleId('', 13).toUpperCase(),
          type,
          event_id: crypto.randomUUID(),
          created_at: iso(nowSeconds),
          data: {
            type: 'payment',
            id: payment,
            object: {
              payment: {
                id: payment,
                amount_money: { amount: 100, currency: 'USD' },
                status: 'COMPLETED',
                source_type: 'CARD',
                created_at: iso(nowSeconds),
                updated_at: iso(nowSeconds),
                version: 1,
              },
            },
          },
        },
      };
    },
  },
  {
    name: 'telnyx',
    redelivery: { windowDays: 3 },
    signature: {
      headers: ['telnyx-signature-ed25519'],
      encoding: 'base64',
      methods: [{ algorithm: 'Ed25519', publicKey: 'base64' }],
    },
    signed: '{timestamp}|{body}',
    timestamp: { from: { header: 'telnyx-timestamp' }, format: 'unix' },
    id: { path: ['data', 'id'] },
    type: { path: ['data', 'event_type'] },
    occurredAt: { from: { path: ['data', 'occurred_at'] }, format: 'rfc3339' },
    sample: ({ nowSeconds, type = 'message.received' }) => ({
      type,
      payload: {
        data: {
          event_type: type,
          id: crypto.randomUUID(),
          occurred_at: iso(nowSeconds),
          record_type: 'event',
          payload: {
            id: crypto.randomUUID(),
            record_type: 'message',
            direction: 'inbound',
            type: 'SMS',
            from: { phone_number: '+13125550001', carrier: 'T-Mobile USA', line_type: 'long_code' },
            to: [{ phone_number: '+17735550002', status: 'webhook_delivered' }],
            text: 'Hello from Telnyx!',
            received_at: iso(nowSeconds),
          },
        },
        meta: { attempt: 1, delivered_to: 'https://example.com/webhooks' },
      },
    }),
  },
  {
    name: 'zoom',
    redelivery: { windowDays: 1, retriesForMinutes: 120 },
    signature: { headers: ['x-zm-signature'], encoding: 'hex', prefix: 'v0=', methods: [HMAC_SHA256] },
    signed: 'v0:{timestamp}:{body}',
    timestamp: { from: { header: 'x-zm-request-timestamp' }, format: 'unix' },
    // Zoom sends no event id; the signed body carries the event's millisecond time.
    id: { bodyDigest: true },
    type: { path: ['event'] },
    occurredAt: { from: { path: ['event_ts'] }, format: 'unix-ms' },
    async answer(payload, tools) {
      // Every Zoom event passes here: the cheap test first, the schema only for the validation.
      // Stryker disable next-line ConditionalExpression: only a shortcut; without it zoomValidation (event: literal 'endpoint.url_validation') refuses every other event just the same
      if (valueAt(payload, ['event']) !== 'endpoint.url_validation') return undefined;
      const check = zoomValidation.safeParse(payload);
      if (!check.success) return undefined;
      const { plainToken } = check.data.payload;
      const encryptedToken = await tools.hmacHex(plainToken);
      return { body: JSON.stringify({ plainToken, encryptedToken }), reason: 'endpoint.url_validation' };
    },
    sample: ({ nowSeconds, type = 'meeting.started' }) => ({
      type,
      payload: {
        event: type,
        event_ts: nowSeconds * 1000,
        payload: {
          account_id: sampleId('', 22),
          object: {
            id: String(sampleInteger()),
            uuid: `${sampleId('', 22)}==`,
            host_id: sampleId('', 22),
            topic: 'My Meeting',
            type: 2,
            start_time: iso(nowSeconds),
            timezone: 'America/Los_Angeles',
            duration: 60,
          },
        },
      },
    }),
  },
  {
    name: 'notion',
    redelivery: { windowDays: 3 },
    signature: { headers: ['x-notion-signature'], encoding: 'hex', prefix: 'sha256=', methods: [HMAC_SHA256] },
    signed: '{body}',
    id: { path: ['id'] },
    type: { path: ['type'] },
    occurredAt: { from: { path: ['timestamp'] }, format: 'rfc3339' },
    sample: ({ nowSeconds, type = 'page.created' }) => ({
      type,
      payload: {
        id: crypto.randomUUID(),
        timestamp: iso(nowSeconds),
        workspace_id: crypto.randomUUID(),
        workspace_name: 'Quantify Labs',
        subscription_id: crypto.randomUUID(),
        integration_id: crypto.randomUUID(),
        type,
        authors: [{ id: crypto.randomUUID(), type: 'person' }],
        accessible_by: [{ id: crypto.randomUUID(), type: 'person' }],
        attempt_number: 1,
        entity: { id: crypto.randomUUID(), type: 'page' },
        data: { parent: { id: crypto.randomUUID(), type: 'space' } },
      },
    }),
  },
  {
    name: 'box',
    redelivery: { windowDays: 3 },
    // Box signs with both of the app's keys at once, one header each: either is enough.
    signature: {
      headers: ['box-signature-primary', 'box-signature-secondary'],
      encoding: 'base64',
      methods: [HMAC_SHA256],
    },
    signed: '{body}{timestamp}',
    timestamp: { from: { header: 'box-delivery-timestamp' }, format: 'rfc3339' },
    id: { path: ['id'] },
    type: { path: ['trigger'] },
    occurredAt: { from: { path: ['created_at'] }, format: 'rfc3339' },
    sample: ({ nowSeconds, type = 'FILE.UPLOADED' }) => ({
      type,
      headers: {
        'box-delivery-id': crypto.randomUUID(),
        'box-signature-algorithm': 'HmacSHA256',
        'box-signature-version': '1',
      },
      payload: {
        type: 'webhook_event',
        id: crypto.randomUUID(),
        created_at: iso(nowSeconds),
        trigger: type,
        webhook: { id: String(sampleInteger()), type: 'webhook' },
        created_by: { type: 'user', id: '12345678', name: 'Aaron Levie', login: 'ceo@example.com' },
        source: { id: String(sampleInteger()), type: 'file', name: 'Contract.pdf', size: 629644 },
      },
    }),
  },
  {
    name: 'pagerduty',
    redelivery: { windowDays: 3 },
    // V3 webhooks: one `v1=<hex>` entry per active secret, over the body; the event id is signed.
    signature: {
      headers: ['x-pagerduty-signature'],
      encoding: 'hex',
      list: { separator: ',', assign: '=' },
      methods: [{ ...HMAC_SHA256, entry: 'v1' }],
    },
    signed: '{body}',
    id: { path: ['event', 'id'] },
    type: { path: ['event', 'event_type'] },
    occurredAt: { from: { path: ['event', 'occurred_at'] }, format: 'rfc3339' },
    sample: ({ nowSeconds, type = 'incident.triggered' }) => {
      const incident = sampleId('P', 6).toUpperCase();
      return {
        type,
        payload: {
          event: {
            id: sampleId('01', 24).toUpperCase(),
            event_type: type,
            resource_type: 'incident',
            occurred_at: iso(nowSeconds),
            agent: { html_url: 'https://acme.pagerduty.com/users/PLH1HKV', id: 'PLH1HKV', type: 'user_reference' },
            client: null,
            data: {
              id: incident,
              type: 'incident',
              self: `https://api.pagerduty.com/incidents/${incident}`,
              html_url: `https://acme.pagerduty.com/incidents/${incident}`,
              number: 2,
              status: 'triggered',
              title: 'A little bump in the road',
              urgency: 'high',
              service: { id: 'PF9KMXH', type: 'service_reference' },
              created_at: iso(nowSeconds),
            },
          },
        },
      };
    },
  },
  {
    name: 'twilio',
    redelivery: { windowDays: 3 },
    // JSON webhooks (Event Streams): Twilio appends `bodySHA256=<hex SHA-256 of the body>` to the
    // configured URL and signs that URL with the auth token (HMAC-SHA1). The configured URL has no
    // query string of its own.
    signature: {
      headers: ['x-twilio-signature'],
      encoding: 'base64',
      methods: [{ algorithm: 'HMAC', hash: 'SHA-1', secret: 'utf8' }],
    },
    signed: '{url}?bodySHA256={bodySha256}',
    // An array of CloudEvents, each stored under its own `id`.
    events: { path: [] },
    id: { path: ['id'] },
    type: { path: ['type'] },
    occurredAt: { from: { path: ['time'] }, format: 'rfc3339' },
    payload: eventsOf({ id: boundedString, type: boundedString }),
    sample: ({ nowSeconds, type }) => {
      const message = sampleId('SM', 32);
      const event = (usual: string, schema: string, data: object) => ({
        specversion: '1.0',
        type: type ?? usual,
        source: `/2010-04-01/Accounts/AC${'0'.repeat(32)}/Messages/${message}.json`,
        id: sampleId('EZ', 32),
        dataschema: `https://events-schemas.twilio.com/Messaging.${schema}/1`,
        datacontenttype: 'application/json',
        time: iso(nowSeconds),
        data: { messageSid: message, accountSid: `AC${'0'.repeat(32)}`, timestamp: iso(nowSeconds), ...data },
      });
      return {
        type: type ?? 'com.twilio.messaging.message.sent',
        payload: [
          event('com.twilio.messaging.message.sent', 'MessageStatus', { messageStatus: 'SENT' }),
          event('com.twilio.messaging.message.delivered', 'MessageStatus', { messageStatus: 'DELIVERED' }),
        ],
      };
    },
  },
  {
    name: 'replicate',
    redelivery: { windowDays: 3 },
    // Standard Webhooks; the event is the prediction itself, its `status` what happened to it.
    signature: standardSignature('whsec'),
    ...standardHeaders,
    type: { path: ['status'] },
    occurredAt: { from: 'timestamp', format: 'unix' },
    sample: ({ nowSeconds, type = 'succeeded' }) => {
      const id = sampleId('', 26);
      return {
        type,
        id: sampleId('msg_'),
        payload: {
          id,
          model: 'black-forest-labs/flux-schnell',
          version: sampleId('', 64),
          input: { prompt: 'an astronaut riding a horse' },
          logs: '',
          output: [`https://replicate.delivery/xezq/${id}/out-0.webp`],
          error: null,
          status: type,
          created_at: iso(nowSeconds - 2),
          started_at: iso(nowSeconds - 1),
          completed_at: iso(nowSeconds),
          urls: {
            get: `https://api.replicate.com/v1/predictions/${id}`,
            cancel: `https://api.replicate.com/v1/predictions/${id}/cancel`,
          },
          metrics: { predict_time: 0.82 },
        },
      };
    },
  },
  {
    name: 'webflow',
    redelivery: { windowDays: 3 },
    // Webflow signs OAuth apps' webhooks only (the app's client secret), with a millisecond time.
    signature: { headers: ['x-webflow-signature'], encoding: 'hex', methods: [HMAC_SHA256] },
    signed: '{timestamp}:{body}',
    timestamp: { from: { header: 'x-webflow-timestamp' }, format: 'unix-ms' },
    // No event id is sent; the signed body (with its time) is the key.
    id: { bodyDigest: true },
    type: { path: ['triggerType'] },
    occurredAt: { from: 'timestamp', format: 'unix-ms' },
    sample: ({ nowSeconds, type = 'form_submission' }) => ({
      type,
      payload: {
        triggerType: type,
        payload: {
          name: 'Contact Us',
          siteId: sampleId('', 24),
          data: { Name: 'Some One', Email: 'some.one@example.com' },
          submittedAt: iso(nowSeconds),
          id: sampleId('', 24),
          formId: sampleId('', 24),
        },
      },
    }),
  },
  {
    name: 'sanity',
    redelivery: { windowDays: 1, retriesForMinutes: 1 },
    signature: {
      headers: ['sanity-webhook-signature'],
      encoding: 'base64url',
      list: { separator: ',', assign: '=' },
      methods: [{ ...HMAC_SHA256, entry: 'v1' }],
    },
    signed: '{timestamp}.{body}',
    timestamp: { from: { entry: 't' }, format: 'unix-ms' },
    // The payload is the webhook's own GROQ projection, with no event id or type of Sanity's: the
    // signed body is the key, and handlers read what the projection puts in it.
    id: { bodyDigest: true },
    type: { constant: 'document' },
    occurredAt: { from: 'timestamp', format: 'unix-ms' },
    sample: ({ nowSeconds, type = 'document' }) => ({
      type,
      // The default projection: the document itself.
      payload: {
        _id: crypto.randomUUID(),
        _type: 'post',
        _rev: sampleId('', 22),
        _createdAt: iso(nowSeconds),
        _updatedAt: iso(nowSeconds),
        title: 'Hello, world',
        slug: { _type: 'slug', current: 'hello-world' },
      },
    }),
  },
  {
    name: 'gitlab',
    redelivery: { windowDays: 7, byHand: "the webhook's request history (Resend request)" },
    // The signing token (`whsec_…`) signs as Standard Webhooks does; a webhook with only the older
    // secret token sends that token itself in `X-Gitlab-Token`, and then nothing is signed.
    signature: standardSignature('whsec'),
    ...standardHeaders,
    token: { header: 'x-gitlab-token' },
    // `webhook-id` (signed) with a signing token; without one, GitLab's `Idempotency-Key` (the same
    // value, unsigned, so the body digest backs it).
    id: { header: ['webhook-id', 'idempotency-key'] },
    // The `X-Gitlab-Event` header names it with spaces (`Push Hook`); the payload's kind does not.
    type: { path: ['object_kind'] },
    sample: ({ type = 'push' }) => {
      const after = sampleId('', 40);
      return {
        type,
        id: crypto.randomUUID(),
        payload: {
          object_kind: type,
          event_name: type,
          before: '95790bf891e76fee5e1747ab589903a6a1f80f22',
          after,
          ref: 'refs/heads/main',
          checkout_sha: after,
          user_id: 4,
          user_name: 'John Smith',
          user_username: 'jsmith',
          project_id: 15,
          project: { id: 15, name: 'Diaspora', path_with_namespace: 'mike/diaspora', default_branch: 'main' },
          commits: [
            { id: after, message: 'Update the README', author: { name: 'John Smith', email: 'jsmith@example.com' } },
          ],
          total_commits_count: 1,
        },
      };
    },
  },
];

function valueIsPing(payload: unknown): boolean {
  // Stryker disable next-line ConditionalExpression,LogicalOperator: answer runs only on a payload that passed discord's schema (an object with an integer `type`), so only `type === 0` can decide
  return typeof payload === 'object' && payload !== null && 'type' in payload && payload.type === 0;
}
