// Time and identity as dependencies: the clock and the id generator are passed in (never read from
// globals deep inside), so tests move time instead of sleeping and name what they create.

/** Milliseconds since the epoch; injected so tests move time instead of sleeping. */
export type Clock = () => number;

/** A 32-hex id (trace ids, relay and worker ids), from the Web Crypto both runtimes have. */
export const newHexId = (): string => crypto.randomUUID().replaceAll('-', '');

/**
 * Milliseconds since `startedAt` (a `performance.now()` reading), to 0.01 ms: the `duration_ms` of
 * every log line, measured on the monotonic clock so a wall-clock step cannot make it negative.
 */
export function elapsedMs(startedAt: number): number {
  return Math.round((performance.now() - startedAt) * 100) / 100;
}

/** A timestamp column as JSON: ISO 8601, or null when unset. */
export const isoOrNull = (date: Date | null): string | null => (date === null ? null : date.toISOString());
