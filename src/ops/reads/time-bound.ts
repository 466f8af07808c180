// The time bounds operators type (CLI --since/--until, the admin API's since/until, the dashboard's
// range): an ISO 8601 time, or a duration back from now such as 90s, 15m, 6h or 2d.

const UNIT_MS: Readonly<Record<string, number>> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** The longest duration back from now: a century, far more than any table holds. */
const MAX_LOOKBACK_MS = 36_500 * 86_400_000;

/**
 * The instants a bound may name: years 1 to 9999, what both JavaScript's ISO 8601 output and
 * PostgreSQL's timestamptz read back the same way. Anything outside (year 0, a duration of millions of
 * days) would fail deep in a query instead of being refused as the bad value it is.
 */
export const EARLIEST_MS = new Date(0).setUTCFullYear(1, 0, 1);
export const LATEST_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

const ABSOLUTE = /^(\d{4})-(\d{2})-(\d{2})([T ][\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$/;

/** Whether year-month-day is a day of the calendar (`2026-02-30` is not; JavaScript would roll it over). */
function isCalendarDay(year: number, month: number, day: number): boolean {
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  return date.getUTCFullYear() === year && date.getUTCMonth() === month - 1 && date.getUTCDate() === day;
}

/** The instant `value` names, or undefined when it is neither form or out of range (a bad value for the caller to refuse). */
export function parseTimeBound(value: string, nowMs: number): Date | undefined {
  const typed = value.trim();
  const relative = /^(\d{1,9})([smhd])$/.exec(typed);
  if (relative !== null) {
    const backMs = Number(relative[1]) * (UNIT_MS[relative[2] as string] ?? 0);
    return backMs > MAX_LOOKBACK_MS ? undefined : new Date(nowMs - backMs);
  }
  // A date, optionally with a time: Date.parse alone would take "1" or "May 5" too.
  const absolute = ABSOLUTE.exec(typed);
  if (absolute === null || !isCalendarDay(Number(absolute[1]), Number(absolute[2]), Number(absolute[3]))) {
    return undefined;
  }
  const ms = new Date(typed).getTime();
  return Number.isNaN(ms) || ms < EARLIEST_MS || ms > LATEST_MS ? undefined : new Date(ms);
}

/** `since`/`until` as typed (already checked), as instants against `nowMs`. */
export function timeRange(
  typed: { since?: string | undefined; until?: string | undefined },
  nowMs: number,
): { since: Date | undefined; until: Date | undefined } {
  return {
    since: typed.since === undefined ? undefined : parseTimeBound(typed.since, nowMs),
    until: typed.until === undefined ? undefined : parseTimeBound(typed.until, nowMs),
  };
}
