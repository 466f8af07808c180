// Where outbox messages go, behind one interface: an HTTP target (OUTBOX_TARGET_URL) or, with no
// target configured, the log; the brokers' publishers (beside this file) implement the same interface. A
// publisher answers with an outcome class (published, retry, permanent, rejected, misdirected, paced,
// unavailable: each says whom the answer blames) and its error: a category (a status, a system code and
// the address it names), and for a failed HTTP answer what the target said, its first bytes with
// credentials redacted (never its headers); the relay escapes and bounds it, and owns
// attempts, backoff, pacing, dead letters and what the circuit breaker counts. Web standards only (fetch, AbortSignal, Headers),
// so the same code runs on Node and on Workers.
import { ConfigError } from '../../config.ts';
import { parseRetryAfter } from '../../lib/backoff.ts';
import { causeChain, errorCode } from '../../lib/errors.ts';
import type { JsonValue } from '../../lib/json.ts';
import type { Logger } from '../../lib/logger.ts';
import { withCredentialsRedacted } from '../../lib/redaction.ts';
import { parseOutboxTarget } from '../target.ts';

export interface OutboxMessage {
  id: string;
  topic: string;
  deduplicationKey: string;
  /**
   * The key's transport-safe form (transport-key.ts) for headers and broker message ids; the body
   * keeps `deduplicationKey` exactly.
   */
  transportKey: string;
  payload: JsonValue;
  createdAt: Date;
  /**
   * W3C traceparent of the span that enqueued it, sent outside the body (a header, a stream field)
   * so a consumer continues the trace; null when there was none.
   */
  traceparent?: string | null;
}

export type PublishOutcome =
  | { outcome: 'published' }
  /**
   * Worth trying again later, and the destination's fault as far as anyone can tell (a 5xx, a timeout
   * on a live connection, a broken connection): counts an attempt and toward the circuit breaker;
   * `retryAfterMs` when the target said when.
   */
  | { outcome: 'retry'; error: string; retryAfterMs?: number }
  /**
   * Trying again cannot help and the destination is to blame (a broker's missing stream or refused
   * credentials): dead at once, counted toward the circuit breaker.
   */
  | { outcome: 'permanent'; error: string }
  /**
   * The target judged this very message and refused it (HTTP 400, 410, 413, 415, 422, …): dead at
   * once, and nothing against the destination, which answered as a healthy one does.
   */
  | { outcome: 'rejected'; error: string }
  /**
   * The destination itself is wrong (HTTP 401, 403, 404, 405: a revoked credential, a wrong URL):
   * every message would get the same answer, so the message is held (no attempt counted, never dead
   * for it) and the answer counts toward the circuit breaker.
   */
  | { outcome: 'misdirected'; error: string }
  /**
   * The target asks to be sent less (HTTP 429): the destination is paced until `retryAfterMs` (its
   * Retry-After; absent, a backoff), the message held without an attempt counted, the breaker untouched.
   */
  | { outcome: 'paced'; error: string; retryAfterMs?: number }
  /**
   * The target as a whole could not be reached (refused, unreachable, not connected): nothing was
   * said about this message, so it counts no attempt; the relay backs off as a whole and probes.
   */
  | { outcome: 'unavailable'; error: string };

export interface Publisher {
  /** For logs: `http`, `log`, or the broker's name. */
  readonly kind: string;
  /**
   * Publishes share one connection and are pipelined on it (the brokers): the relay starts a whole
   * batch at once instead of `concurrency` at a time.
   */
  readonly pipelined?: boolean;
  /** Must settle once `signal` aborts (the relay's per-call timeout). */
  publish(message: OutboxMessage, signal: AbortSignal): Promise<PublishOutcome>;
  /** Shutdown: closes the publisher's connections once no publish is in flight. */
  close?(): Promise<void>;
}

/** `traceparent` when the message has one: the header every header-carrying transport sends. */
export function traceHeaders(message: OutboxMessage): { traceparent?: string } {
  return message.traceparent === undefined || message.traceparent === null ? {} : { traceparent: message.traceparent };
}

