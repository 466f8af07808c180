// Telling database trouble (retry later: 503) from everything else, and describing any error in a
// bounded line that can be stored: error classes and SQLSTATE codes only, never messages that may
// quote parameters (Drizzle's query errors carry the whole parameter list).

import { errorCode } from '../lib/errors.ts';
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

function errorChain(error: unknown): unknown[] {
  const chain: unknown[] = [];
  for (let current = error; current !== undefined && chain.length < 8; ) {
    chain.push(current);
    current = current instanceof Error ? current.cause : undefined;
  }
  return chain;
}

function sqlStateOf(error: unknown): string | undefined {
  if (!(error instanceof Error) || error.name !== 'PostgresError') return undefined;
  return errorCode(error);
}

export function isTransientDatabaseError(error: unknown): boolean {
  return errorChain(error).some((link) => {
    const sqlState = sqlStateOf(link);
    if (sqlState !== undefined) return TRANSIENT_SQLSTATE_CLASSES.has(sqlState.slice(0, 2));
    const code = errorCode(link);
    return code !== undefined && TRANSIENT_NODE_CODES.has(code);
  });
}

/**
 * A safe, bounded description: the innermost error's class, its SQLSTATE or system code and, for
 * our own error types, the message we wrote. Postgres messages can quote values, so they are left out.
 */
export function describeError(error: unknown): string {
  const chain = errorChain(error);
  const innermost = chain[chain.length - 1];
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

/** A server's FATAL message, read only to tell two causes of one SQLSTATE apart; never printed. */
function serverMessage(error: unknown): string {
  return error instanceof Error && error.name === 'PostgresError' ? error.message : '';
}

/**
 * Why the database could not be used at start-up, by cause class, for the one line an operator
 * reads: which part of DATABASE_URL to look at, never the URL itself (it may hold a password).
 */
export function databaseStartupProblem(error: unknown): string {
  for (const link of errorChain(error)) {
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
