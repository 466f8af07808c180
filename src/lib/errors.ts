// The one error type of the service: a closed set of codes, each with its HTTP status, its public
// body and whether trying again can help. Internal detail stays in `cause`, never in a response.
import { HTTPException } from 'hono/http-exception';
import type { ContentfulStatusCode } from 'hono/utils/http-status';

const errorCodes = {
  not_found: { status: 404, retryable: false },
  payload_too_large: { status: 413, retryable: false },
  unsupported_media_type: { status: 415, retryable: false },
  unauthorized: { status: 401, retryable: false },
  invalid_payload: { status: 400, retryable: false },
  /** A domain handler failed; the provider's redelivery is the retry. */
  processing_failed: { status: 500, retryable: true },
  /** Database unreachable, deadline passed, backlog full: come back later. */
  unavailable: { status: 503, retryable: true },
} as const satisfies Record<string, { status: ContentfulStatusCode; retryable: boolean }>;

export type ErrorCode = keyof typeof errorCodes;

/** Seconds a provider is asked to wait after a 503. */
export const RETRY_AFTER_SECONDS = 5;

export class AppError extends HTTPException {
  readonly code: ErrorCode;
  readonly retryable: boolean;

  constructor(code: ErrorCode, options: { cause?: unknown } = {}) {
    const { status, retryable } = errorCodes[code];
    super(status, { message: code, cause: options.cause });
    this.name = 'AppError';
    this.code = code;
    this.retryable = retryable;
  }

  override getResponse(): Response {
    const headers = new Headers({ 'content-type': 'application/json' });
    if (this.code === 'unavailable') headers.set('retry-after', String(RETRY_AFTER_SECONDS));
    return new Response(JSON.stringify({ error: this.code }), { status: this.status, headers });
  }
}

/**
 * Thrown by a domain handler that can never apply the data it was given (a permanent failure: the
 * async worker dead-letters it at once instead of burning its retries). The message is written by us
 * and must not quote the payload.
 */
export class DomainRejection extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DomainRejection';
  }
}
