// Keyset paging for the operator listings (events, outbox), newest first. A cursor names the last row
// of a page by its sort key: the row's time in whole microseconds (PostgreSQL's precision; a JS Date
// would round it to milliseconds and skip or repeat rows that share one) and the key columns that
// break ties. It is opaque to clients (base64url JSON) and checked when read back: a cursor that
// does not decode is a bad value, never a query.
import { type SQL, sql } from 'drizzle-orm';
import type { AnyPgColumn } from 'drizzle-orm/pg-core';
import type { Executor } from '../../db/client.ts';
import { isStorableText } from '../../lib/text.ts';
import type { CountsByStatus } from './counts.ts';
import { EARLIEST_MS, LATEST_MS, timeRange } from './time-bound.ts';

export interface PageKey {
  /** Microseconds since the epoch, as PostgreSQL's own digits. */
  atMicros: string;
  /** The columns that break ties, in sort order. */
  keys: readonly string[];
}

export function encodeCursor(key: PageKey): string {
  const bytes = new TextEncoder().encode(JSON.stringify([key.atMicros, ...key.keys]));
  return btoa(String.fromCharCode(...bytes))
    .replaceAll('+', '-')
    .replaceAll('/', '_')
    .replace(/=+$/, '');
}

/** The instants a cursor may hold, in microseconds: those a time bound may name (PostgreSQL reads them all). */
const EARLIEST_MICROS = BigInt(EARLIEST_MS) * 1000n;
const LATEST_MICROS = BigInt(LATEST_MS) * 1000n + 999n;

/**
 * The cursor's key, or undefined when it is not one of ours with `keyCount` tie-breakers. A client can
 * write any cursor, so its contents are checked as strictly as a filter: a time PostgreSQL can hold,
 * keys it can compare (no NUL, no lone surrogate) and, with `isKey`, of the key column's type.
 */
export function decodeCursor(
  cursor: string,
  keyCount: number,
  isKey: (key: string) => boolean = isStorableText,
): PageKey | undefined {
  try {
    const binary = atob(cursor.replaceAll('-', '+').replaceAll('_', '/'));
    const parsed: unknown = JSON.parse(new TextDecoder().decode(Uint8Array.from(binary, (c) => c.charCodeAt(0))));
    if (!Array.isArray(parsed) || parsed.length !== keyCount + 1) return undefined;
    if (!parsed.every((part) => typeof part === 'string')) return undefined;
    const [atMicros, ...keys] = parsed as string[];
    if (atMicros === undefined || !/^-?\d{1,18}$/.test(atMicros)) return undefined;
    const at = BigInt(atMicros);
    if (at < EARLIEST_MICROS || at > LATEST_MICROS || !keys.every((key) => isStorableText(key) && isKey(key))) {
      return undefined;
    }
    return { atMicros, keys };
  } catch {
    return undefined;
  }
}

/** The time column as whole microseconds, exact (extract() is numeric since PostgreSQL 14). */
export const micros = (column: AnyPgColumn): SQL<string> =>
  sql<string>`(extract(epoch from ${column}) * 1000000)::bigint::text`;

/** Rows strictly after the cursor in the order (time desc, keys desc): one row comparison, index-friendly. */
export function after(time: AnyPgColumn, keyColumns: readonly AnyPgColumn[], key: PageKey): SQL {
  const at = sql`(timestamptz 'epoch' + ${key.atMicros}::bigint * interval '1 microsecond')`;
  const columns = sql.join([time, ...keyColumns], sql`, `);
  const values = sql.join([at, ...key.keys.map((value) => sql`${value}`)], sql`, `);
  return sql`(${columns}) < (${values})`;
}

/** `LIKE` pattern for "starts with", with the pattern characters of the input taken literally. */
export function startsWith(prefix: string): string {
  return `${prefix.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/** A cursor that is not one of ours: the caller's bad value (a 400, or a usage error). */
export class InvalidCursor extends Error {
  constructor() {
    super('not a cursor from a previous page');
    this.name = 'InvalidCursor';
  }
}

/** The position a listing resumes from: none without a cursor; a cursor that does not decode is refused. */
export function resumeFrom(
  cursor: string | undefined,
  keyCount: number,
  isKey?: (key: string) => boolean,
): PageKey | undefined {
  if (cursor === undefined) return undefined;
  const position = decodeCursor(cursor, keyCount, isKey);
  if (position === undefined) throw new InvalidCursor();
  return position;
}

export interface Page<Row> {
  rows: Row[];
  /** The cursor of the next page; null on the last one. */
  nextCursor: string | null;
}

/**
 * A listing reads one row more than `limit`: whether it came says if there is a next page. The rows
 * carry their sort time as `atMicros`, which becomes the cursor and is left out of the page.
 */
export function pageOf<Row extends { atMicros: string }>(
  rows: readonly Row[],
  limit: number,
  keys: (row: Row) => readonly string[],
): Page<Omit<Row, 'atMicros'>> {
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  return {
    rows: page.map(({ atMicros: _, ...row }) => row),
    nextCursor:
      rows.length > limit && last !== undefined ? encodeCursor({ atMicros: last.atMicros, keys: keys(last) }) : null,
  };
}

/** What both listings (events, outbox) share of their filters: the time window and the page. */
export interface ListWindow {
  /** At or after (received, created). */
  since?: Date | undefined;
  /** Before. */
  until?: Date | undefined;
  /** Where the previous page ended (its `nextCursor`). */
  cursor?: string | undefined;
  limit: number;
}

/** A listing's filter as typed (its time bounds as words), with those bounds read as instants. */
export type ReadFilter<Typed> = Omit<Typed, 'since' | 'until'> & { since: Date | undefined; until: Date | undefined };

type TypedRange = { since?: string | undefined; until?: string | undefined };
type ListingRead<Typed, Result> = (db: Executor, filter: ReadFilter<Typed>) => Promise<Result>;

/**
 * One listing read as the admin API and the dashboard read both (events, outbox): the typed time
 * bounds read against `nowMs`, then the page and, where `count` is given, the counts by status of
 * the same filter (its cursor and page size narrow only the page), read side by side.
 */
export function readListing<Typed extends TypedRange, Row>(
  db: Executor,
  typed: Typed,
  nowMs: number,
  list: ListingRead<Typed, Page<Row>>,
  count: ListingRead<Typed, CountsByStatus>,
): Promise<{ page: Page<Row>; counts: CountsByStatus }>;
export function readListing<Typed extends TypedRange, Row>(
  db: Executor,
  typed: Typed,
  nowMs: number,
  list: ListingRead<Typed, Page<Row>>,
  count: ListingRead<Typed, CountsByStatus> | undefined,
): Promise<{ page: Page<Row>; counts: CountsByStatus | undefined }>;
export async function readListing<Typed extends TypedRange, Row>(
  db: Executor,
  typed: Typed,
  nowMs: number,
  list: ListingRead<Typed, Page<Row>>,
  count: ListingRead<Typed, CountsByStatus> | undefined,
): Promise<{ page: Page<Row>; counts: CountsByStatus | undefined }> {
  const filter = { ...typed, ...timeRange(typed, nowMs) } as ReadFilter<Typed>;
  const [page, counts] = await Promise.all([list(db, filter), count?.(db, filter)]);
  return { page, counts };
}
