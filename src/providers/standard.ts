// Standard Webhooks v1 (standardwebhooks.com): `webhook-id`, `webhook-timestamp` (unix seconds) and
// `webhook-signature`, space-separated `v1,<base64>` entries (`v1a` and other versions skipped), over
// `${id}.${timestamp}.` + the raw body. The secret is `whsec_` + base64 and the key is its decoded
// bytes. The event id is the `webhook-id` header, which the signature covers. Svix, the largest
// sender of the scheme, names the same three headers `svix-id`, `svix-timestamp`, `svix-signature`.
import { z } from 'zod';
import { occurrenceTime } from '../lib/occurrence.ts';
import { afterPrefix, type Bytes, decodeBase64, decodeSha256Base64, importHmacKey, prefixed } from './hmac.ts';
import {
  authenticationFailure,
  boundedString,
  parseEntries,
  payloadEvent,
  signaturesOf,
  tokenHeader,
} from './scheme.ts';
import type { WebhookProvider } from './types.ts';

/**
 * The payload shape the specification recommends (`type`, `timestamp`, `data`); only `type` is
 * required, because it routes the event. `timestamp` is informational and written every way (an RFC
 * 3339 string, Clerk's unix milliseconds): any value is kept, and one that is no storable time is
 * stored as none. The specification has no schema version, so nothing is parked for one.
 */
export const standardEnvelope = z.looseObject({ type: boundedString });

/**
 * The header sets a delivery may use, one per delivery, never mixed: the first whose signature
 * header is present is read (the specification's names when neither is).
 */
const HEADER_SETS = ['webhook-', 'svix-'] as const;

function headerSet(headers: Headers): (typeof HEADER_SETS)[number] {
  return HEADER_SETS.find((set) => headers.has(`${set}signature`)) ?? 'webhook-';
}

/** The key bytes of a `whsec_<base64>` secret (the prefix is optional, as in the reference library). */
export function standardKeyBytes(secret: string): Bytes {
  const bytes = decodeBase64(afterPrefix(secret, 'whsec_') ?? secret);
  if (bytes === null || bytes.byteLength === 0) {
    // Named by provider, never echoed: the value is a secret.
    throw new Error('standard: every secret must be "whsec_" followed by base64');
  }
  return bytes;
}

export function standardSignedContent(id: string, timestamp: string, body: Bytes): Bytes {
  return prefixed(`${id}.${timestamp}.`, body);
}

export const standard: WebhookProvider = {
  name: 'standard',
  // async, so a bad secret is a rejection like any other import failure, not a synchronous throw.
  importKeys: async (secrets) => Promise.all(secrets.map((secret) => importHmacKey(standardKeyBytes(secret)))),
  async verify({ body, headers }, keys, time) {
    const set = headerSet(headers);
    const id = tokenHeader(headers, `${set}id`);
    const timestamp = headers.get(`${set}timestamp`);
    if (id === null || timestamp === null) return { outcome: 'unauthorized', reason: 'headers_missing' };
    const signed = {
      signatures: signaturesOf(parseEntries(headers.get(`${set}signature`), ' ', ','), 'v1', decodeSha256Base64),
      timestamp,
      content: () => standardSignedContent(id, timestamp, body),
    };
    const failure = await authenticationFailure(signed, keys, time);
    if (failure !== undefined) return { outcome: 'unauthorized', reason: failure };

    return payloadEvent(body, standardEnvelope, (event) => ({
      eventId: id,
      eventType: event.type,
      occurredAt: occurrenceTime(event.timestamp, 'seconds-or-milliseconds'),
      unknownSchemaVersion: false,
    }));
  },
};
