// Verification against every configured key whatever its algorithm (HMAC, Ed25519, ECDSA P-256):
// the keys are imported by hmac.ts and asymmetric.ts, the signatures decoded by the described engine.
import type { Bytes } from './encoding.ts';

/**
 * Web Crypto's key type, named through the API so Node's and workerd's typings both fit: an HMAC
 * key, or the public key of a sender signing with a private key.
 */
export type VerifyKey = Awaited<ReturnType<typeof crypto.subtle.importKey>>;

/** A decoded signature and the key algorithm it is meant for (`HMAC`, `Ed25519`, `ECDSA`). */
export interface Signature {
  algorithm: string;
  bytes: Bytes;
}

/** Web Crypto's verify parameters for a key, by the algorithm it was imported for. */
function verifyParams(key: VerifyKey): Parameters<typeof crypto.subtle.verify>[0] {
  return key.algorithm.name === 'ECDSA' ? { name: 'ECDSA', hash: 'SHA-256' } : key.algorithm.name;
}

/**
 * The first of `signatures` (keys in order, then signatures) that verifies `data` under any of `keys`
 * of its algorithm (rotation on our side, several signatures on the sender's), or undefined when none
 * does. Every pair is tried, whatever the earlier ones answered, and crypto.subtle.verify compares in
 * constant time. A verify that throws (a key the runtime cannot use that way) counts as a mismatch,
 * never as a valid signature. The one returned is the same for every copy of a delivery, whatever
 * invalid signatures a copy adds: it names the delivery (the described engine's fingerprint).
 */
export async function verifiedSignature(
  keys: readonly VerifyKey[],
  signatures: readonly Signature[],
  data: Bytes,
): Promise<Signature | undefined> {
  let valid: Signature | undefined;
  for (const key of keys) {
    for (const signature of signatures) {
      if (signature.algorithm !== key.algorithm.name) continue;
      try {
        if (await crypto.subtle.verify(verifyParams(key), key, signature.bytes, data)) valid ??= signature;
      } catch {
        // Not valid: see above.
      }
    }
  }
  return valid;
}

/** True when any of `signatures` verifies `data` under any of `keys` (verifiedSignature). */
export async function verifyWithAnyKey(
  keys: readonly VerifyKey[],
  signatures: readonly Signature[],
  data: Bytes,
): Promise<boolean> {
  return (await verifiedSignature(keys, signatures, data)) !== undefined;
}