/** The body the contract fixes, as an object in its order (a queue that takes JSON values gets this). */
export function messageFields(message: OutboxMessage) {
  return {
    id: message.id,
    topic: message.topic,
    deduplication_key: message.deduplicationKey,
    payload: message.payload,
    created_at: message.createdAt.toISOString(),
  };
}

/** The body the contract fixes, in its order; the same bytes on every try of a message. */
export function messageBody(message: OutboxMessage): string {
  return JSON.stringify(messageFields(message));
}

/** Client errors that say "not now" rather than "never": timeout, conflict, too early. */
const RETRYABLE_CLIENT_ERRORS = new Set([408, 409, 425]);
/**
 * Answers that say the destination itself is wrong, whatever the message: unauthenticated, forbidden,
 * no such endpoint, POST not allowed there. An operator's fix (a credential, the URL) ends them.
 */
const MISDIRECTED_STATUSES = new Set([401, 403, 404, 405]);
const TOO_MANY_REQUESTS = 429;
/** The statuses whose Retry-After means "come back then" (RFC 9110, RFC 6585). */
const RETRY_AFTER_STATUSES = new Set([TOO_MANY_REQUESTS, 503]);

/**
 * 2xx published; 429 paces the destination; 401/403/404/405 say the destination is wrong; 1xx, 3xx
 * (redirects are not followed), 408/409/425 and 5xx retry; any other 4xx is the message's own fault.
 * Who is to blame decides what the circuit breaker counts (docs/decisions/0021). The error is the
 * status, then what the target said (`said`, answerExcerpt's) when it said anything:
 * `http 500: {"error":"db down"}`.
 */
export function classifyStatus(
  status: number,
  retryAfter: string | null,
  nowMs: number,
  said?: string,
): PublishOutcome {
  if (status >= 200 && status < 300) return { outcome: 'published' };
  const error = said === undefined || said === '' ? `http ${status}` : `http ${status}: ${said}`;
  if (MISDIRECTED_STATUSES.has(status)) return { outcome: 'misdirected', error };
  const isClientError = status >= 400 && status < 500;
  if (isClientError && status !== TOO_MANY_REQUESTS && !RETRYABLE_CLIENT_ERRORS.has(status)) {
    return { outcome: 'rejected', error };
  }
  const retryAfterMs = RETRY_AFTER_STATUSES.has(status) ? parseRetryAfter(retryAfter, nowMs) : undefined;
  const outcome = status === TOO_MANY_REQUESTS ? 'paced' : 'retry';
  return retryAfterMs === undefined ? { outcome, error } : { outcome, error, retryAfterMs };
}

/**
 * Failures to open a connection at all: the request never left, so they say nothing about the
 * message and count no attempt. A connection that breaks once the request went out (ECONNRESET,
 * undici's UND_ERR_SOCKET) does count: the target may have reacted to that very message.
 */
const CONNECT_FAILURES = new Set([
  'ECONNREFUSED',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EHOSTDOWN',
  'ENETDOWN',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EADDRNOTAVAIL',
  'UND_ERR_CONNECT_TIMEOUT',
]);

/**
 * A category for a request that got no answer: `timeout` (counted: the request was sent), `network
 * <code>` from the error or its cause (fetch wraps ECONNREFUSED and friends in a TypeError), the
 * target unavailable when no connection could be opened. Never the message: it can quote the URL,
 * and with it credentials in the target's userinfo.
 */
export function classifyNetworkError(error: unknown, signal: AbortSignal): PublishOutcome {
  if (signal.aborted) return { outcome: 'retry', error: 'timeout' };
  // The innermost code: the socket's, under fetch's TypeError or an AggregateError of addresses.
  const code = causeChain(error)
    .map(errorCode)
    .findLast((code) => code !== undefined);
  if (code === undefined) return { outcome: 'retry', error: 'network error' };
  const where = whereRefused(error);
  return {
    outcome: CONNECT_FAILURES.has(code) ? 'unavailable' : 'retry',
    error: where === undefined ? `network ${code}` : `network ${code} ${where}`,
  };
}

