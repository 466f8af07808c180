// Senders that sign with a private key, verified inside workerd: Ed25519 (Discord) and ECDSA P-256
// (SendGrid) through Web Crypto, keys configured as the senders' dashboards show them. The
// signatures are made here with workerd's own Web Crypto; the Node suite checks the same senders
// against their publishers' SDKs (test/senders.test.ts).
import { createExecutionContext, waitOnExecutionContext } from 'cloudflare:test';
import { env } from 'cloudflare:workers';
import postgres from 'postgres';
import { afterAll, describe, expect, it } from 'vitest';
import worker from '../../src/entry/worker.ts';

const sql = postgres(env.HYPERDRIVE.connectionString, { max: 2, fetch_types: false, onnotice: () => {} });
afterAll(() => sql.end());

const encoder = new TextEncoder();
const hex = (bytes: ArrayBuffer) =>
  [...new Uint8Array(bytes)].map((byte) => byte.toString(16).padStart(2, '0')).join('');
const base64 = (bytes: ArrayBuffer | Uint8Array) => btoa(String.fromCharCode(...new Uint8Array(bytes)));

/** r || s as the DER `SEQUENCE { INTEGER r, INTEGER s }` SendGrid sends. */
function der(raw: ArrayBuffer): Uint8Array {
  const integer = (half: Uint8Array) => {
    let start = 0;
    while (start < half.length - 1 && half[start] === 0) start++;
    const value = half.subarray(start);
    const padded = (value[0] ?? 0) & 0x80 ? [0, ...value] : [...value];
    return [0x02, padded.length, ...padded];
  };
  const bytes = new Uint8Array(raw);
  const body = [...integer(bytes.subarray(0, 32)), ...integer(bytes.subarray(32))];
  return new Uint8Array([0x30, body.length, ...body]);
}

const ed25519 = (await crypto.subtle.generateKey({ name: 'Ed25519' }, true, ['sign', 'verify'])) as CryptoKeyPair;
const p256 = (await crypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, [
  'sign',
  'verify',
])) as CryptoKeyPair;
const bindings = {
  ...env,
  DISCORD_WEBHOOK_PUBLIC_KEY: hex((await crypto.subtle.exportKey('raw', ed25519.publicKey)) as ArrayBuffer),
  SENDGRID_WEBHOOK_PUBLIC_KEY: base64((await crypto.subtle.exportKey('spki', p256.publicKey)) as ArrayBuffer),
} as Env;

async function post(name: string, body: string, headers: Record<string, string>): Promise<Response> {
  const ctx = createExecutionContext();
  const request = new Request(`https://inbox.test/webhooks/${name}`, {
    method: 'POST',
    body,
    headers: { 'content-type': 'application/json', ...headers },
  });
  const response = await worker.fetch(request, bindings, ctx);
  await waitOnExecutionContext(ctx);
  return response;
}

const now = () => String(Math.floor(Date.now() / 1000));
const rows = async (provider: string) =>
  (await sql<{ n: number }[]>`select count(*)::int as n from webhook_events where provider = ${provider}`)[0]?.n;

describe('asymmetric signatures in workerd', () => {
  it('verifies Discord (Ed25519): stored once, a changed body refused, a PING answered 204', async () => {
    const body = JSON.stringify({
      version: 1,
      application_id: '1',
      type: 1,
      event: { type: 'APPLICATION_AUTHORIZED', timestamp: new Date().toISOString(), data: { id: crypto.randomUUID() } },
    });
    const timestamp = now();
    const signature = hex(
      await crypto.subtle.sign('Ed25519', ed25519.privateKey, encoder.encode(`${timestamp}${body}`)),
    );
    const headers = { 'x-signature-timestamp': timestamp, 'x-signature-ed25519': signature };
    const before = await rows('discord');

    expect(await (await post('discord', body, headers)).text()).toBe('{"received":true}');
    expect(await (await post('discord', body, headers)).text()).toBe('{"received":true,"duplicate":true}');
    expect((await post('discord', body.replace('{', '{ '), headers)).status).toBe(401);

    const ping = '{"version":1,"application_id":"1","type":0}';
    const pingSignature = hex(
      await crypto.subtle.sign('Ed25519', ed25519.privateKey, encoder.encode(`${timestamp}${ping}`)),
    );
    const pong = await post('discord', ping, {
      'x-signature-timestamp': timestamp,
      'x-signature-ed25519': pingSignature,
    });
    expect(pong.status).toBe(204);
    expect(await pong.text()).toBe('');
    expect(await rows('discord')).toBe((before ?? 0) + 1);
  });

  it('verifies SendGrid (ECDSA P-256, DER signature): stored once, a changed body refused', async () => {
    const body = JSON.stringify([{ email: 'a@example.com', event: 'delivered', sg_event_id: crypto.randomUUID() }]);
    const timestamp = now();
    const raw = await crypto.subtle.sign(
      { name: 'ECDSA', hash: 'SHA-256' },
      p256.privateKey,
      encoder.encode(`${timestamp}${body}`),
    );
    const headers = {
      'x-twilio-email-event-webhook-timestamp': timestamp,
      'x-twilio-email-event-webhook-signature': base64(der(raw as ArrayBuffer)),
    };
    const before = await rows('sendgrid');

    expect(await (await post('sendgrid', body, headers)).text()).toBe('{"received":true}');
    expect(await (await post('sendgrid', body, headers)).text()).toBe('{"received":true,"duplicate":true}');
    expect((await post('sendgrid', body.replace('[', '[ '), headers)).status).toBe(401);
    // The raw r || s form is not what SendGrid sends: strict DER only.
    const rawHeaders = { ...headers, 'x-twilio-email-event-webhook-signature': base64(raw as ArrayBuffer) };
    expect((await post('sendgrid', body, rawHeaders)).status).toBe(401);
    expect(await rows('sendgrid')).toBe((before ?? 0) + 1);
  });
});
