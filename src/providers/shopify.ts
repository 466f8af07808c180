// Shopify: `X-Shopify-Hmac-Sha256`, a base64 HMAC over the raw body alone (or the newer un-prefixed
// `shopify-*` header set); no time is signed. The event id is `X-Shopify-Webhook-Id`, which is not
// signed, so a digest of the body is a second deduplication key (scheme.ts, unsignedIdEvent). The
// type is the `X-Shopify-Topic` (`orders/create`).
import { z } from 'zod';
import { occurrenceTime } from '../lib/occurrence.ts';
import { decodeSha256Base64, importHmacKeys } from './hmac.ts';
import { authenticationFailure, parsePayload, tokenHeader, unsignedIdEvent } from './scheme.ts';
import type { WebhookProvider } from './types.ts';

/**
 * Any JSON object. `X-Shopify-API-Version` changes every quarter and no handler reads Shopify
 * fields yet, so nothing is parked for it; the full payload is stored.
 */
export const shopifyPayload = z.looseObject({});

export const shopify: WebhookProvider = {
  name: 'shopify',
  importKeys: importHmacKeys,
  async verify({ body, headers }, keys, time) {
    // One header set or the other, never a mix: the prefixed set wins when its signature is there.
    const set = headers.has('x-shopify-hmac-sha256') ? 'x-shopify-' : 'shopify-';
    const signed = { signatures: decodeSha256Base64(headers.get(`${set}hmac-sha256`)), content: () => body };
    const failure = await authenticationFailure(signed, keys, time);
    if (failure !== undefined) return { outcome: 'unauthorized', reason: failure };

    return unsignedIdEvent(body, {
      deliveryId: tokenHeader(headers, `${set}webhook-id`),
      eventType: tokenHeader(headers, `${set}topic`),
      occurredAt: occurrenceTime(headers.get(`${set}triggered-at`), 'seconds-or-milliseconds'),
      payload: parsePayload(body, shopifyPayload)?.payload,
    });
  },
};
