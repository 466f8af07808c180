// Rows by status, as the operator's lists show them (`{failed: 3, …}`) beside their rows. Where a
// count must be read from the table itself (a filter no counter table holds), it stops at COUNT_CAP
// rows per status: an operator needs "more than ten thousand", not a scan of ten million rows.
import { and, type SQL, sql } from 'drizzle-orm';
import type { AnyPgColumn, PgTable } from 'drizzle-orm/pg-core';
import type { Executor } from '../../db/client.ts';

/** The most rows counted per status when a count reads the table. */
export const COUNT_CAP = 10_000;

export interface CountsByStatus {
  /** Rows per status; a status with none is absent. */
  byStatus: Record<string, number>;
  /** The statuses whose figure is "at least": counting stopped at COUNT_CAP. Empty when all are exact. */
  atLeast: readonly string[];
}

/** Counted rows by status as the operator surfaces show them (`{failed: 3, …}`; a status with none is absent). */
export function countsByStatus(rows: Iterable<{ status: string; n: string | number }>): Record<string, number> {
  return Object.fromEntries([...rows].map((row) => [row.status, Number(row.n)]).filter(([, n]) => n !== 0));
}

/**
 * Rows of `table` matching `where`, by the value of its `status` column (of the enum `enumName`):
 * one count per status, each a range of the table's (status, time) index that stops after
 * COUNT_CAP + 1 rows, so a time filter counts only its window and no count reads more than that.
 */
export async function countPerStatus(
  db: Executor,
  table: PgTable,
  status: AnyPgColumn,
  enumName: string,
  where: SQL | undefined,
): Promise<CountsByStatus> {
  const rows = await db.execute<{ status: string; n: number }>(sql`select s.status::text as status, c.n
    from unnest(${sql.raw(`enum_range(null::${enumName})`)}) as s(status)
    cross join lateral (select count(*)::int as n from (select from ${table}
      where ${and(sql`${status} = s.status`, where)} limit ${COUNT_CAP + 1}) as capped) as c
    where c.n > 0`);
  return {
    byStatus: countsByStatus(rows.map((row) => ({ status: row.status, n: Math.min(row.n, COUNT_CAP) }))),
    atLeast: rows.filter((row) => row.n > COUNT_CAP).map((row) => row.status),
  };
}

/**
 * Rows of `table` matching a selective `where` (an id prefix, a subject), by status: one walk of the
 * index that serves `where`, stopped after COUNT_CAP + 1 rows, then grouped. When it stops, every
 * figure is "at least".
 */
export async function countMatching(
  db: Executor,
  table: PgTable,
  status: AnyPgColumn,
  where: SQL | undefined,
): Promise<CountsByStatus> {
  const rows = await db.execute<{ status: string; n: number }>(sql`select status::text as status, count(*)::int as n
    from (select ${status} as status from ${table} where ${where ?? sql`true`} limit ${COUNT_CAP + 1}) as matching
    group by 1`);
  const stopped = rows.reduce((sum, row) => sum + row.n, 0) > COUNT_CAP;
  return { byStatus: countsByStatus(rows), atLeast: stopped ? rows.map((row) => row.status) : [] };
}
