// Standard Webhooks v1 (standardwebhooks.com): `webhook-id`, `webhook-timestamp` (unix seconds) and
// `webhook-signature`, space-separated `v1,<base64>` entries (`v1a` and other versions skipped), over
// `${id}.${timestamp}.` + the raw body. The secret is `whsec_` + base64 and the key is its decoded
// bytes. The event id is the `webhook-id` header, which the signature covers.
import { z } from 'zod';
import { afterPrefix, type Bytes, decodeBase64, decodeSha256Base64, importHmacKey, prefixed } from './hmac.ts';
import {
  authenticationFailure,
  boundedString,
  dateOrNull,
  parseEntries,
  payloadEvent,
  signaturesOf,
  tokenHeader,
} from './scheme.ts';
import type { WebhookProvider } from './types.ts';

/**
 * The payload shape the specification recommends (`type`, `timestamp`, `data`); only `type` is
 * required, because it routes the event. The specification has no schema version, so nothing is
 * parked for one.
 */
export const standardEnvelope = z.looseObject({
  type: boundedString,
  timestamp: z.string().max(64).optional(),
});

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
    const id = tokenHeader(headers, 'webhook-id');
    const timestamp = headers.get('webhook-timestamp');
    if (id === null || timestamp === null) return { outcome: 'unauthorized', reason: 'headers_missing' };
    const signed = {
      signatures: signaturesOf(parseEntries(headers.get('webhook-signature'), ' ', ','), 'v1', decodeSha256Base64),
      timestamp,
      content: () => standardSignedContent(id, timestamp, body),
    };
    const failure = await authenticationFailure(signed, keys, time);
    if (failure !== undefined) return { outcome: 'unauthorized', reason: failure };

    return payloadEvent(body, standardEnvelope, (event) => ({
      eventId: id,
      eventType: event.type,
      occurredAt: dateOrNull(event.timestamp),
      unknownSchemaVersion: false,
    }));
  },
};
