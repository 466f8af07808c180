// What every sender's description relies on beyond HMAC itself: the signature cap, bounded ids and
// header values, the parsing of signature headers that list several entries, and the default
// payload shape.
import { z } from 'zod';

/**
 * Signatures a delivery may carry at once. Senders list two while they rotate; more is refused
 * rather than verified, so a header of hundreds of entries cannot buy hundreds of checks over a
 * large body.
 */
export const MAX_SIGNATURES = 8;

/** An id, type or topic: 1 to 255 characters, as the `webhook_events` key columns expect. */
export const boundedString = z.string().min(1).max(255);

/** Any JSON object, unknown fields kept: the payload of a sender no handler reads yet. */
export const anyObject = z.looseObject({});

/**
 * Splits a header listing `key<assign>value` entries separated by `separator` (Stripe's
 * `t=…,v1=…`, Standard Webhooks' `v1,… v1a,…`). Null when any entry is malformed: an empty entry,
 * no separator, an empty key or value.
 */
export function parseEntries(
  header: string | null,
  separator: string | RegExp,
  assign: string,
): Array<[string, string]> | null {
  if (header === null) return null;
  const entries: Array<[string, string]> = [];
  for (const entry of header.split(separator)) {
    const at = entry.indexOf(assign);
    if (at <= 0 || at === entry.length - assign.length) return null;
    entries.push([entry.slice(0, at), entry.slice(at + assign.length)]);
  }
  return entries;
}

const TOKEN = /^[\x21-\x7e]{1,255}$/;

/**
 * A header used as a key or a type: 1..255 visible ASCII characters, else null. Given several
 * names, the first header present is the one read.
 */
export function tokenHeader(header: (name: string) => string | null, names: string | readonly string[]): string | null {
  let value: string | null = null;
  for (const name of typeof names === 'string' ? [names] : names) {
    value = header(name);
    if (value !== null) break;
  }
  return value !== null && TOKEN.test(value) ? value : null;
}
