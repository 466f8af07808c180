// `npm run bench:verify`: verifications per second of each scheme's verify() (signature check,
// JSON parse, envelope validation and, for GitHub/Shopify, the body digest) on a 2 KiB body, with
// keys imported once, as the service does. Deliveries are signed ahead of time with node:crypto,
// not the service's code. Prints figures per CPU second (one core's capacity) and per wall-clock
// second; asserts nothing about them.
import { createHmac, generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { allProviders } from '../src/providers/registry.ts';
import type { Delivery, VerificationTime } from '../src/providers/types.ts';
import { runContext, writeResult } from './lib/results.ts';
import { formatTable, round } from './lib/stats.ts';

const BODY_BYTES = 2048;
const TARGET_PER_SECOND = 20_000;
const WARMUP_MS = 300;
const MEASURE_MS = Number(process.env.BENCH_VERIFY_MS ?? 2000);
const IN_FLIGHT = [1, 16] as const;

const nowSeconds = Math.floor(Date.now() / 1000);
const time: VerificationTime = { nowSeconds, toleranceSeconds: 300 };
const timestamp = String(nowSeconds);

/** `fields` padded with a filler field to exactly BODY_BYTES of JSON. */
function bodyOf(fields: Record<string, unknown>): Buffer {
  const bare = JSON.stringify({ ...fields, filler: '' });
  const body = JSON.stringify({ ...fields, filler: 'x'.repeat(BODY_BYTES - Buffer.byteLength(bare)) });
  if (Buffer.byteLength(body) !== BODY_BYTES) throw new Error('body is not 2 KiB');
  return Buffer.from(body);
}

const hmac = (key: string | Buffer, ...parts: Array<string | Buffer>) => {
  const mac = createHmac('sha256', key);
  for (const part of parts) mac.update(part);
  return mac.digest();
};

interface Scheme {
  /** The secret, or for a sender signing with a private key, its public key as configured. */
  secret: string;
  publicKey?: true;
  body: Buffer;
  headers(body: Buffer, secret: string): Record<string, string>;
}

const standardKey = randomBytes(24);
const ed25519 = generateKeyPairSync('ed25519');
const p256 = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
const schemes: Record<string, Scheme> = {
  acme: {
    secret: 'bench-acme-secret',
    body: bodyOf({
      id: 'evt_1',
      type: 'invoice.paid',
      api_version: '2024-06-01',
      created: nowSeconds,
      version: 1,
      data: {},
    }),
    headers: (body, secret) => ({
      'x-acme-timestamp': timestamp,
      'x-acme-signature': hmac(secret, `${timestamp}.`, body).toString('hex'),
    }),
  },
  standard: {
    secret: `whsec_${standardKey.toString('base64')}`,
    body: bodyOf({ type: 'invoice.paid', timestamp: new Date().toISOString(), data: {} }),
    headers: (body) => ({
      'webhook-id': 'msg_1',
      'webhook-timestamp': timestamp,
      'webhook-signature': `v1,${hmac(standardKey, `msg_1.${timestamp}.`, body).toString('base64')}`,
    }),
  },
  stripe: {
    secret: 'whsec_bench0123456789abcdef',
    body: bodyOf({ id: 'evt_1', object: 'event', type: 'invoice.paid', created: nowSeconds, data: { object: {} } }),
    headers: (body, secret) => ({
      'stripe-signature': `t=${timestamp},v1=${hmac(secret, `${timestamp}.`, body).toString('hex')}`,
    }),
  },
  github: {
    secret: 'bench-github-secret',
    body: bodyOf({ action: 'opened', issue: { number: 1 } }),
    headers: (body, secret) => ({
      'x-hub-signature-256': `sha256=${hmac(secret, body).toString('hex')}`,
      'x-github-delivery': '72d3162e-cc78-11e3-81ab-4c9367dc0958',
      'x-github-event': 'issues',
    }),
  },
  shopify: {
    secret: 'bench-shopify-secret',
    body: bodyOf({ id: 820982911946154500, email: 'jon@example.com' }),
    headers: (body, secret) => ({
      'x-shopify-hmac-sha256': hmac(secret, body).toString('base64'),
      'x-shopify-webhook-id': 'b54557e4-bdd9-4b37-8a5f-bf7d70bcd043',
      'x-shopify-topic': 'orders/create',
    }),
  },
  slack: {
    secret: 'bench-slack-signing-secret',
    body: bodyOf({ type: 'event_callback', event_id: 'Ev1', event_time: nowSeconds, event: { type: 'message' } }),
    headers: (body, secret) => ({
      'x-slack-request-timestamp': timestamp,
      'x-slack-signature': `v0=${hmac(secret, `v0:${timestamp}:`, body).toString('hex')}`,
    }),
  },
  // The asymmetric ones, for their cost beside HMAC: Ed25519 and ECDSA P-256 verification.
  discord: {
    secret: Buffer.from(ed25519.publicKey.export({ format: 'jwk' }).x ?? '', 'base64url').toString('hex'),
    publicKey: true,
    body: bodyOf({ version: 1, application_id: '1', type: 1, event: { type: 'APPLICATION_AUTHORIZED' } }),
    headers: (body) => ({
      'x-signature-timestamp': timestamp,
      'x-signature-ed25519': sign(null, Buffer.concat([Buffer.from(timestamp), body]), ed25519.privateKey).toString(
        'hex',
      ),
    }),
  },
  sendgrid: {
    secret: p256.publicKey.export({ format: 'der', type: 'spki' }).toString('base64'),
    publicKey: true,
    body: Buffer.from(JSON.stringify([JSON.parse(bodyOf({ event: 'delivered' }).toString())])),
    headers: (body) => ({
      'x-twilio-email-event-webhook-timestamp': timestamp,
      'x-twilio-email-event-webhook-signature': sign(
        'sha256',
        Buffer.concat([Buffer.from(timestamp), body]),
        p256.privateKey,
      ).toString('base64'),
    }),
  },
};

interface Rate {
  /** Calls completed per second of wall-clock time. */
  perSecond: number;
  /**
   * Calls completed per second of CPU time used by this process, every thread included (Web Crypto
   * runs on libuv's pool): what one fully busy core would do. Steadier than wall-clock time on a
   * machine shared with other work.
   */
  perCpuSecond: number;
}

/** Runs `verify` with `inFlight` calls outstanding for `durationMs`. */
async function rate(verify: () => Promise<void>, inFlight: number, durationMs: number): Promise<Rate> {
  let completed = 0;
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  const deadline = started + durationMs;
  const lane = async () => {
    while (performance.now() < deadline) {
      await verify();
      completed += 1;
    }
  };
  await Promise.all(Array.from({ length: inFlight }, lane));
  const wallSeconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  const cpuSeconds = (cpu.user + cpu.system) / 1e6;
  return { perSecond: round(completed / wallSeconds, 0), perCpuSecond: round(completed / cpuSeconds, 0) };
}

const startedAt = new Date();
/**
 * The target is for schemes signed with a shared secret (an HMAC); a sender that signs with a
 * private key (Ed25519, ECDSA) costs a public-key verification, several times dearer, and has none.
 */
type Signature = 'shared secret' | 'public key';
const results: Array<{ scheme: string; inFlight: number; signature: Signature } & Rate> = [];
// The original six schemes, compared across releases, and two asymmetric ones; the other senders
// run the same engine.
for (const provider of allProviders.filter((candidate) => Object.hasOwn(schemes, candidate.name))) {
  const scheme = schemes[provider.name];
  if (scheme === undefined) continue;
  const keys = scheme.publicKey
    ? await provider.importKeys([], [scheme.secret])
    : await provider.importKeys([scheme.secret]);
  const delivery: Delivery = {
    body: new Uint8Array(scheme.body),
    headers: new Headers({ 'content-type': 'application/json', ...scheme.headers(scheme.body, scheme.secret) }),
  };
  const verify = async () => {
    const outcome = await provider.verify(delivery, keys, time);
    if (outcome.outcome !== 'verified') throw new Error(`${provider.name}: ${outcome.outcome}, not verified`);
  };
  for (const inFlight of IN_FLIGHT) {
    await rate(verify, inFlight, WARMUP_MS);
    const signature: Signature = scheme.publicKey ? 'public key' : 'shared secret';
    results.push({ scheme: provider.name, inFlight, signature, ...(await rate(verify, inFlight, MEASURE_MS)) });
  }
}

const cores = availableParallelism();
console.log(
  formatTable(
    `verify() per CPU second, ${BODY_BYTES}-byte body, keys imported once (${cores} core${cores === 1 ? '' : 's'} available)`,
    results.map((result) => ({
      label: `${result.scheme.padEnd(8)} ${result.inFlight === 1 ? 'one at a time' : `${result.inFlight} in flight`}`,
      value: result.perCpuSecond,
      note:
        `wall clock ${result.perSecond}/s` +
        (result.signature === 'public key'
          ? ', public key (no target)'
          : result.perCpuSecond >= TARGET_PER_SECOND
            ? ''
            : `, below ${TARGET_PER_SECOND}`),
    })),
  ),
);
if (cores > 1) console.log(`\nFor wall-clock figures on one core, run \`taskset -c 0 npm run bench:verify\`.`);
const file = writeResult('verify', startedAt, { ...runContext(), cores, bodyBytes: BODY_BYTES, results });
console.log(`\nresults: ${file}`);
