// A key whose Web Crypto verify throws (a usage or an algorithm it was not imported for) must count
// as a mismatch, never as a valid signature (issue 16, item 13). Each case first proves the runtime
// really throws for that key, then that the signature, genuine for the key's material, is refused:
// by verifyWithAnyKey for HMAC, Ed25519 and ECDSA keys, and over HTTP, where nothing may be stored.
import { describe, expect, it } from 'vitest';
import { type Bytes, utf8 } from '../src/senders/encoding.ts';
import { importHmacKey, signHmac } from '../src/senders/hmac.ts';
import { enableSenders } from '../src/senders/registry.ts';
import { type VerifyKey, verifyWithAnyKey } from '../src/senders/verify.ts';
import { acmeEvent, signedHeaders, TEST_SECRET } from './helpers/acme.ts';
import { buildTestApp } from './helpers/app.ts';
import { useTestDatabase } from './helpers/database.ts';
import { countEvents } from './helpers/facts.ts';

const { sql, db } = await useTestDatabase();
const data = utf8('1767225590.{"id":"evt_1"}');

/** The same HMAC secret imported for signing only: verify with it throws InvalidAccessError. */
const signOnlyHmac = () =>
  crypto.subtle.importKey('raw', new TextEncoder().encode(TEST_SECRET), { name: 'HMAC', hash: 'SHA-256' }, false, [
    'sign',
  ]);

/** A fresh key pair's private half: it signs, and verify with it throws (wrong usage, wrong key type). */
async function privateKey(algorithm: { name: 'Ed25519' } | { name: 'ECDSA'; namedCurve: 'P-256' }): Promise<VerifyKey> {
  const pair = await crypto.subtle.generateKey(algorithm, false, ['sign', 'verify']);
  if (!('privateKey' in pair)) throw new Error('not a key pair');
  return pair.privateKey;
}

async function throwingCases(): Promise<Array<{ name: string; key: VerifyKey; algorithm: string; bytes: Bytes }>> {
  const hmac = await signOnlyHmac();
  const ed = await privateKey({ name: 'Ed25519' });
  const ec = await privateKey({ name: 'ECDSA', namedCurve: 'P-256' });
  return [
    { name: 'HMAC key without the verify usage', key: hmac, algorithm: 'HMAC', bytes: await signHmac(hmac, data) },
    {
      // A private key: signs, cannot verify.
      name: 'Ed25519 private key',
      key: ed,
      algorithm: 'Ed25519',
      bytes: new Uint8Array(await crypto.subtle.sign('Ed25519', ed, data)),
    },
    {
      name: 'ECDSA private key',
      key: ec,
      algorithm: 'ECDSA',
      bytes: new Uint8Array(await crypto.subtle.sign({ name: 'ECDSA', hash: 'SHA-256' }, ec, data)),
    },
  ];
}

describe('a verify that throws is never a valid signature', () => {
  it('verifyWithAnyKey refuses a genuine signature under a key the runtime cannot verify with', async () => {
    for (const { name, key, algorithm, bytes } of await throwingCases()) {
      const params = algorithm === 'ECDSA' ? { name: 'ECDSA', hash: 'SHA-256' } : algorithm;
      await expect(crypto.subtle.verify(params, key, bytes, data), name).rejects.toThrow();
      expect(await verifyWithAnyKey([key], [{ algorithm, bytes }], data), name).toBe(false);
    }
  });

  it('a throwing key neither blocks nor replaces the next key (rotation still works)', async () => {
    const good = await importHmacKey(TEST_SECRET);
    const throwing = await signOnlyHmac();
    const bytes = await signHmac(good, data);
    expect(await verifyWithAnyKey([throwing, good], [{ algorithm: 'HMAC', bytes }], data)).toBe(true);
    const wrong = await importHmacKey('another-secret-entirely');
    expect(await verifyWithAnyKey([throwing, wrong], [{ algorithm: 'HMAC', bytes }], data)).toBe(false);
  });

  it('over HTTP: a correctly signed delivery checked only by a throwing key is 401 and stores nothing', async () => {
    const [acme] = (await enableSenders({ acme: [TEST_SECRET] })).values();
    if (acme === undefined) throw new Error('acme not enabled');
    const enabledSenders = new Map([['acme', { ...acme, keys: [await signOnlyHmac()] }]]);
    const app = await buildTestApp(db, { enabledSenders });
    const event = acmeEvent();
    const body = JSON.stringify(event);
    const response = await app.request('/webhooks/acme', { method: 'POST', body, headers: await signedHeaders(body) });
    expect(response.status).toBe(401);
    expect(await response.json()).toEqual({ error: 'unauthorized' });
    expect(await countEvents(sql, event.id)).toBe(0);

    // The same delivery under a key that can verify is accepted: the refusal above was the throw's.
    const accepting = await buildTestApp(db, { enabledSenders: await enableSenders({ acme: [TEST_SECRET] }) });
    const accepted = await accepting.request('/webhooks/acme', {
      method: 'POST',
      body,
      headers: await signedHeaders(body),
    });
    expect(accepted.status).toBe(200);
    expect(await countEvents(sql, event.id)).toBe(1);
  });
});
