// The time bounds operators type (CLI --since/--until, the admin API's since/until, the dashboard's
// range): an ISO 8601 time, or a duration back from now such as 90s, 15m, 6h or 2d.

const UNIT_MS: Readonly<Record<string, number>> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** The instant `value` names, or undefined when it is neither form (a bad value for the caller to refuse). */
export function parseTimeBound(value: string, nowMs: number): Date | undefined {
  const relative = /^(\d{1,9})([smhd])$/.exec(value.trim());
  if (relative !== null) return new Date(nowMs - Number(relative[1]) * (UNIT_MS[relative[2] as string] ?? 0));
  // A date, optionally with a time: Date.parse alone would take "1" or "May 5" too.
  if (!/^\d{4}-\d{2}-\d{2}([T ][\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(value.trim())) return undefined;
  const absolute = new Date(value.trim());
  return Number.isNaN(absolute.getTime()) ? undefined : absolute;
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
