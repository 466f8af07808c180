// Stripe: `Stripe-Signature: t=<unix seconds>,v1=<hex>[,v1=<hex>…]`, every `v1` tried (Stripe lists
// one per active secret while a secret rolls), over `${t}.` + the raw body. The key is the whole
// `whsec_…` string as UTF-8: it shares Standard Webhooks' prefix, not its key derivation. The event
// id is the signed payload's `id`.
import { z } from 'zod';
import { occurrenceTime } from '../lib/occurrence.ts';
import { type Bytes, decodeSha256Hex, importHmacKeys, prefixed } from './hmac.ts';
import { authenticationFailure, boundedString, parseEntries, payloadEvent, signaturesOf } from './scheme.ts';
import type { WebhookProvider } from './types.ts';

/**
 * A snapshot event (`object: "event"`). Its `api_version` is the endpoint's, chosen by the user in
 * the dashboard; nothing is parked for it, because the mapping reads only fields every API version
 * shares (`id`, `type`, `created`, `data.object.id`, `data.object.status`). `created` is only when
 * it happened: any value is kept, and one that is no storable time is stored as none.
 */
export const stripeEnvelope = z.looseObject({
  id: boundedString,
  object: z.literal('event'),
  type: boundedString,
  api_version: z.string().max(64).nullable().optional(),
  data: z.looseObject({ object: z.looseObject({}) }),
});

export function stripeSignedContent(timestamp: string, body: Bytes): Bytes {
  return prefixed(`${timestamp}.`, body);
}

export const stripe: WebhookProvider = {
  name: 'stripe',
  importKeys: importHmacKeys,
  async verify({ body, headers }, keys, time) {
    const entries = parseEntries(headers.get('stripe-signature'), ',', '=');
    // Exactly one `t`: a second one would leave it open which of them was signed.
    const timestamps = (entries ?? []).filter(([name]) => name === 't');
    const timestamp = timestamps.length === 1 ? (timestamps[0]?.[1] ?? null) : null;
    if (timestamp === null) return { outcome: 'unauthorized', reason: 'headers_missing' };
    const signed = {
      signatures: signaturesOf(entries, 'v1', decodeSha256Hex),
      timestamp,
      content: () => stripeSignedContent(timestamp, body),
    };
    const failure = await authenticationFailure(signed, keys, time);
    if (failure !== undefined) return { outcome: 'unauthorized', reason: failure };

    return payloadEvent(body, stripeEnvelope, (event) => ({
      eventId: event.id,
      eventType: event.type,
      occurredAt: occurrenceTime(event.created, 'seconds'),
      unknownSchemaVersion: false,
    }));
  },
};
