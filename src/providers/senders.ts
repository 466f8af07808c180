// Every sender this service understands, as data: each entry says which headers carry what, how the
// signature is written and what it covers, and where the id, the type and the time are. The one
// engine in described.ts runs them all; docs/providers.md tells an operator where each value comes
// from on the sender's side. Ordered as the table of senders in docs/providers.md.
import { z } from 'zod';
import { MAX_UNIX_SECONDS } from '../lib/occurrence.ts';
import { valueAt } from './described.ts';
import type { SenderDescription, SignatureMethod } from './description.ts';
import { boundedString } from './scheme.ts';

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

export const senderDescriptions: readonly SenderDescription[] = [
  {
    name: 'acme',
    signature: { headers: ['x-acme-signature'], encoding: 'hex', methods: [HMAC_SHA256] },
    signed: '{timestamp}.{body}',
    timestamp: { from: { header: 'x-acme-timestamp' }, format: 'unix' },
    id: { path: ['id'] },
    type: { path: ['type'] },
    occurredAt: { from: { path: ['created'] }, format: 'unix' },
    payload: acmeEnvelope,
    schemaVersion: { path: ['api_version'], known: ACME_API_VERSIONS },
  },
  {
    name: 'standard',
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
  },
  {
    name: 'stripe',
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
  },
  {
    name: 'github',
    signature: { headers: ['x-hub-signature-256'], encoding: 'hex', prefix: 'sha256=', methods: [HMAC_SHA256] },
    signed: '{body}',
    id: { header: 'x-github-delivery' },
    // `issues.opened`, as @octokit/webhooks names them; `push` has no action.
    type: { header: 'x-github-event' },
    typeSuffix: ['action'],
  },
  {
    name: 'shopify',
    // One header set or the other, never a mix: the prefixed set wins when its signature is there.
    headerSets: ['x-shopify-', 'shopify-'],
    signature: { headers: ['hmac-sha256'], encoding: 'base64', methods: [HMAC_SHA256] },
    signed: '{body}',
    id: { header: 'webhook-id' },
    type: { header: 'topic' },
    occurredAt: { from: { header: 'triggered-at' }, format: 'rfc3339' },
  },
  {
    name: 'slack',
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
  },
  {
    name: 'paddle',
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
  },
  {
    name: 'mux',
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
  },
  {
    name: 'workos',
    signature: {
      headers: ['workos-signature'],
      encoding: 'hex',
      // WorkOS writes `t=…, v1=…`; its SDK also takes the entries without the space.
      list: { separator: /, ?/, assign: '=' },
      methods: [{ ...HMAC_SHA256, entry: 'v1' }],
    },
    signed: '{timestamp}.{body}',
    timestamp: { from: { entry: 't' }, format: 'unix-ms' },
    id: { path: ['id'] },
    type: { path: ['event'] },
    occurredAt: { from: { path: ['created_at'] }, format: 'rfc3339' },
  },
  {
    name: 'sendgrid',
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
  },
  {
    name: 'discord',
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
  },
  {
    name: 'coinbase',
    signature: { headers: ['x-cc-webhook-signature'], encoding: 'hex', methods: [HMAC_SHA256] },
    signed: '{body}',
    id: { path: ['event', 'id'] },
    type: { path: ['event', 'type'] },
    occurredAt: { from: { path: ['event', 'created_at'] }, format: 'rfc3339' },
  },
  {
    name: 'openai',
    signature: standardSignature('whsec'),
    ...standardHeaders,
    type: { path: ['type'] },
    occurredAt: { from: { path: ['created_at'] }, format: 'unix' },
  },
  {
    name: 'polar',
    // Standard Webhooks, keyed with the secret's own bytes rather than its base64 decoding.
    signature: standardSignature('utf8'),
    ...standardHeaders,
    type: { path: ['type'] },
    occurredAt: { from: { path: ['timestamp'] }, format: 'rfc3339' },
  },
  {
    name: 'linear',
    signature: { headers: ['linear-signature'], encoding: 'hex', methods: [HMAC_SHA256] },
    signed: '{body}',
    // The signed time is inside the body; the delivery id is a header the signature does not cover.
    timestamp: { from: { path: ['webhookTimestamp'] }, format: 'unix-ms' },
    id: { header: 'linear-delivery' },
    type: { path: ['type'] },
    typeSuffix: ['action'],
    occurredAt: { from: { path: ['createdAt'] }, format: 'rfc3339' },
  },
  {
    name: 'razorpay',
    signature: { headers: ['x-razorpay-signature'], encoding: 'hex', methods: [HMAC_SHA256] },
    signed: '{body}',
    id: { header: 'x-razorpay-event-id' },
    type: { path: ['event'] },
    occurredAt: { from: { path: ['created_at'] }, format: 'unix' },
  },
  {
    name: 'line',
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
  },
  {
    name: 'easypost',
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
  },
  {
    name: 'gocardless',
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
  },
  {
    name: 'hubspot',
    signature: { headers: ['x-hubspot-signature-v3'], encoding: 'base64', methods: [HMAC_SHA256] },
    signed: '{method}{url}{body}{timestamp}',
    timestamp: { from: { header: 'x-hubspot-request-timestamp' }, format: 'unix-ms' },
    // An array of events, each stored under its own `eventId`; a retry raises their `attemptNumber`.
    events: { path: [] },
    id: { path: ['eventId'] },
    type: { path: ['subscriptionType'] },
    occurredAt: { from: { path: ['occurredAt'] }, format: 'unix-ms' },
    payload: eventsOf({ eventId: idValue, subscriptionType: boundedString }),
  },
  {
    name: 'square',
    signature: { headers: ['x-square-hmacsha256-signature'], encoding: 'base64', methods: [HMAC_SHA256] },
    signed: '{url}{body}',
    id: { path: ['event_id'] },
    type: { path: ['type'] },
    occurredAt: { from: { path: ['created_at'] }, format: 'rfc3339' },
  },
  {
    name: 'telnyx',
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
  },
  {
    name: 'zoom',
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
  },
  {
    name: 'notion',
    signature: { headers: ['x-notion-signature'], encoding: 'hex', prefix: 'sha256=', methods: [HMAC_SHA256] },
    signed: '{body}',
    id: { path: ['id'] },
    type: { path: ['type'] },
    occurredAt: { from: { path: ['timestamp'] }, format: 'rfc3339' },
  },
  {
    name: 'box',
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
  },
  {
    name: 'pagerduty',
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
  },
  {
    name: 'twilio',
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
  },
  {
    name: 'replicate',
    // Standard Webhooks; the event is the prediction itself, its `status` what happened to it.
    signature: standardSignature('whsec'),
    ...standardHeaders,
    type: { path: ['status'] },
    occurredAt: { from: 'timestamp', format: 'unix' },
  },
  {
    name: 'webflow',
    // Webflow signs OAuth apps' webhooks only (the app's client secret), with a millisecond time.
    signature: { headers: ['x-webflow-signature'], encoding: 'hex', methods: [HMAC_SHA256] },
    signed: '{timestamp}:{body}',
    timestamp: { from: { header: 'x-webflow-timestamp' }, format: 'unix-ms' },
    // No event id is sent; the signed body (with its time) is the key.
    id: { bodyDigest: true },
    type: { path: ['triggerType'] },
    occurredAt: { from: 'timestamp', format: 'unix-ms' },
  },
  {
    name: 'sanity',
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
  },
  {
    name: 'gitlab',
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
  },
];

function valueIsPing(payload: unknown): boolean {
  // Stryker disable next-line ConditionalExpression,LogicalOperator: answer runs only on a payload that passed discord's schema (an object with an integer `type`), so only `type === 0` can decide
  return typeof payload === 'object' && payload !== null && 'type' in payload && payload.type === 0;
}
