// Slack Events API: `X-Slack-Request-Timestamp` (unix seconds) and `X-Slack-Signature: v0=<hex>`, an
// HMAC over `v0:${timestamp}:` + the raw body, keyed with the app's signing secret. Events arrive as
// `event_callback` envelopes whose `event_id` (signed, in the body) is the event id. A signed
// `url_verification` is answered with its challenge and `app_rate_limited` acknowledged; neither is
// stored, as neither is an event.
import { z } from 'zod';
import { occurrenceTime } from '../lib/occurrence.ts';
import { afterPrefix, type Bytes, decodeSha256Hex, importHmacKeys, prefixed } from './hmac.ts';
import { authenticationFailure, boundedString, parsePayload } from './scheme.ts';
import type { WebhookProvider } from './types.ts';

/**
 * The Events API envelopes; it has no schema version to park on. `event_time` is informational: any
 * value is kept, and one that is no storable time is stored as none.
 */
export const slackEnvelope = z.discriminatedUnion('type', [
  z.looseObject({
    type: z.literal('event_callback'),
    event_id: boundedString,
    event: z.looseObject({ type: boundedString }),
  }),
  z.looseObject({ type: z.literal('url_verification'), challenge: boundedString }),
  z.looseObject({ type: z.literal('app_rate_limited') }),
]);

export function slackSignedContent(timestamp: string, body: Bytes): Bytes {
  return prefixed(`v0:${timestamp}:`, body);
}

export const slack: WebhookProvider = {
  name: 'slack',
  importKeys: importHmacKeys,
  async verify({ body, headers }, keys, time) {
    const timestamp = headers.get('x-slack-request-timestamp');
    if (timestamp === null) return { outcome: 'unauthorized', reason: 'headers_missing' };
    const signed = {
      signatures: decodeSha256Hex(afterPrefix(headers.get('x-slack-signature'), 'v0=')),
      timestamp,
      content: () => slackSignedContent(timestamp, body),
    };
    const failure = await authenticationFailure(signed, keys, time);
    if (failure !== undefined) return { outcome: 'unauthorized', reason: failure };

    const parsed = parsePayload(body, slackEnvelope);
    if (parsed === undefined) return { outcome: 'invalid_payload' };
    const { payload, envelope } = parsed;
    switch (envelope.type) {
      case 'url_verification':
        return { outcome: 'respond', body: JSON.stringify({ challenge: envelope.challenge }), reason: envelope.type };
      case 'app_rate_limited':
        return { outcome: 'respond', body: '{"received":true}', reason: envelope.type };
      case 'event_callback':
        return {
          outcome: 'verified',
          event: {
            eventId: envelope.event_id,
            eventType: envelope.event.type,
            occurredAt: occurrenceTime(envelope.event_time, 'seconds'),
            payload,
            unknownSchemaVersion: false,
          },
        };
    }
  },
};