/**
 * The address a socket error names (`127.0.0.1:8080`, `[::1]:8080`), or the host name a lookup
 * failed for: the socket's own fields, never the message (which can quote the URL). An address is what
 * an operator checks first: which of a name's addresses, which port.
 */
function whereRefused(error: unknown): string | undefined {
  for (const link of causeChain(error).reverse()) {
    if (typeof link !== 'object' || link === null) continue;
    const address = 'address' in link && typeof link.address === 'string' ? link.address : undefined;
    const port = 'port' in link && typeof link.port === 'number' ? link.port : undefined;
    if (address !== undefined && /^[0-9a-fA-F.:]{2,45}$/.test(address)) {
      const host = address.includes(':') ? `[${address}]` : address;
      return port === undefined ? host : `${host}:${port}`;
    }
    const hostname = 'hostname' in link && typeof link.hostname === 'string' ? link.hostname : undefined;
    if (hostname !== undefined && /^[A-Za-z0-9.-]{1,253}$/.test(hostname)) return hostname;
  }
  return undefined;
}

/** Longest answer body read (and thrown away) so the connection can be reused. */
export const MAX_DISCARDED_BODY_BYTES = 64 * 1024;
/** The first bytes of a failed answer that are kept to say what the target said. */
export const ANSWER_EXCERPT_BYTES = 1024;
/** Characters of that answer kept in `last_error`, after the status (well under LAST_ERROR_MAX once escaped). */
export const ANSWER_EXCERPT_CHARS = 240;

/**
 * Reads an answer's body through `next` so keep-alive can reuse the connection, keeping its first
 * ANSWER_EXCERPT_BYTES when `keep` is set; past MAX_DISCARDED_BODY_BYTES it stops (`stop` cancels
 * the rest: a huge answer is never read whole). A body that breaks keeps what arrived.
 */
export async function readAnswer(
  next: () => Promise<{ done?: boolean; value?: Uint8Array | undefined }>,
  stop: () => Promise<unknown>,
  keep: boolean,
): Promise<Uint8Array | undefined> {
  const kept: Uint8Array[] = [];
  let keptBytes = 0;
  let read = 0;
  try {
    for (;;) {
      const chunk = await next();
      if (chunk.done || chunk.value === undefined) break;
      read += chunk.value.byteLength;
      if (keep && keptBytes < ANSWER_EXCERPT_BYTES) {
        const piece = chunk.value.subarray(0, ANSWER_EXCERPT_BYTES - keptBytes);
        kept.push(piece);
        keptBytes += piece.byteLength;
      }
      if (read > MAX_DISCARDED_BODY_BYTES) {
        await stop();
        break;
      }
    }
  } catch {
    // The outcome is already decided by the status; a broken body changes nothing.
  }
  if (!keep) return undefined;
  const bytes = new Uint8Array(keptBytes);
  let offset = 0;
  for (const piece of kept) {
    bytes.set(piece, offset);
    offset += piece.byteLength;
  }
  return bytes;
}

/**
 * What the target said, fit for `last_error` and a log line: the first ANSWER_EXCERPT_CHARS
 * characters of the answer's first bytes as UTF-8 (an incomplete character at the cut dropped),
 * whitespace runs as one space, credentials redacted (redaction.ts), `…` when cut. Left unescaped:
 * the relay escapes whatever a publisher says into one printable line (printableLine).
 */
export function answerExcerpt(bytes: Uint8Array | undefined): string | undefined {
  if (bytes === undefined || bytes.byteLength === 0) return undefined;
  const decoded = new TextDecoder().decode(bytes, { stream: true });
  const text = withCredentialsRedacted(decoded.replace(/\s+/g, ' ').trim());
  if (text === '') return undefined;
  const chars = [...text];
  const cut = chars.length > ANSWER_EXCERPT_CHARS || bytes.byteLength >= ANSWER_EXCERPT_BYTES;
  return cut ? `${chars.slice(0, ANSWER_EXCERPT_CHARS).join('')}…` : text;
}

