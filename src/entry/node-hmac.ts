// Node's own HMAC for signature checks (the NativeHmacVerify seam of src/providers/verify.ts):
// node:crypto's createHmac over the Web Crypto key's secret, compared with timingSafeEqual. On Node
// 26 crypto.subtle.verify costs about ten times the CPU (a promise, a job on libuv's pool and its
// hand-back per call) for the same answer; the Worker keeps Web Crypto, which is native there.
import { createHmac, KeyObject, timingSafeEqual } from 'node:crypto';
import type { NativeHmacVerify, VerifyKey } from '../providers/verify.ts';

/** Node's digest names for the hashes HMAC keys are imported with (hmac.ts). */
const NODE_DIGESTS: ReadonlyMap<string, string> = new Map([
  ['SHA-1', 'sha1'],
  ['SHA-256', 'sha256'],
  ['SHA-512', 'sha512'],
]);

interface NodeKey {
  secret: KeyObject;
  digest: string;
}

/** Each key's secret as a KeyObject, once; null for a key Node cannot read (not extractable). */
const nodeKeys = new WeakMap<VerifyKey, NodeKey | null>();

function nodeKeyOf(key: VerifyKey): NodeKey | null {
  let known = nodeKeys.get(key);
  if (known === undefined) {
    // An HMAC key's algorithm names its hash (Web Crypto's HmacKeyAlgorithm).
    const { hash } = key.algorithm as { hash?: { name: string } };
    const digest = hash === undefined ? undefined : NODE_DIGESTS.get(hash.name);
    known = key.extractable && digest !== undefined ? { secret: KeyObject.from(key), digest } : null;
    nodeKeys.set(key, known);
  }
  return known;
}

export const nodeHmacVerify: NativeHmacVerify = (key, signature, data) => {
  const nodeKey = nodeKeyOf(key);
  if (nodeKey === null) return undefined;
  const mac = createHmac(nodeKey.digest, nodeKey.secret).update(data).digest();
  // The length is public (each digest has one); the bytes are compared in constant time.
  return mac.byteLength === signature.byteLength && timingSafeEqual(mac, signature);
};
