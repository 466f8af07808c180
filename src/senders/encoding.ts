// Exact bytes, and the strict decoding of what senders write (hex, base64, base64url): one
// canonical form each, so that nothing lenient is left to probe.

export type Bytes = Uint8Array<ArrayBuffer>;

const encoder = new TextEncoder();

export function utf8(text: string): Bytes {
  // TextEncoder always allocates a fresh ArrayBuffer; the typings only say ArrayBufferLike.
  return encoder.encode(text) as Bytes;
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
