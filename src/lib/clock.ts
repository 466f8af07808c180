// Time and identity as dependencies: the clock and the id generator are passed in (never read from
// globals deep inside), so tests move time instead of sleeping and name what they create.
import { v7 } from 'uuid';

/** Milliseconds since the epoch; injected so tests move time instead of sleeping. */
export type Clock = () => number;

/** A 32-hex id (trace ids, relay and worker ids), from the Web Crypto both runtimes have. */
export const newHexId = (): string => crypto.randomUUID().replaceAll('-', '');

/** Makes the id of a row the service writes. */
export type IdGenerator = () => string;

/**
 * A UUIDv7 (RFC 9562): its first 48 bits are the time in milliseconds and the `uuid` package keeps a
 * counter behind them, so one process's ids increase even within a millisecond. An index on them
 * grows at its right edge instead of taking each insert at a random leaf
 * (docs/decisions/0017-time-ordered-outbox-ids.md).
 */
export const newTimeOrderedId: IdGenerator = () => v7();

/**
 * Milliseconds since `startedAt` (a `performance.now()` reading), to 0.01 ms: the `duration_ms` of
 * every log line, measured on the monotonic clock so a wall-clock step cannot make it negative.
 */
export function elapsedMs(startedAt: number): number {
  return Math.round((performance.now() - startedAt) * 100) / 100;
}

/** A timestamp column as JSON: ISO 8601, or null when unset. */
export const isoOrNull = (date: Date | null): string | null => (date === null ? null : date.toISOString());
