// The guide's `acme` scheme: `x-acme-timestamp` (unix seconds) and `x-acme-signature`, a hex
// HMAC-SHA256 over `${timestamp}.` + the raw body; the event id is the signed payload's `id`.
import { z } from 'zod';
import { parseJsonPayload } from '../inbox/payload.ts';
import { decodeSha256Hex, importHmacKey, isFreshTimestamp, prefixed, verifyWithAnyKey } from './hmac.ts';
import type { WebhookProvider } from './types.ts';

export const ACME_API_VERSIONS: ReadonlySet<string> = new Set(['2024-06-01']);

/** The envelope every acme event carries; unknown fields are kept, known ones strictly typed. */
export const acmeEnvelope = z.looseObject({
  id: z.string().min(1).max(255),
  type: z.string().min(1).max(255),
  api_version: z.string().min(1).max(64),
  created: z.int().nonnegative(),
  version: z.int().nonnegative(),
  data: z.looseObject({}),
});
export type AcmeEnvelope = z.infer<typeof acmeEnvelope>;

export const acme: WebhookProvider = {
  name: 'acme',
  importKeys: (secrets) => Promise.all(secrets.map((secret) => importHmacKey(secret))),
  async verify({ body, headers }, keys, time) {
    const timestamp = headers.get('x-acme-timestamp');
    const signature = decodeSha256Hex(headers.get('x-acme-signature'));
    if (signature === null || timestamp === null) return { outcome: 'unauthorized' };
    if (!isFreshTimestamp(timestamp, time.nowSeconds, time.toleranceSeconds)) return { outcome: 'unauthorized' };
    if (!(await verifyWithAnyKey(keys, signature, prefixed(`${timestamp}.`, body)))) return { outcome: 'unauthorized' };

    const payload = parseJsonPayload(body);
    const envelope = acmeEnvelope.safeParse(payload);
    if (payload === undefined || !envelope.success) return { outcome: 'invalid_payload' };
    const event = envelope.data;
    return {
      outcome: 'verified',
      event: {
        eventId: event.id,
        eventType: event.type,
        occurredAt: new Date(event.created * 1000),
        payload,
        unknownSchemaVersion: !ACME_API_VERSIONS.has(event.api_version),
      },
    };
  },
};
