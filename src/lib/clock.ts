// Time and identity as dependencies: the clock and the id generator are passed in (never read from
// globals deep inside), so tests move time instead of sleeping and name what they create.
import { v7 } from 'uuid';

/** Milliseconds since the epoch; injected so tests move time instead of sleeping. */
export type Clock = () => number;

/** A 32-hex id (trace ids, and every lease owner: relays, workers, job runners, in every runtime), from the Web Crypto both runtimes have. */
export const newHexId = (): string => crypto.randomUUID().replaceAll('-', '');

/** Makes the id of a row the service writes. */
export type IdGenerator = () => string;

/**
 * Random bytes for ids, drawn from Web Crypto a pool at a time: one `getRandomValues` call costs
 * about as much for 4 KiB as for the 16 bytes of one id (measured: 10 µs a call on Node, one call per
 * outbox message before the pool).
 */
const randomPool = new Uint8Array(4096);
let randomPoolAt = randomPool.length;

function poolRandom16(): Uint8Array {
  if (randomPoolAt + 16 > randomPool.length) {
    crypto.getRandomValues(randomPool);
    randomPoolAt = 0;
  }
  randomPoolAt += 16;
  return randomPool.subarray(randomPoolAt - 16, randomPoolAt);
}

/** The time and counter of the last id, as the `uuid` package keeps them for a `v7()` without options. */
const timeOrdered = { msecs: Number.NEGATIVE_INFINITY, seq: 0 };

/**
 * A UUIDv7 (RFC 9562): its first 48 bits are the time in milliseconds, and a counter behind them
 * (seeded at random each millisecond, the `uuid` package's own rule) keeps one process's ids
 * increasing within a millisecond. An index on them grows at its right edge instead of taking each
 * insert at a random leaf (docs/decisions/0017-time-ordered-outbox-ids.md). The random bytes come from
 * the pool above, so `v7` is given its state rather than keeping its own.
 */
export const newTimeOrderedId: IdGenerator = () => {
  const random = poolRandom16();
  const now = Date.now();
  if (now > timeOrdered.msecs) {
    timeOrdered.msecs = now;
    // 31 random bits, as `uuid` seeds its counter: room to count up within the millisecond.
    timeOrdered.seq =
      (((random[6] ?? 0) & 0x7f) << 24) | ((random[7] ?? 0) << 16) | ((random[8] ?? 0) << 8) | (random[9] ?? 0);
  } else {
    timeOrdered.seq = (timeOrdered.seq + 1) | 0;
    if (timeOrdered.seq === 0) timeOrdered.msecs++;
  }
  return v7({ random, msecs: timeOrdered.msecs, seq: timeOrdered.seq });
};

/**
 * Milliseconds since `startedAt` (a `performance.now()` reading), to 0.01 ms: the `duration_ms` of
 * every log line, measured on the monotonic clock so a wall-clock step cannot make it negative.
 */
export function elapsedMs(startedAt: number): number {
  return Math.round((performance.now() - startedAt) * 100) / 100;
}

/** A timestamp column as JSON: ISO 8601, or null when unset. */
export const isoOrNull = (date: Date | null): string | null => (date === null ? null : date.toISOString());

/** Waits `ms` (less when `signal` aborts first); injected like the clock, so tests move time instead. */
export type Sleep = (ms: number, signal?: AbortSignal) => Promise<void>;

/** The runtime's timers: Node's and the Workers' alike. */
export const timerSleep: Sleep = (ms, signal) =>
  new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
