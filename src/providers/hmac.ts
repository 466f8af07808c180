// HMAC-SHA256 over exact bytes with Web Crypto: key import (once per secret), strict decoding of the
// signatures providers send, and verification against every configured key.
export type Bytes = Uint8Array<ArrayBuffer>;
/** Web Crypto's key type, named through the API so Node's and workerd's typings both fit. */
export type HmacKey = Awaited<ReturnType<typeof crypto.subtle.importKey>>;

const encoder = new TextEncoder();

export function utf8(text: string): Bytes {
  // TextEncoder always allocates a fresh ArrayBuffer; the typings only say ArrayBufferLike.
  return encoder.encode(text) as Bytes;
}

export function importHmacKey(secret: string | Bytes): Promise<HmacKey> {
  const raw = typeof secret === 'string' ? utf8(secret) : secret;
  return crypto.subtle.importKey('raw', raw, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign', 'verify']);
}

export async function signHmac(key: HmacKey, data: Bytes): Promise<Bytes> {
  return new Uint8Array(await crypto.subtle.sign('HMAC', key, data));
}

/**
 * True when `signature` is the HMAC of `data` under any of `keys`. Every key is tried, whatever the
 * earlier ones answered, and crypto.subtle.verify compares in constant time.
 */
export async function verifyWithAnyKey(keys: readonly HmacKey[], signature: Bytes, data: Bytes): Promise<boolean> {
  let valid = false;
  for (const key of keys) {
    if (await crypto.subtle.verify('HMAC', key, signature, data)) valid = true;
  }
  return valid;
}

/** `prefix` as UTF-8 followed by `body`: the signed content of timestamped schemes. */
export function prefixed(prefix: string, body: Bytes): Bytes {
  const head = utf8(prefix);
  const joined = new Uint8Array(head.byteLength + body.byteLength);
  joined.set(head, 0);
  joined.set(body, head.byteLength);
  return joined;
}

const SHA256_HEX = /^[0-9a-fA-F]{64}$/;

/** Exactly 64 hex digits, else null: nothing lenient for an attacker to probe. */
export function decodeSha256Hex(text: string | null | undefined): Bytes | null {
  if (text == null || !SHA256_HEX.test(text)) return null;
  const bytes = new Uint8Array(32);
  for (let i = 0; i < 32; i++) bytes[i] = Number.parseInt(text.slice(i * 2, i * 2 + 2), 16);
  return bytes;
}

export function encodeHex(bytes: Uint8Array): string {
  let hex = '';
  for (const byte of bytes) hex += byte.toString(16).padStart(2, '0');
  return hex;
}

const UNIX_SECONDS = /^[0-9]{1,12}$/;

/**
 * Whether a signed unix-seconds timestamp is within `toleranceSeconds` of now, past or future.
 * Exactly at the tolerance is accepted.
 */
export function isFreshTimestamp(
  text: string | null | undefined,
  nowSeconds: number,
  toleranceSeconds: number,
): boolean {
  if (text == null || !UNIX_SECONDS.test(text)) return false;
  return Math.abs(nowSeconds - Number(text)) <= toleranceSeconds;
}
