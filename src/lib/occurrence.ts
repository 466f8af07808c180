// When a sender says an event happened: informational, so read from every way senders write it
// (unix seconds, unix milliseconds, date strings) and kept only inside the range that both
// PostgreSQL's timestamptz and ISO 8601's four-digit years hold. Anything else is no time at all,
// never a refusal and never a failed write: no value a sender controls may become a 503.

/** 9999-12-31T23:59:59Z: the last second an ISO 8601 date with a four-digit year can name. */
export const MAX_UNIX_SECONDS = 253_402_300_799;
const MAX_MS = MAX_UNIX_SECONDS * 1000 + 999;
/** 0001-01-01T00:00:00Z: PostgreSQL has no year 0, and toISOString writes earlier years signed. */
const MIN_MS = -62_135_596_800_000;

/**
 * From here on a number is taken as milliseconds where a sender may use either unit: 1e11 seconds is
 * the year 5138, 1e11 milliseconds is 1973.
 */
const MILLISECONDS_FROM = 1e11;

/** `seconds`: a field documented in unix seconds (Stripe's `created`, Slack's `event_time`). */
export type TimeUnit = 'seconds' | 'seconds-or-milliseconds';

const DIGITS = /^[0-9]{1,16}$/;

/** A date in the storable range, or null. */
export function storableTime(date: Date | null): Date | null {
  const ms = date?.getTime();
  return ms !== undefined && ms >= MIN_MS && ms <= MAX_MS ? date : null;
}

/**
 * The time `value` states: a number (or a string of digits) in `unit`, or a date string; null when
 * it states none that can be stored.
 */
export function occurrenceTime(value: unknown, unit: TimeUnit): Date | null {
  let ms: number;
  if (typeof value === 'string' && !DIGITS.test(value)) {
    ms = value.length > 64 ? Number.NaN : Date.parse(value);
  } else {
    const number = typeof value === 'string' ? Number(value) : value;
    if (typeof number !== 'number' || !Number.isFinite(number)) return null;
    ms = unit === 'seconds-or-milliseconds' && Math.abs(number) >= MILLISECONDS_FROM ? number : number * 1000;
  }
  return Number.isFinite(ms) ? storableTime(new Date(Math.trunc(ms))) : null;
}
