// What the signature schemes share beyond HMAC itself: the authentication steps in their order, the
// parsing of signature headers that list several entries, bounded header values, and the payload
// check against a scheme's zod schema. Each scheme file keeps only what is its own.
import { z } from 'zod';
import { type ExactJson, parseJsonPayload } from '../lib/json.ts';
import { type Bytes, type HmacKey, isFreshTimestamp, sha256Hex, verifyWithAnyKey } from './hmac.ts';
import type { AuthenticatedEvent, UnauthorizedReason, Verification, VerificationTime } from './types.ts';

/**
 * Signatures a header may carry at once. Senders list two while they rotate; more is refused rather
 * than verified, so a header of hundreds of entries cannot buy hundreds of HMACs over a large body.
 */
export const MAX_SIGNATURES = 8;

/** An id, type or topic: 1 to 255 characters, as the `webhook_events` key columns expect. */
export const boundedString = z.string().min(1).max(255);

export interface SignedDelivery {
  /** The decoded signature, or the list a header offers; null when a header was missing or malformed. */
  signatures: Bytes | readonly Bytes[] | null;
  /** The signed unix-seconds timestamp, for schemes that sign one (checked against the tolerance). */
  timestamp?: string | null;
  /** The exact bytes the sender signed; built only once the cheap checks have passed. */
  content: () => Bytes;
}

/**
 * The one authentication path: signatures present and few enough, timestamp fresh where the scheme
 * signs one, then a constant-time check of every signature under every key. Answers why it failed
 * (for our logs only: the sender always gets the same 401), or undefined when authentic.
 */
export async function authenticationFailure(
  signed: SignedDelivery,
  keys: readonly HmacKey[],
  time: VerificationTime,
): Promise<UnauthorizedReason | undefined> {
  if (signed.signatures === null) return 'signature_malformed';
  const signatures = signed.signatures instanceof Uint8Array ? [signed.signatures] : signed.signatures;
  if (signatures.length === 0 || signatures.length > MAX_SIGNATURES) return 'signature_malformed';
  if (signed.timestamp !== undefined && !isFreshTimestamp(signed.timestamp, time.nowSeconds, time.toleranceSeconds)) {
    return 'timestamp_outside_tolerance';
  }
  return (await verifyWithAnyKey(keys, signatures, signed.content())) ? undefined : 'signature_mismatch';
}

/**
 * Splits a header listing `key<assign>value` entries separated by `separator` (Stripe's
 * `t=…,v1=…`, Standard Webhooks' `v1,… v1a,…`). Null when any entry is malformed: an empty entry,
 * no separator, an empty key or value.
 */
export function parseEntries(header: string | null, separator: string, assign: string): Array<[string, string]> | null {
  if (header === null) return null;
  const entries: Array<[string, string]> = [];
  for (const entry of header.split(separator)) {
    const at = entry.indexOf(assign);
    if (at <= 0 || at === entry.length - assign.length) return null;
    entries.push([entry.slice(0, at), entry.slice(at + assign.length)]);
  }
  return entries;
}

/**
 * The decoded values of every entry named `version`; other versions are skipped (a scheme's later
 * additions are not errors). Null when the list is null or one of ours does not decode: strictness
 * leaves nothing lenient to probe.
 */
export function signaturesOf(
  entries: ReadonlyArray<readonly [string, string]> | null,
  version: string,
  decode: (text: string) => Bytes | null,
): Bytes[] | null {
  if (entries === null) return null;
  const signatures: Bytes[] = [];
  for (const [name, value] of entries) {
    if (name !== version) continue;
    const signature = decode(value);
    if (signature === null) return null;
    signatures.push(signature);
  }
  return signatures;
}

const TOKEN = /^[\x21-\x7e]{1,255}$/;

/** A header used as a key or a type: 1..255 visible ASCII characters, else null. */
export function tokenHeader(headers: Headers, name: string): string | null {
  const value = headers.get(name);
  return value !== null && TOKEN.test(value) ? value : null;
}

export interface ParsedPayload<Envelope> {
  /** The whole document, unknown fields included, as it will be stored. */
  payload: ExactJson;
  /** The scheme's view of it. */
  envelope: Envelope;
}

/** The body as storable JSON that satisfies `schema`, or undefined (answered 400). */
export function parsePayload<Envelope>(body: Bytes, schema: z.ZodType<Envelope>): ParsedPayload<Envelope> | undefined {
  const payload = parseJsonPayload(body);
  if (payload === undefined) return undefined;
  const parsed = schema.safeParse(payload);
  return parsed.success ? { payload, envelope: parsed.data } : undefined;
}

/**
 * The event of a scheme whose facts are all in the signed payload: 400 unless the body satisfies
 * `schema`, else what `describe` reads from it, with the whole payload kept.
 */
export function payloadEvent<Envelope>(
  body: Bytes,
  schema: z.ZodType<Envelope>,
  describe: (envelope: Envelope) => Omit<AuthenticatedEvent, 'payload'>,
): Verification {
  const parsed = parsePayload(body, schema);
  if (parsed === undefined) return { outcome: 'invalid_payload' };
  return { outcome: 'verified', event: { ...describe(parsed.envelope), payload: parsed.payload } };
}

export interface DeliveryFields {
  /** The sender's delivery id header; null when missing or malformed. */
  deliveryId: string | null;
  eventType: string | null;
  occurredAt: Date | null;
  /** The parsed payload; undefined when it failed its schema. */
  payload: ExactJson | undefined;
}

/**
 * The event of an authentic delivery whose id header is not signed (GitHub, Shopify). The sender
 * signs no time either, so a captured body could come back under a fresh id: the digest of the
 * signed bytes is a second key that makes it a duplicate. Missing metadata is the payload's fault
 * (400), since the signature has already passed.
 */
export async function unsignedIdEvent(body: Bytes, fields: DeliveryFields): Promise<Verification> {
  const { deliveryId, eventType, payload } = fields;
  if (deliveryId === null || eventType === null || payload === undefined) return { outcome: 'invalid_payload' };
  return {
    outcome: 'verified',
    event: {
      eventId: deliveryId,
      eventType,
      occurredAt: fields.occurredAt,
      payload,
      unknownSchemaVersion: false,
      contentDigest: await sha256Hex(body),
    },
  };
}
