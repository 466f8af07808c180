// Who acts on the admin surface. A named token (ADMIN_TOKENS) belongs to its operator: what is done
// with it is recorded under that name, and a name typed in the request is ignored (a client cannot
// claim to be someone else). The shared ADMIN_TOKEN names nobody, so with it the typed name stays,
// as before. Reads of stored payloads are logged with who read which one, never what they hold.
import type { Context, MiddlewareHandler } from 'hono';
import type { Config } from '../config.ts';
import { requireOneOfBearers } from '../lib/bearer.ts';
import type { Logger } from '../lib/logger.ts';

/** ADMIN_TOKENS may be left out where only the shared token is used (tests, older callers). */
export type AdminTokens = Pick<Config, 'ADMIN_TOKEN'> & Partial<Pick<Config, 'ADMIN_TOKENS'>>;

/**
 * The owner of the token each accepted request carried, by the request's context (one object from the
 * gate to the handler; the request itself is replaced by the body limit); the shared token has none.
 */
const owners = new WeakMap<Context, string>();

/** The bearer gate for every token configured, or undefined when none is (then /admin is not mounted). */
export function adminGate(config: AdminTokens): MiddlewareHandler | undefined {
  const accepted = [
    ...(config.ADMIN_TOKENS ?? []),
    ...(config.ADMIN_TOKEN === undefined ? [] : [{ operator: undefined, token: config.ADMIN_TOKEN }]),
  ];
  if (accepted.length === 0) return undefined;
  return requireOneOfBearers(
    accepted.map((entry) => entry.token),
    (c, index) => {
      const operator = accepted[index]?.operator;
      if (operator !== undefined) owners.set(c, operator);
    },
  );
}

/** The name an action is recorded under: the token's owner, else the name the request typed. */
export function actingOperator(c: Context, typed: string): string {
  return owners.get(c) ?? typed;
}

/** One log line per payload read through the admin surface: who (by token) and which row, never its content. */
export function logPayloadRead(
  c: Context,
  logger: Logger,
  target: { kind: 'event'; provider: string; eventId: string } | { kind: 'outbox'; id: string },
): void {
  logger.info('operator read payload', {
    operator: owners.get(c) ?? null,
    token: owners.has(c) ? 'ADMIN_TOKENS' : 'ADMIN_TOKEN',
    target_kind: target.kind,
    target: target.kind === 'event' ? `${target.provider}/${target.eventId}` : target.id,
  });
}
