// How fast the relay sends to a destination that answered 429 (docs/decisions/0021
// and 0032-pace-to-the-measured-rate.md): what the target asked for, and then the rate it showed it takes, so that it is seldom
// asked again. A 429 is a wait: nothing starts before its Retry-After (else a backoff growing with
// the waves of 429s in a row). It is also a measurement: the publishes the target took in the
// second before it are the rate it allows, and from then on the relay starts one publish every
// 1/rate seconds (a little under the rate measured, PACE_MARGIN), spread out rather than a burst a
// pass, so a limiter by the second (fixed window or token bucket) takes every one of them. A 429
// with nothing taken in the second before it halves a rate already learned; with none learned the
// destination only waits. The rate creeps up (PACE_RAISE_FACTOR) after each PACE_RAISE_AFTER_MS
// without a 429, so a target whose limit rose is found again. This process's own, like
// `rate_per_second`: another process measures the target by itself.
import { type BackoffPolicy, type RandomSource, retryDelayMs } from '../lib/backoff.ts';

/** The window a 429 measures the target's rate over: limits are stated (and Retry-After rounded) in seconds. */
export const PACE_WINDOW_MS = 1000;
/**
 * The share of the measured rate the relay sends at: room for the jitter of two processes' timers
 * and the network, which would otherwise put one publish too many in a target's second now and then
 * (each 429 costs a whole Retry-After, a second's worth of messages).
 */
export const PACE_MARGIN = 0.95;
/** The time without a 429 after which the learned rate is raised by PACE_RAISE_FACTOR. */
export const PACE_RAISE_AFTER_MS = 30_000;
export const PACE_RAISE_FACTOR = 1.05;
/** The slowest learned rate: a message every ten seconds. */
export const PACE_MIN_RATE = 0.1;

export interface Pacer {
  /** Whether nothing may start at `nowMs` (a 429's wait is not over). */
  waiting(nowMs: number): boolean;
  /** When the wait ends (0 before any 429). */
  readonly untilMs: number;
  /** The rate learned from the target's 429s; undefined while it has not been measured. */
  readonly ratePerSecond: number | undefined;
  /** The target took a publish. */
  published(nowMs: number): void;
  /**
   * A 429: the wait begins (or is lengthened) and the rate is measured. `began` for the first 429 of
   * a wave (the publishes in flight together are one request to slow down).
   */
  refused(nowMs: number, retryAfterMs: number | undefined): { began: boolean; delayMs: number };
  /** When the next publish may start, at `nowMs` or later: now while no rate is learned. */
  nextStartMs(nowMs: number): number;
  /** That start taken: the one after it is 1/rate later. */
  take(startMs: number): void;
  /** At most this many of `wanted` in one claim: a second's worth while metered, so nothing waits long under its lease. */
  claimLimit(wanted: number): number;
}

export function createPacer(backoff: BackoffPolicy, random: RandomSource): Pacer {
  let untilMs = 0;
  /** 429 waves without a publish between them: the backoff used without a Retry-After. */
  let inARow = 0;
  let rate: number | undefined;
  /** The earliest start of the next publish while metered. */
  let slotMs = 0;
  /** Since when the target has not answered 429 (or the rate was last raised). */
  let steadySinceMs = 0;
  /** Times of the publishes taken within the last PACE_WINDOW_MS, oldest first. */
  const taken: number[] = [];

  const takenWithin = (nowMs: number) => {
    while (taken.length > 0 && (taken[0] ?? 0) <= nowMs - PACE_WINDOW_MS) taken.shift();
    return taken.length;
  };

  /** The rate a 429 shows: the wave's first sets it, its others only raise it (their publishes settled later). */
  function measure(nowMs: number, began: boolean): void {
    const count = takenWithin(nowMs);
    if (count > 0) {
      const measured = Math.max(PACE_MIN_RATE, count * PACE_MARGIN);
      rate = began || rate === undefined ? measured : Math.max(rate, measured);
    } else if (began && rate !== undefined) {
      rate = Math.max(PACE_MIN_RATE, rate / 2);
    }
    steadySinceMs = nowMs;
  }

  return {
    waiting: (nowMs) => nowMs < untilMs,
    get untilMs() {
      return untilMs;
    },
    get ratePerSecond() {
      return rate;
    },
    published(nowMs) {
      inARow = 0;
      taken.push(nowMs);
      takenWithin(nowMs);
    },
    refused(nowMs, retryAfterMs) {
      const began = nowMs >= untilMs;
      if (began) inARow += 1;
      measure(nowMs, began);
      const delayMs = retryDelayMs(backoff, inARow, random, retryAfterMs);
      // At least a millisecond, so the rest of this wave sees the wait still ahead.
      untilMs = Math.max(untilMs, nowMs + Math.max(1, delayMs));
      slotMs = Math.max(slotMs, untilMs);
      return { began, delayMs: untilMs - nowMs };
    },
    nextStartMs(nowMs) {
      if (rate === undefined) return nowMs;
      if (nowMs - steadySinceMs >= PACE_RAISE_AFTER_MS) {
        rate *= PACE_RAISE_FACTOR;
        steadySinceMs = nowMs;
      }
      return Math.max(nowMs, slotMs);
    },
    take(startMs) {
      if (rate !== undefined) slotMs = startMs + 1000 / rate;
    },
    claimLimit(wanted) {
      return rate === undefined ? wanted : Math.min(wanted, Math.max(1, Math.ceil(rate)));
    },
  };
}
