// Exact bytes, and the strict decoding of what senders write (hex, base64, base64url): one
// canonical form each, so that nothing lenient is left to probe.

export type Bytes = Uint8Array<ArrayBuffer>;

const encoder = new TextEncoder();

export function utf8(text: string): Bytes {
  // TextEncoder always allocates a fresh ArrayBuffer; the typings only say ArrayBufferLike.
  return encoder.encode(text) as Bytes;
}

/** `prefix` as UTF-8 followed by `body`: the signed content of senders that sign a time. */
export function prefixed(prefix: string, body: Bytes): Bytes {
  const head = utf8(prefix);
  const joined = new Uint8Array(head.byteLength + body.byteLength);
  joined.set(head, 0);
  joined.set(body, head.byteLength);
  return joined;
}

/** A hex digit's value (either case), or -1: the decoder's whole alphabet, checked as it goes. */
function hexDigit(code: number): number {
  if (code >= 48 && code <= 57) return code - 48;
  const lower = code | 32;
  return lower >= 97 && lower <= 102 ? lower - 87 : -1;
}

/** Hex digits of exactly `length` bytes (any length when omitted), else null: nothing lenient to probe. */
export function decodeHex(text: string | null | undefined, length?: number): Bytes | null {
  if (text == null || text.length === 0 || text.length % 2 !== 0) return null;
  if (length !== undefined && text.length !== length * 2) return null;
  // Digit by digit rather than a pattern test and a parseInt of each pair: every delivery decodes
  // its signature, and this is a tenth of the time (the cost ledger, docs/benchmarks.md).
  const bytes = new Uint8Array(text.length / 2);
  for (let i = 0; i < bytes.length; i++) {
    const high = hexDigit(text.charCodeAt(2 * i));
    const low = hexDigit(text.charCodeAt(2 * i + 1));
    if (high < 0 || low < 0) return null;
    bytes[i] = high * 16 + low;
  }
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

const BYTE_HEX: readonly string[] = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, '0'));

export function encodeHex(bytes: Uint8Array): string {
  let hex = '';
  for (const byte of bytes) hex += BYTE_HEX[byte] ?? '';
  return hex;
}
