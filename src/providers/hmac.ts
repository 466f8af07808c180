// Web Crypto over exact bytes: HMAC key import (once per secret), strict decoding of the signatures
// senders send (hex, base64), verification against every configured key whatever its algorithm
// (HMAC, Ed25519, ECDSA P-256: asymmetric.ts imports those), and the SHA-256 digest that keys
// schemes whose delivery id is not signed.
export type Bytes = Uint8Array<ArrayBuffer>;
/**
 * Web Crypto's key type, named through the API so Node's and workerd's typings both fit: an HMAC
 * key, or the public key of a sender signing with a private key.
 */
export type VerifyKey = Awaited<ReturnType<typeof crypto.subtle.importKey>>;

/** The digests HMAC schemes use; SHA-1 only where a sender still signs with it (Twilio). */
export type HmacHash = 'SHA-1' | 'SHA-256' | 'SHA-512';

/** Bytes of each HMAC digest: a signature of another length is malformed, not merely wrong. */
export const HMAC_BYTES: Readonly<Record<HmacHash, number>> = { 'SHA-1': 20, 'SHA-256': 32, 'SHA-512': 64 };

/** A decoded signature and the key algorithm it is meant for (`HMAC`, `Ed25519`, `ECDSA`). */
export interface Signature {
  algorithm: string;
  bytes: Bytes;
}

const encoder = new TextEncoder();

export function utf8(text: string): Bytes {
  // TextEncoder always allocates a fresh ArrayBuffer; the typings only say ArrayBufferLike.
  return encoder.encode(text) as Bytes;
}

export function importHmacKey(secret: string | Bytes, hash: HmacHash = 'SHA-256'): Promise<VerifyKey> {
  const raw = typeof secret === 'string' ? utf8(secret) : secret;
  return crypto.subtle.importKey('raw', raw, { name: 'HMAC', hash }, false, ['sign', 'verify']);
}

export async function signHmac(key: VerifyKey, data: Bytes): Promise<Bytes> {
  return new Uint8Array(await crypto.subtle.sign('HMAC', key, data));
}

/** Web Crypto's verify parameters for a key, by the algorithm it was imported for. */
function verifyParams(key: VerifyKey): Parameters<typeof crypto.subtle.verify>[0] {
  return key.algorithm.name === 'ECDSA' ? { name: 'ECDSA', hash: 'SHA-256' } : key.algorithm.name;
}

/**
 * True when any of `signatures` verifies `data` under any of `keys` of its algorithm (rotation on
 * our side, several signatures on the sender's). Every pair is tried, whatever the earlier ones
 * answered, and crypto.subtle.verify compares in constant time. A verify that throws (a key the
 * runtime cannot use that way) counts as a mismatch, never as a valid signature.
 */
export async function verifyWithAnyKey(
  keys: readonly VerifyKey[],
  signatures: readonly Signature[],
  data: Bytes,
): Promise<boolean> {
  let valid = false;
  for (const key of keys) {
    for (const signature of signatures) {
      if (signature.algorithm !== key.algorithm.name) continue;
      try {
        if (await crypto.subtle.verify(verifyParams(key), key, signature.bytes, data)) valid = true;
      } catch {
        // Not valid: see above.
      }
    }
  }
  return valid;
}

/** Hex SHA-256 of exact bytes: the content digest of schemes whose delivery id is not signed. */
export async function sha256Hex(data: Bytes): Promise<string> {
  return encodeHex(new Uint8Array(await crypto.subtle.digest('SHA-256', data)));
}

/** `prefix` as UTF-8 followed by `body`: the signed content of timestamped schemes. */
export function prefixed(prefix: string, body: Bytes): Bytes {
  const head = utf8(prefix);
  const joined = new Uint8Array(head.byteLength + body.byteLength);
  joined.set(head, 0);
  joined.set(body, head.byteLength);
  return joined;
}

const HEX = /^[0-9a-fA-F]+$/;

/** Hex digits of exactly `length` bytes (any length when omitted), else null: nothing lenient to probe. */
export function decodeHex(text: string | null | undefined, length?: number): Bytes | null {
  if (text == null || text.length % 2 !== 0 || (length !== undefined && text.length !== length * 2)) return null;
  if (!HEX.test(text)) return null;
  const bytes = new Uint8Array(text.length / 2);
  for (let i = 0; i < bytes.length; i++) bytes[i] = Number.parseInt(text.slice(i * 2, i * 2 + 2), 16);
  return bytes;
}

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/**
 * Padded standard base64 only, else null. atob alone would accept whitespace, missing padding and
 * non-zero trailing bits, so the text is checked first and must survive a round trip.
 */
export function decodeBase64(text: string | null | undefined): Bytes | null {
  if (text == null || !BASE64.test(text)) return null;
  const binary = atob(text);
  if (btoa(binary) !== text) return null;
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

const BASE64URL = /^[A-Za-z0-9_-]*$/;

/**
 * Unpadded base64url (RFC 4648 §5, as Sanity writes it) only, else null: the same canonical form
 * checked through the standard alphabet, so no padding, no other alphabet, no stray trailing bits.
 */
export function decodeBase64Url(text: string | null | undefined): Bytes | null {
  if (text == null || !BASE64URL.test(text) || text.length % 4 === 1) return null;
  const standard = text.replaceAll('-', '+').replaceAll('_', '/');
  return decodeBase64(standard.padEnd(standard.length + ((4 - (standard.length % 4)) % 4), '='));
}

/** The rest of `text` after `prefix`, or null when it does not start with it. */
export function afterPrefix(text: string | null | undefined, prefix: string): string | null {
  return text?.startsWith(prefix) ? text.slice(prefix.length) : null;
}

export function encodeHex(bytes: Uint8Array): string {
  let hex = '';
  for (const byte of bytes) hex += byte.toString(16).padStart(2, '0');
  return hex;
}
