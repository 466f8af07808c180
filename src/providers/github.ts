// GitHub: `X-Hub-Signature-256: sha256=<hex>`, an HMAC over the raw body alone; no time is signed.
// The event id is the `X-GitHub-Delivery` header, which is not signed, so a digest of the body is a
// second deduplication key (scheme.ts, unsignedIdEvent). The type is `X-GitHub-Event`, joined with
// the payload's `action` when it has one (`pull_request.opened`), as @octokit/webhooks names them.
import { z } from 'zod';
import { afterPrefix, decodeSha256Hex, importHmacKeys } from './hmac.ts';
import { authenticationFailure, boundedString, parsePayload, tokenHeader, unsignedIdEvent } from './scheme.ts';
import type { WebhookProvider } from './types.ts';

/** Any JSON object; `action` typed where present. GitHub has no payload version to park on. */
export const githubPayload = z.looseObject({ action: boundedString.optional() });

export const github: WebhookProvider = {
  name: 'github',
  importKeys: importHmacKeys,
  async verify({ body, headers }, keys, time) {
    const signed = {
      signatures: decodeSha256Hex(afterPrefix(headers.get('x-hub-signature-256'), 'sha256=')),
      content: () => body,
    };
    const failure = await authenticationFailure(signed, keys, time);
    if (failure !== undefined) return { outcome: 'unauthorized', reason: failure };

    const parsed = parsePayload(body, githubPayload);
    const event = tokenHeader(headers, 'x-github-event');
    const action = parsed?.envelope.action;
    return unsignedIdEvent(body, {
      deliveryId: tokenHeader(headers, 'x-github-delivery'),
      eventType: event === null || action === undefined ? event : `${event}.${action}`,
      occurredAt: null,
      payload: parsed?.payload,
    });
  },
};
