// Public keys of senders that sign with a private key, imported through Web Crypto (Node 20 and
// workerd both have Ed25519 and ECDSA P-256), and the strict decoding of the DER signatures ECDSA
// senders send. Keys are configured like secrets: the text the sender's dashboard shows. The
// private side (a PEM key and the DER signature it makes) is for signing as such a sender does.
import { afterPrefix, type Bytes, decodeBase64, decodeHex } from './encoding.ts';
import type { VerifyKey } from './verify.ts';

/** How a public key is written where the sender shows it. */
export type PublicKeyFormat =
  /** 64 hex digits of the raw Ed25519 key (Discord). */
  | 'hex'
  /** Base64 of the raw Ed25519 key (Telnyx). */
  | 'base64'
  /** `whpk_` + base64 of the raw Ed25519 key (Standard Webhooks; the prefix may be left out). */
  | 'whpk'
  /** Base64 of a DER SubjectPublicKeyInfo, or the same as PEM (SendGrid's ECDSA key). */
  | 'spki';

export type AsymmetricAlgorithm = 'Ed25519' | 'ECDSA-P256';

const ED25519_KEY_BYTES = 32;

function rawKeyBytes(text: string, format: 'hex' | 'base64' | 'whpk'): Bytes | null {
  const bytes =
    format === 'hex'
      ? decodeHex(text, ED25519_KEY_BYTES)
      : decodeBase64(format === 'whpk' ? (afterPrefix(text, 'whpk_') ?? text) : text);
  return bytes?.byteLength === ED25519_KEY_BYTES ? bytes : null;
}

const PEM_ARMOR = /-----(BEGIN|END) PUBLIC KEY-----/g;

/**
 * The verifying key for `text`, or a rejection saying what is wrong without echoing the key (a
 * public key is not secret, but the message stays in the same form as for secrets).
 */
export async function importPublicKey(
  text: string,
  algorithm: AsymmetricAlgorithm,
  format: PublicKeyFormat,
): Promise<VerifyKey> {
  if (algorithm === 'Ed25519') {
    const raw = format === 'spki' ? null : rawKeyBytes(text, format);
    if (raw === null) throw new Error(`every public key must be an Ed25519 key written as ${format}`);
    // Stryker disable next-line BooleanLiteral: extractable only allows exportKey, and no key is ever exported
    return crypto.subtle.importKey('raw', raw, { name: 'Ed25519' }, false, ['verify']);
  }
  const der = format === 'spki' ? decodeBase64(text.replace(PEM_ARMOR, '').replace(/\s+/g, '')) : null;
  if (der === null) throw new Error('every public key must be an ECDSA P-256 key, base64 DER (SPKI) or PEM');
  try {
    // Stryker disable next-line BooleanLiteral: extractable only allows exportKey, and no key is ever exported
    return await crypto.subtle.importKey('spki', der, { name: 'ECDSA', namedCurve: 'P-256' }, false, ['verify']);
  } catch {
    throw new Error('every public key must be an ECDSA P-256 key, base64 DER (SPKI) or PEM');
  }
}

/** Bytes of each coordinate of a P-256 signature in the form Web Crypto verifies (r || s). */
const P256_SCALAR_BYTES = 32;

/**
 * One DER INTEGER at `at`: its minimal, positive big-endian value, or null. Returns the value
 * without sign padding and the offset after it.
 */
function derInteger(der: Uint8Array, at: number): { value: Uint8Array; next: number } | null {
  if (der[at] !== 0x02) return null;
  const length = der[at + 1];
  if (length === undefined || length === 0 || length > P256_SCALAR_BYTES + 1) return null;
  const start = at + 2;
  const end = start + length;
  if (end > der.length) return null;
  const first = der[start] ?? 0;
  const second = der[start + 1];
  // Negative, or a leading zero that is not needed for the sign: not DER.
  if (first & 0x80) return null;
  if (first === 0 && length > 1 && second !== undefined && (second & 0x80) === 0) return null;
  const value = der.subarray(first === 0 && length > 1 ? start + 1 : start, end);
  return value.length > P256_SCALAR_BYTES ? null : { value, next: end };
}

/**
 * A DER `SEQUENCE { INTEGER r, INTEGER s }` (what SendGrid and most ECDSA libraries send) as the
 * 64-byte r || s Web Crypto verifies, or null when it is not strict DER of that shape.
 */
export function derToP1363(der: Uint8Array): Bytes | null {
  if (der[0] !== 0x30 || der[1] !== der.length - 2) return null;
  const r = derInteger(der, 2);
  const s = r === null ? null : derInteger(der, r.next);
  if (r === null || s === null || s.next !== der.length) return null;
  const raw = new Uint8Array(P256_SCALAR_BYTES * 2);
  raw.set(r.value, P256_SCALAR_BYTES - r.value.length);
  raw.set(s.value, P256_SCALAR_BYTES * 2 - s.value.length);
  return raw;
}

const PRIVATE_PEM_ARMOR = /-----(BEGIN|END) PRIVATE KEY-----/g;

/**
 * A PKCS#8 private key (PEM, as `openssl genpkey` writes it) to sign as a sender with `algorithm`
 * does, or a rejection saying which kind of key is expected, never echoing the key.
 */
export async function importPrivateKey(pem: string, algorithm: AsymmetricAlgorithm): Promise<VerifyKey> {
  const expected = `a PEM private key (PKCS#8, "BEGIN PRIVATE KEY") for ${algorithm}`;
  const der = decodeBase64(pem.replace(PRIVATE_PEM_ARMOR, '').replace(/\s+/g, ''));
  if (der === null || !pem.includes('BEGIN PRIVATE KEY')) throw new Error(`expected ${expected}`);
  const params = algorithm === 'Ed25519' ? { name: 'Ed25519' } : { name: 'ECDSA', namedCurve: 'P-256' };
  try {
    // Stryker disable next-line BooleanLiteral: extractable only allows exportKey, and no key is ever exported
    return await crypto.subtle.importKey('pkcs8', der, params, false, ['sign']);
  } catch {
    throw new Error(`expected ${expected}`);
  }
}

/** One unsigned big-endian integer as a minimal DER INTEGER (a zero byte before a high bit). */
function derIntegerOf(value: Uint8Array): number[] {
  let start = 0;
  while (start < value.length - 1 && value[start] === 0) start += 1;
  const digits = [...value.subarray(start)];
  if ((digits[0] ?? 0) & 0x80) digits.unshift(0);
  return [0x02, digits.length, ...digits];
}

/** Web Crypto's r || s ECDSA signature as the DER `SEQUENCE` senders send: derToP1363 undone. */
export function p1363ToDer(raw: Uint8Array): Bytes {
  const r = derIntegerOf(raw.subarray(0, P256_SCALAR_BYTES));
  const s = derIntegerOf(raw.subarray(P256_SCALAR_BYTES));
  return new Uint8Array([0x30, r.length + s.length, ...r, ...s]);
}
