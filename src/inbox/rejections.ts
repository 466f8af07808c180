// What a refused delivery leaves for operators (404, 413, 415, 401, 400, 503), and a batch's event set
// aside while the others were stored (`invalid_event`): the sender, a reason from
// the closed set of lib/rejection-reasons.ts, the field or limit it failed on, and its headers with every credential redacted, by the
// header's name and, inside a value holding a URL or a query string, by the parameter's name. Built
// from the request's headers and the error that answered it, never from its body, which is not read
// for this (and for a 413 was never read at all).
import { AppError } from '../lib/errors.ts';
import { REDACTED, withQueryCredentialsRedacted } from '../lib/redaction.ts';
import { type RejectionReason, rejectionReasonOf } from '../lib/rejection-reasons.ts';
import { printableLine } from '../lib/text.ts';

export { REDACTED };

/**
 * The sender a route that names no enabled sender is counted under: routes are lowercase letters and
 * digits, so no sender can have this name, and made-up routes add one row a minute, not one each.
 */
export const UNKNOWN_SENDER = '(unknown)';

/** One refused delivery as the ring keeps it. */
export interface RejectionRecord {
  /** When it was refused, ms since the epoch (the app's clock). */
  at: number;
  provider: string;
  statusCode: number;
  reason: RejectionReason;
  /** The field, limit, content type or requested route it failed on, printable and bounded. */
  detail: string | null;
  /** The sender's W3C trace id when it sent one, else the delivery's own once its events were read. */
  traceId: string | null;
  headers: Record<string, string>;
}

/** Header values are cut here: enough for a user agent or a delivery id, not a payload smuggled in a header. */
export const HEADER_VALUE_MAX = 200;
/** Headers kept per rejection; the rest are counted under HEADERS_LEFT_OUT. */
export const HEADERS_KEPT_MAX = 30;
export const HEADERS_LEFT_OUT = '(more headers)';
/** Longest requested route kept in `detail` for a 404. */
const ROUTE_DETAIL_MAX = 64;
const DETAIL_MAX = 200;

/**
 * Names whose values carry a credential: authorization and cookies, and any signature, token, secret,
 * HMAC, key, password or session header (x-hub-signature-256, stripe-signature, x-shopify-hmac-sha256,
 * x-gitlab-token, x-api-key, svix-signature …). Generous on purpose: a redacted delivery id costs
 * nothing, a kept secret is a leak.
 */
const CREDENTIAL_NAME = /auth|cookie|sig|token|secret|hmac|key|pass|credential|session|jwt/;

/**
 * The headers as they may be kept: names lower-cased, credentials redacted (by the header's name, and
 * by the parameter's name inside any value holding a URL or query string, such as x-forwarded-uri,
 * x-original-url or referer), values printable and bounded. Redacted before the value is cut, so a
 * cut never leaves part of a credential.
 */
export function redactedHeaders(headers: Headers): Record<string, string> {
  const kept: Record<string, string> = {};
  let count = 0;
  let leftOut = 0;
  for (const [rawName, value] of headers) {
    if (count >= HEADERS_KEPT_MAX) {
      leftOut++;
      continue;
    }
    const name = printableLine(rawName.toLowerCase(), HEADER_VALUE_MAX);
    kept[name] = CREDENTIAL_NAME.test(name)
      ? REDACTED
      : printableLine(withQueryCredentialsRedacted(value), HEADER_VALUE_MAX);
    count++;
  }
  if (leftOut > 0) kept[HEADERS_LEFT_OUT] = String(leftOut);
  return kept;
}

/** What a reason's refusal failed on, from the error's `why` (the intake's own facts, already bounded). */
function detailOf(error: AppError, requestedRoute: string): string | null {
  const { why } = error;
  switch (error.code) {
    case 'not_found':
      return printableLine(requestedRoute, ROUTE_DETAIL_MAX);
    case 'payload_too_large':
      return typeof why.limit_bytes === 'number' ? `limit ${why.limit_bytes} bytes` : null;
    case 'unsupported_media_type':
      return typeof why.content_type === 'string' ? printableLine(why.content_type, DETAIL_MAX) : 'no content-type';
    case 'invalid_payload':
      return typeof why.field === 'string' ? printableLine(why.field, DETAIL_MAX) : null;
    default:
      return null;
  }
}

/** What a refusal is recorded with besides its reason: when, the sender, and the request's headers and trace. */
interface RefusedRequest {
  at: number;
  headers: Headers;
  traceId?: string | undefined;
}

/**
 * The records of a batch's events set aside as refused (`invalid_event`), one each, with the field
 * it names and the status its delivery was answered with.
 */
export function refusedEventRecords(
  fields: readonly string[],
  request: RefusedRequest & { provider: string; statusCode: number },
): RejectionRecord[] {
  const headers = redactedHeaders(request.headers);
  return fields.map((field) => ({
    at: request.at,
    provider: request.provider,
    statusCode: request.statusCode,
    reason: 'invalid_event',
    detail: printableLine(field, DETAIL_MAX),
    traceId: request.traceId ?? null,
    headers,
  }));
}

/**
 * The record of a refused delivery, or undefined when `error` did not refuse it (a handler's failure
 * stored it as failed). Anything that is not an AppError is a fault of ours that the app answers 503
 * (app.ts): refused all the same, as `unavailable`. `provider` is the enabled sender the route named,
 * undefined when it named none.
 */
export function rejectionOf(
  error: unknown,
  request: RefusedRequest & { provider: string | undefined; requestedRoute: string },
): RejectionRecord | undefined {
  const reason = rejectionReasonOf(error);
  if (reason === undefined) return undefined;
  const refusal = error instanceof AppError ? error : new AppError('unavailable');
  return {
    at: request.at,
    provider: request.provider ?? UNKNOWN_SENDER,
    statusCode: refusal.status,
    reason,
    detail: detailOf(refusal, request.requestedRoute),
    traceId: request.traceId ?? null,
    headers: redactedHeaders(request.headers),
  };
}
