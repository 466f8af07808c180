// Telling database trouble (retry later: 503) from everything else, and describing errors in bounded
// lines: for operational logs, classes and codes only; for an event's failure (`last_error`), the
// cause's message too, never the parts of an error that carry row values or parameters.

import { DrizzleQueryError } from 'drizzle-orm';
import { causeChain, errorCode } from '../lib/errors.ts';
import { printableLine } from '../lib/text.ts';
import { LAST_ERROR_MAX } from './schema.ts';

const TRANSIENT_NODE_CODES = new Set([
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  'CONNECT_TIMEOUT',
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
]);

/** SQLSTATE classes that say "the database could not do it now", not "this can never work". */
const TRANSIENT_SQLSTATE_CLASSES = new Set(['08', '40', '53', '57', '58']);

/**
 * SQLSTATEs of a statement given up on because it waited too long: statement_timeout (57014, also a
 * cancel request) and lock_timeout or NOWAIT (55P03, lock_not_available). The rest of class 55 (an
 * object in the wrong state) is no wait and stays permanent, so 55P03 is listed on its own.
 */
const TIMEOUTS = new Set(['57014', '55P03']);

function sqlStateOf(error: unknown): string | undefined {
  if (!(error instanceof Error) || error.name !== 'PostgresError') return undefined;
  return errorCode(error);
}

export function isTransientDatabaseError(error: unknown): boolean {
  return causeChain(error).some((link) => {
    const sqlState = sqlStateOf(link);
    if (sqlState !== undefined) return TRANSIENT_SQLSTATE_CLASSES.has(sqlState.slice(0, 2)) || TIMEOUTS.has(sqlState);
    const code = errorCode(link);
    return code !== undefined && TRANSIENT_NODE_CODES.has(code);
  });
}

/** SQLSTATEs of a transaction that lost a race with another (deadlock, serialization) and may simply run again. */
const RETRYABLE_CONFLICTS = new Set(['40P01', '40001']);

/**
 * Whether the error says the transaction lost such a race. Follows the cause chain: Drizzle wraps the
 * driver's error in a DrizzleQueryError that carries no SQLSTATE of its own.
 */
export function isRetryableConflict(error: unknown): boolean {
  return causeChain(error).some((link) => RETRYABLE_CONFLICTS.has(sqlStateOf(link) ?? ''));
}

/** Whether the error is a unique violation (23505), read through Drizzle's wrapper. */
export function isUniqueViolation(error: unknown): boolean {
  return causeChain(error).some((link) => sqlStateOf(link) === '23505');
}

/**
 * Whether a statement was given up on after waiting (a lock held elsewhere, or a slow statement), read
 * through Drizzle's wrapper: the group committer then retries the batch's deliveries one at a time,
 * since most of them did not wait on whatever this one did.
 */
export function isTimeout(error: unknown): boolean {
  return causeChain(error).some((link) => TIMEOUTS.has(sqlStateOf(link) ?? ''));
}

/** The cause at the bottom of the chain: the error that actually happened, not its wrappers. */
function innermostCause(error: unknown): unknown {
  const chain = causeChain(error);
  return chain.findLast((link) => link instanceof Error) ?? chain[chain.length - 1];
}

/**
 * A safe, bounded description for operational logs (a scheduled run, a step, a CLI command): the
 * innermost error's class, its SQLSTATE or system code and, for our own error types, the message we
 * wrote. Messages from elsewhere can quote a value or a URL, so they are left out.
 */
export function describeError(error: unknown): string {
  const innermost = innermostCause(error);
  const parts: string[] = [];
  if (innermost instanceof Error) {
    parts.push(innermost.name);
    const code = errorCode(innermost);
    if (code !== undefined) parts.push(code);
    const constraint = (innermost as { constraint_name?: unknown }).constraint_name;
    if (typeof constraint === 'string') parts.push(`constraint ${constraint}`);
    if (innermost.name === 'DomainRejection' || innermost.name === 'AppError') parts.push(innermost.message);
  } else {
    parts.push(typeof innermost);
  }
  return parts.join(': ').slice(0, LAST_ERROR_MAX);
}

/** Anything between the first and the last double quote: where PostgreSQL quotes an input value. */
const QUOTED = /".*"/s;

/**
 * Why an event failed, as `last_error` keeps it and its failure log line says it: the innermost
 * error's class, its SQLSTATE (or system code) and its message, on one line of at most
 * LAST_ERROR_MAX characters, e.g. `PostgresError P0001: quota exceeded`.
 *
 * Why the message is safe to keep: postgres.js puts only the server's primary message in `.message`;
 * the row values live in the other fields (`detail`: `Key (id)=(…)`, `where`, `hint`, `query`,
 * `parameters`), which are never read here. Primary messages name objects (`duplicate key value
 * violates unique constraint "x"`), except in SQLSTATE class 22 (data exceptions), whose messages
 * quote the offending input (`invalid input syntax for type uuid: "…"`): there everything quoted is
 * masked. A `RAISE` message is the SQL author's text, as a DomainRejection's is ours. Drizzle's query
 * error quotes the statement and its parameters, so only its cause is described. Other errors keep
 * their message: they come from the service's own handlers, which must not quote the payload.
 */
export function describeCause(error: unknown): string {
  const innermost = innermostCause(error);
  if (!(innermost instanceof Error)) return typeof innermost;
  const code = errorCode(innermost);
  const head = code === undefined ? innermost.name : `${innermost.name} ${code}`;
  let message = innermost instanceof DrizzleQueryError ? '' : innermost.message;
  if (sqlStateOf(innermost)?.startsWith('22')) message = message.replace(QUOTED, '"…"');
  return printableLine(message === '' ? head : `${head}: ${message}`, LAST_ERROR_MAX);
}

/** A server's FATAL message, read only to tell two causes of one SQLSTATE apart; never printed. */
function serverMessage(error: unknown): string {
  return error instanceof Error && error.name === 'PostgresError' ? error.message : '';
}

/**
 * Why the database could not be used at start-up, by cause class, for the one line an operator
 * reads: which part of DATABASE_URL to look at, never the URL itself (it may hold a password).
 */
export function databaseStartupProblem(error: unknown): string {
  for (const link of causeChain(error)) {
    const sqlState = sqlStateOf(link);
    const code = errorCode(link);
    const message = serverMessage(link);
    if (sqlState === '3D000') return 'the database named in DATABASE_URL does not exist';
    if (sqlState === '28000' && /no encryption/.test(message)) {
      return 'the server requires TLS: add sslmode=require to DATABASE_URL';
    }
    if (sqlState === '28000' && /role .* does not exist/.test(message)) {
      return 'the role (user) named in DATABASE_URL does not exist';
    }
    if (sqlState === '28P01') return 'authentication failed: check the user and password in DATABASE_URL';
    if (sqlState === '28000') return 'the server refuses this user, database or host (pg_hba.conf)';
    if (code === 'ECONNREFUSED') return 'connection refused: nothing listens at the host and port in DATABASE_URL';
    if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return 'unknown host: the host in DATABASE_URL does not resolve';
    if (code === 'CONNECT_TIMEOUT' || code === 'ETIMEDOUT' || code === 'EHOSTUNREACH') {
      return 'no answer from the host in DATABASE_URL (timed out)';
    }
    if (code === 'ERR_INVALID_URL') return 'DATABASE_URL is not a valid URL (check its host and port)';
  }
  return `the database is unreachable (check DATABASE_URL): ${describeError(error)}`;
}
