// Retry timing shared by everything that tries again later (the outbox relay, the async inbox
// worker): capped exponential backoff with full jitter, and reading an HTTP Retry-After. Pure
// functions of their inputs; the random source and the clock come from the caller, so tests pin them.

export interface BackoffPolicy {
  baseMs: number;
  maxMs: number;
}

/** A number in [0, 1), like Math.random; injected so tests choose the jitter. */
export type RandomSource = () => number;

/**
 * Delay before the next try after `failures` failed tries (1 for the first failure): uniformly
 * random in [0, min(max, base * 2^(failures - 1))). Full jitter spreads retries that failed together
 * (a target that was down for everyone) instead of bringing them back in one wave.
 */
export function backoffDelayMs(policy: BackoffPolicy, failures: number, random: RandomSource): number {
  // 2^1023 is still finite; past a few dozen failures the cap decides anyway.
  const exponent = Math.min(Math.max(failures, 1) - 1, 1023);
  const ceiling = Math.min(policy.maxMs, policy.baseMs * 2 ** exponent);
  const unit = Math.min(Math.max(random(), 0), 1);
  return Math.floor(unit * ceiling);
}

/**
 * The delay to wait before the next try: the server's own `Retry-After` when it gave one (never
 * beyond the cap, so a hostile or mistaken header cannot park a message for a year), else backoff.
 */
export function retryDelayMs(
  policy: BackoffPolicy,
  failures: number,
  random: RandomSource,
  retryAfterMs?: number,
): number {
  if (retryAfterMs !== undefined) return Math.min(Math.max(retryAfterMs, 0), policy.maxMs);
  return backoffDelayMs(policy, failures, random);
}

const DELAY_SECONDS = /^\s*(\d+)\s*$/;

/**
 * Milliseconds a `Retry-After` value asks for: delay-seconds or an HTTP date (RFC 9110 10.2.3),
 * measured from `nowMs`. Undefined when absent or unreadable; a date in the past means "now" (0).
 */
export function parseRetryAfter(value: string | null | undefined, nowMs: number): number | undefined {
  if (value === null || value === undefined) return undefined;
  const seconds = DELAY_SECONDS.exec(value)?.[1];
  if (seconds !== undefined) return Number(seconds) * 1000;
  // Date.parse also reads ISO and other formats; RFC 9110 dates always name a weekday and "GMT".
  if (!/GMT\s*$/.test(value)) return undefined;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - nowMs);
}
