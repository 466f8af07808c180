// The guide's `acme` scheme: `x-acme-timestamp` (unix seconds) and `x-acme-signature`, a hex
// HMAC-SHA256 over `${timestamp}.` + the raw body; the event id is the signed payload's `id`.
import { z } from 'zod';
import { MAX_UNIX_SECONDS } from '../lib/occurrence.ts';
import { decodeSha256Hex, importHmacKeys, prefixed } from './hmac.ts';
import { authenticationFailure, boundedString, payloadEvent } from './scheme.ts';
import type { WebhookProvider } from './types.ts';

export const ACME_API_VERSIONS: ReadonlySet<string> = new Set(['2024-06-01']);

/** The envelope every acme event carries; unknown fields are kept, known ones strictly typed. */
export const acmeEnvelope = z.looseObject({
  id: boundedString,
  type: boundedString,
  api_version: z.string().min(1).max(64),
  // Required, so out of range is the payload's fault (400), not a time to drop.
  created: z.int().nonnegative().max(MAX_UNIX_SECONDS),
  version: z.int().nonnegative(),
  data: z.looseObject({}),
});

export const acme: WebhookProvider = {
  name: 'acme',
  importKeys: importHmacKeys,
  async verify({ body, headers }, keys, time) {
    const timestamp = headers.get('x-acme-timestamp');
    const signed = {
      signatures: decodeSha256Hex(headers.get('x-acme-signature')),
      timestamp,
      content: () => prefixed(`${timestamp}.`, body),
    };
    const failure = await authenticationFailure(signed, keys, time);
    if (failure !== undefined) return { outcome: 'unauthorized', reason: failure };

    return payloadEvent(body, acmeEnvelope, (event) => ({
      eventId: event.id,
      eventType: event.type,
      occurredAt: new Date(event.created * 1000),
      unknownSchemaVersion: !ACME_API_VERSIONS.has(event.api_version),
    }));
  },
  knowsSchemaOf: (payload) => {
    const envelope = acmeEnvelope.safeParse(payload);
    return envelope.success && ACME_API_VERSIONS.has(envelope.data.api_version);
  },
};
