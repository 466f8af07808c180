// bench:verify's synthetic deliveries: one 2 KiB body per scheme, signed with node:crypto (not the
// service's code) the way each sender signs. Kept apart from the bench so test/bench-inputs.test.ts
// checks the very deliveries the bench times against the senders' own verify().
import { createHmac, generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import type { Delivery } from '../../src/senders/types.ts';

export const BODY_BYTES = 2048;

/** `fields` padded with a filler field to exactly `bytes` of JSON. */
function bodyOf(fields: Record<string, unknown>, bytes = BODY_BYTES): Buffer {
  const bare = JSON.stringify({ ...fields, filler: '' });
  const body = JSON.stringify({ ...fields, filler: 'x'.repeat(bytes - Buffer.byteLength(bare)) });
  if (Buffer.byteLength(body) !== bytes) throw new Error(`body is not ${bytes} bytes`);
  return Buffer.from(body);
}

/** A batch sender's body: a JSON array of one event, BODY_BYTES in all. */
const batchOf = (fields: Record<string, unknown>) => Buffer.from(`[${bodyOf(fields, BODY_BYTES - 2)}]`);

const hmac = (key: string | Buffer, ...parts: Array<string | Buffer>) => {
  const mac = createHmac('sha256', key);
  for (const part of parts) mac.update(part);
  return mac.digest();
};

export interface VerifyScheme {
  /** The secret, or for a sender signing with a private key, its public key as configured. */
  secret: string;
  publicKey?: true;
  body: Buffer;
  headers: Record<string, string>;
}

/** Every scheme bench:verify measures, keyed by provider name, signed for `nowSeconds`. */
export function verifySchemes(nowSeconds: number): Record<string, VerifyScheme> {
  const timestamp = String(nowSeconds);
  const standardKey = randomBytes(24);
  const ed25519 = generateKeyPairSync('ed25519');
  const p256 = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const scheme = (
    secret: string,
    body: Buffer,
    headers: (body: Buffer) => Record<string, string>,
    publicKey?: true,
  ): VerifyScheme => ({ secret, body, headers: headers(body), ...(publicKey ? { publicKey } : {}) });
  const acmeSecret = 'bench-acme-secret';
  const stripeSecret = 'whsec_bench0123456789abcdef';
  const githubSecret = 'bench-github-secret';
  const shopifySecret = 'bench-shopify-secret';
  const slackSecret = 'bench-slack-signing-secret';
  return {
    acme: scheme(
      acmeSecret,
      bodyOf({
        id: 'evt_1',
        type: 'invoice.paid',
        api_version: '2024-06-01',
        created: nowSeconds,
        version: 1,
        data: {},
      }),
      (body) => ({
        'x-acme-timestamp': timestamp,
        'x-acme-signature': hmac(acmeSecret, `${timestamp}.`, body).toString('hex'),
      }),
    ),
    standard: scheme(
      `whsec_${standardKey.toString('base64')}`,
      bodyOf({ type: 'invoice.paid', timestamp: new Date(nowSeconds * 1000).toISOString(), data: {} }),
      (body) => ({
        'webhook-id': 'msg_1',
        'webhook-timestamp': timestamp,
        'webhook-signature': `v1,${hmac(standardKey, `msg_1.${timestamp}.`, body).toString('base64')}`,
      }),
    ),
    stripe: scheme(
      stripeSecret,
      bodyOf({ id: 'evt_1', object: 'event', type: 'invoice.paid', created: nowSeconds, data: { object: {} } }),
      (body) => ({
        'stripe-signature': `t=${timestamp},v1=${hmac(stripeSecret, `${timestamp}.`, body).toString('hex')}`,
      }),
    ),
    github: scheme(githubSecret, bodyOf({ action: 'opened', issue: { number: 1 } }), (body) => ({
      'x-hub-signature-256': `sha256=${hmac(githubSecret, body).toString('hex')}`,
      'x-github-delivery': '72d3162e-cc78-11e3-81ab-4c9367dc0958',
      'x-github-event': 'issues',
    })),
    shopify: scheme(shopifySecret, bodyOf({ id: 820982911946154500, email: 'jon@example.com' }), (body) => ({
      'x-shopify-hmac-sha256': hmac(shopifySecret, body).toString('base64'),
      'x-shopify-webhook-id': 'b54557e4-bdd9-4b37-8a5f-bf7d70bcd043',
      'x-shopify-topic': 'orders/create',
    })),
    slack: scheme(
      slackSecret,
      bodyOf({ type: 'event_callback', event_id: 'Ev1', event_time: nowSeconds, event: { type: 'message' } }),
      (body) => ({
        'x-slack-request-timestamp': timestamp,
        'x-slack-signature': `v0=${hmac(slackSecret, `v0:${timestamp}:`, body).toString('hex')}`,
      }),
    ),
    // The asymmetric ones, for their cost beside HMAC: Ed25519 and ECDSA P-256 verification.
    discord: scheme(
      Buffer.from(ed25519.publicKey.export({ format: 'jwk' }).x ?? '', 'base64url').toString('hex'),
      bodyOf({ version: 1, application_id: '1', type: 1, event: { type: 'APPLICATION_AUTHORIZED' } }),
      (body) => ({
        'x-signature-timestamp': timestamp,
        'x-signature-ed25519': sign(null, Buffer.concat([Buffer.from(timestamp), body]), ed25519.privateKey).toString(
          'hex',
        ),
      }),
      true,
    ),
    // SendGrid posts a batch: an array of events, each with its own `sg_event_id`.
    sendgrid: scheme(
      p256.publicKey.export({ format: 'der', type: 'spki' }).toString('base64'),
      batchOf({ sg_event_id: 'sg_evt_1', event: 'delivered', timestamp: nowSeconds, email: 'a@example.com' }),
      (body) => ({
        'x-twilio-email-event-webhook-timestamp': timestamp,
        'x-twilio-email-event-webhook-signature': sign(
          'sha256',
          Buffer.concat([Buffer.from(timestamp), body]),
          p256.privateKey,
        ).toString('base64'),
      }),
      true,
    ),
  };
}

/** The request the provider's verify() sees for `scheme`. */
export function verifyDelivery(scheme: VerifyScheme): Delivery {
  return {
    body: new Uint8Array(scheme.body),
    headers: new Headers({ 'content-type': 'application/json', ...scheme.headers }),
  };
}
