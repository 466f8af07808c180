// HMAC over exact bytes through Web Crypto: the digests senders use, key import (once per secret)
// and signing (what the simulator and Zoom's URL validation sign with). Verifying is verify.ts's.
import { type Bytes, utf8 } from './encoding.ts';
import type { VerifyKey } from './verify.ts';

/** The digests HMAC schemes use; SHA-1 only where a sender still signs with it (Twilio). */
export type HmacHash = 'SHA-1' | 'SHA-256' | 'SHA-512';

/** Bytes of each HMAC digest: a signature of another length is malformed, not merely wrong. */
export const HMAC_BYTES: Readonly<Record<HmacHash, number>> = { 'SHA-1': 20, 'SHA-256': 32, 'SHA-512': 64 };

export function importHmacKey(secret: string | Bytes, hash: HmacHash = 'SHA-256'): Promise<VerifyKey> {
  const raw = typeof secret === 'string' ? utf8(secret) : secret;
  return crypto.subtle.importKey('raw', raw, { name: 'HMAC', hash }, false, ['sign', 'verify']);
}

export async function signHmac(key: VerifyKey, data: Bytes): Promise<Bytes> {
  return new Uint8Array(await crypto.subtle.sign('HMAC', key, data));
}