/** Whether an answer's status is a failure, whose first bytes are worth keeping. */
export const isFailureStatus = (status: number) => status < 200 || status >= 300;

/** What the publisher needs to know of an answer; its body has been read and dropped already. */
export interface HttpAnswer {
  status: number;
  header(name: string): string | null;
  /** A failed answer's first bytes (answerExcerpt); undefined for a success or an empty body. */
  said?: string | undefined;
}

/**
 * One POST that never follows a redirect and settles when `signal` aborts. Rejects when no answer
 * came (the rejection is classified by `classifyNetworkError`).
 */
export type HttpPost = (
  url: string,
  request: { headers: Record<string, string>; body: string; signal: AbortSignal },
) => Promise<HttpAnswer>;

/** The portable transport (Workers, tests, any runtime with fetch). */
export const fetchPost: HttpPost = async (url, request) => {
  const response = await fetch(url, {
    method: 'POST',
    body: request.body,
    headers: request.headers,
    // A redirect could move the message to a host nobody configured: it is a retryable failure.
    redirect: 'manual',
    signal: request.signal,
  });
  const reader = response.body?.getReader();
  const failed = isFailureStatus(response.status);
  const bytes =
    reader === undefined
      ? undefined
      : await readAnswer(
          () => reader.read(),
          () => reader.cancel(),
          failed,
        );
  return { status: response.status, header: (name) => response.headers.get(name), said: answerExcerpt(bytes) };
};

export interface HttpPublisherOptions {
  url: string;
  clock: () => number;
  /** fetch unless the runtime brings a cheaper transport (the Node entry uses undici's). */
  post?: HttpPost;
}

/** POSTs the contract's body with `Idempotency-Key` (and the topic), never following a redirect. */
export function httpPublisher(options: HttpPublisherOptions): Publisher {
  const post = options.post ?? fetchPost;
  return {
    kind: 'http',
    async publish(message, signal) {
      let answer: HttpAnswer;
      try {
        answer = await post(options.url, {
          body: messageBody(message),
          headers: {
            'content-type': 'application/json',
            'idempotency-key': message.transportKey,
            'outbox-topic': message.topic,
            'user-agent': 'webhook-inbox-relay',
            ...traceHeaders(message),
          },
          signal,
        });
      } catch (error) {
        return classifyNetworkError(error, signal);
      }
      return classifyStatus(answer.status, answer.header('retry-after'), options.clock(), answer.said);
    },
  };
}

/** The default without OUTBOX_TARGET_URL: each message is "published" as one log line (no payload). */
export function logPublisher(logger: Logger): Publisher {
  return {
    kind: 'log',
    async publish(message) {
      logger.info('outbox message (log publisher)', {
        message_id: message.id,
        topic: message.topic,
        deduplication_key: message.deduplicationKey,
      });
      return { outcome: 'published' };
    },
  };
}

/**
 * The portable choice (Workers): the log without a target, else an HTTP target. A broker target
 * needs the Node relay's clients (node.ts): refused here with the fix, at start-up.
 */
export function publisherFor(
  targetUrl: string | undefined,
  dependencies: { clock: () => number; logger: Logger; post?: HttpPost },
  label = 'OUTBOX_TARGET_URL',
): Publisher {
  if (targetUrl === undefined) return logPublisher(dependencies.logger);
  const target = parseOutboxTarget(targetUrl, label);
  if (target.kind !== 'http') {
    throw new ConfigError([
      `${label}: ${target.kind} targets are published by the Node relay (npm start, webhook-inbox drain); ` +
        'a Worker publishes to an http(s) target or to its OUTBOX_QUEUE binding',
    ]);
  }
  return httpPublisher({ url: target.url, clock: dependencies.clock, post: dependencies.post });
}
