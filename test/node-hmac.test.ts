// Node's own HMAC (src/entry/node-hmac.ts) answers as Web Crypto does, for every hash the schemes
// use, and leaves keys it cannot read to Web Crypto; through a scheme's verify, the same verdicts.
import { describe, expect, it } from 'vitest';
import { nodeHmacVerify } from '../src/entry/node-hmac.ts';
import { utf8 } from '../src/providers/encoding.ts';
import { type HmacHash, importHmacKey, signHmac } from '../src/providers/hmac.ts';
import { verifyWithAnyKey } from '../src/providers/verify.ts';

const data = utf8('1733300000.{"id":"evt_1","type":"subscription.updated"}');

describe('Node HMAC verification', () => {
  it.each(['SHA-1', 'SHA-256', 'SHA-512'] as const)('agrees with Web Crypto for %s', async (hash: HmacHash) => {
    const key = await importHmacKey('a-secret-of-some-entropy-1234', hash);
    const other = await importHmacKey('another-secret-of-entropy-5678', hash);
    const signature = await signHmac(key, data);
    expect(nodeHmacVerify(key, signature, data)).toBe(true);
    expect(nodeHmacVerify(other, signature, data)).toBe(false);
    const flipped = signature.slice();
    flipped[0] = (flipped[0] ?? 0) ^ 1;
    expect(nodeHmacVerify(key, flipped, data)).toBe(false);
    expect(nodeHmacVerify(key, signature.slice(0, 16), data)).toBe(false);
    expect(nodeHmacVerify(key, signature, utf8('tampered'))).toBe(false);
    for (const [keys, expected] of [
      [[key], true],
      [[other], false],
      [[other, key], true],
    ] as const) {
      const signatures = [{ algorithm: 'HMAC', bytes: signature }];
      expect(await verifyWithAnyKey(keys, signatures, data, nodeHmacVerify)).toBe(expected);
      expect(await verifyWithAnyKey(keys, signatures, data)).toBe(expected);
    }
  });

  it('leaves a key it cannot read to Web Crypto', async () => {
    const key = await crypto.subtle.importKey(
      'raw',
      utf8('a-secret-of-some-entropy-1234'),
      { name: 'HMAC', hash: 'SHA-256' },
      false,
      ['sign', 'verify'],
    );
    const signature = new Uint8Array(await crypto.subtle.sign('HMAC', key, data));
    expect(nodeHmacVerify(key, signature, data)).toBeUndefined();
    expect(await verifyWithAnyKey([key], [{ algorithm: 'HMAC', bytes: signature }], data, nodeHmacVerify)).toBe(true);
  });
});
