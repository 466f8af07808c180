// The one error type of the service: a closed set of codes, each with its HTTP status and its public
// body. Internal detail stays in `cause` and `why`, never in a response. Also what of any error may be
// read safely (its cause chain, its class, its code), whoever threw it.
import { HTTPException } from 'hono/http-exception';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { z } from 'zod';
import type { LogFields } from './logger.ts';
import { printableLine } from './text.ts';

const errorCodes = {
  not_found: { status: 404 },
  payload_too_large: { status: 413 },
  unsupported_media_type: { status: 415 },
  unauthorized: { status: 401 },
  invalid_payload: { status: 400 },
  /** An operator request (admin API) with a missing, unknown or malformed field. */
  invalid_request: { status: 400 },
  /** A domain handler failed; the sender's redelivery is the retry. */
  processing_failed: { status: 500 },
  /** Database unreachable, deadline passed, backlog full: come back later. */
  unavailable: { status: 503 },
} as const satisfies Record<string, { status: ContentfulStatusCode }>;

export type ErrorCode = keyof typeof errorCodes;

/** Seconds a sender is asked to wait after a 503. */
export const RETRY_AFTER_SECONDS = 5;

export class AppError extends HTTPException {
  readonly code: ErrorCode;
  /** For `invalid_request`: the parameter or field refused, by name (never its value). */
  readonly field: string | undefined;
  /**
   * Why, for the log line only: the limit a refusal hit, the field a payload failed on, a failure's
   * cause. Never in the answer (a sender learns nothing from it that it did not send).
   */
  readonly why: LogFields;
  /** For `unavailable`: the Retry-After to send, when not RETRY_AFTER_SECONDS (a paused sender's). */
  readonly retryAfterSeconds: number;

  constructor(
    code: ErrorCode,
    options: { cause?: unknown; field?: string; why?: LogFields; retryAfterSeconds?: number } = {},
  ) {
    const { status } = errorCodes[code];
    super(status, { message: code, cause: options.cause });
    this.name = 'AppError';
    this.code = code;
    this.field = options.field;
    this.why = options.why ?? {};
    this.retryAfterSeconds = options.retryAfterSeconds ?? RETRY_AFTER_SECONDS;
  }

  override getResponse(): Response {
    const headers = new Headers({ 'content-type': 'application/json' });
    if (this.code === 'unavailable') headers.set('retry-after', String(this.retryAfterSeconds));
    const body = this.field === undefined ? { error: this.code } : { error: this.code, field: this.field };
    return new Response(JSON.stringify(body), { status: this.status, headers });
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

/** Longest field name kept: a path of names is short; anything longer is a sender playing with keys. */
const FIELD_MAX = 200;

/**
 * The field a zod failure is about, by name and never by value: the first unknown key of a strict
 * object, else the first issue's path joined with dots (`data.status`, `items.0.id`); undefined when
 * the value as a whole was refused. Names can come from the sender (a record's keys, an unknown key),
 * so the answer is bounded and escaped.
 */
export function refusedField(error: Pick<z.ZodError, 'issues'>): string | undefined {
  const issue = error.issues.find((candidate) => candidate.code === 'unrecognized_keys') ?? error.issues[0];
  if (issue === undefined) return undefined;
  const name = issue.code === 'unrecognized_keys' ? issue.keys[0] : issue.path.map(String).join('.');
  return name === undefined || name === '' ? undefined : printableLine(name, FIELD_MAX);
}

/** Links of a cause chain read at the most: a chain built by hand can loop. */
const CAUSE_LINKS_MAX = 8;

/**
 * An error and what lies under it, outermost first: each link's `cause` and, for an AggregateError
 * (connecting to several addresses fails as one), its first error. The one walk of a cause chain:
 * the database's classifications, the publishers' codes and the logs' descriptions all read
 * through wrappers (Drizzle's query error, fetch's TypeError) with it.
 */
export function causeChain(error: unknown): unknown[] {
  const chain: unknown[] = [];
  for (let link = error; link !== undefined && chain.length < CAUSE_LINKS_MAX; link = causeOf(link)) chain.push(link);
  return chain;
}

function causeOf(link: unknown): unknown {
  if (link instanceof AggregateError) return link.errors[0];
  return typeof link === 'object' && link !== null && 'cause' in link ? link.cause : undefined;
}

/** An error's class, or the type of whatever else was thrown: safe to log, unlike its message. */
export function errorName(error: unknown): string {
  return error instanceof Error ? error.name : typeof error;
}

/**
 * An error's `code` (a system code such as ECONNRESET, or a PostgreSQL SQLSTATE) when it has the
 * shape of one: a code may be logged and stored, free text may quote a URL or a value.
 */
export function errorCode(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null || !('code' in error)) return undefined;
  return typeof error.code === 'string' && /^[A-Z0-9][A-Z0-9_]{1,40}$/.test(error.code) ? error.code : undefined;
}
