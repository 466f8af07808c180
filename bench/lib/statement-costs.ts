// What each statement costs PostgreSQL per event, from pg_stat_statements, for `bench:ab`: the
// write-ahead log a statement writes is counted, not timed, so unlike CPU per event it does not move
// with the machine's load, and a change that adds or removes an index entry shows in one run. Read
// per database (each contender has its own), as the difference between two snapshots around the
// measured rounds, so migrations and warm-up are left out. Only where the server loads the extension
// (`shared_preload_libraries`, and `create extension pg_stat_statements` in the database the admin
// URL names); elsewhere `bench:ab` says so and prints the rest.
import type postgres from 'postgres';

/** Marks the benchmark's own statements (its checks of what was stored), which are not a contender's cost. */
export const BENCH_STATEMENT = '/* bench:ab */';

interface StatementTotals {
  query: string;
  calls: number;
  rows: number;
  execMs: number;
  walRecords: number;
  walBytes: number;
}

export type Snapshot = Map<string, StatementTotals>;

/** Whether the admin connection can read pg_stat_statements. */
export async function statementStatsAvailable(admin: postgres.Sql): Promise<boolean> {
  try {
    await admin`select 1 from pg_stat_statements limit 1`;
    return true;
  } catch {
    return false;
  }
}

/** Every statement run in `database` so far, by query id; the benchmark's own left out. */
export async function snapshot(admin: postgres.Sql, database: string): Promise<Snapshot> {
  const rows = await admin<(StatementTotals & { queryid: string })[]>`
    select s.queryid::text as queryid, s.query, s.calls::float8 as calls, s.rows::float8 as rows,
      s.total_exec_time as "execMs", s.wal_records::float8 as "walRecords", s.wal_bytes::float8 as "walBytes"
    from pg_stat_statements s join pg_database d on d.oid = s.dbid
    where d.datname = ${database} and s.query not like ${`${BENCH_STATEMENT}%`}`;
  return new Map(rows.map(({ queryid, ...totals }) => [queryid, totals]));
}

export interface StatementCost {
  /** The statement's text, whitespace folded, cut short. */
  statement: string;
  execUsPerEvent: number;
  walRecordsPerEvent: number;
  walBytesPerEvent: number;
  /** Rows the statement returned or changed, per event. */
  rowsPerEvent: number;
}

export interface StatementCosts {
  total: Omit<StatementCost, 'statement' | 'rowsPerEvent'>;
  statements: StatementCost[];
}

const per = (value: number, events: number) => Math.round((value / events) * 100) / 100;

/** What the statements run between two snapshots cost per event, the costliest first. */
export function costsBetween(before: Snapshot, after: Snapshot, events: number): StatementCosts {
  const statements: StatementCost[] = [];
  let execMs = 0;
  let walRecords = 0;
  let walBytes = 0;
  for (const [id, end] of after) {
    const start = before.get(id);
    const calls = end.calls - (start?.calls ?? 0);
    if (calls <= 0) continue;
    const spent = {
      execMs: end.execMs - (start?.execMs ?? 0),
      walRecords: end.walRecords - (start?.walRecords ?? 0),
      walBytes: end.walBytes - (start?.walBytes ?? 0),
      rows: end.rows - (start?.rows ?? 0),
    };
    execMs += spent.execMs;
    walRecords += spent.walRecords;
    walBytes += spent.walBytes;
    statements.push({
      statement: end.query.replace(/\s+/g, ' ').trim().slice(0, 70),
      execUsPerEvent: per(spent.execMs * 1000, events),
      walRecordsPerEvent: per(spent.walRecords, events),
      walBytesPerEvent: per(spent.walBytes, events),
      rowsPerEvent: per(spent.rows, events),
    });
  }
  statements.sort((a, b) => b.execUsPerEvent - a.execUsPerEvent);
  return {
    total: {
      execUsPerEvent: per(execMs * 1000, events),
      walRecordsPerEvent: per(walRecords, events),
      walBytesPerEvent: per(walBytes, events),
    },
    statements,
  };
}

/**
 * Base beside head, statement by statement (matched by their text): the totals, then every
 * statement that costs either side at least a microsecond or a WAL record per event.
 */
export function formatCosts(mode: string, base: StatementCosts, head: StatementCosts): string {
  const cell = (cost: Omit<StatementCost, 'statement' | 'rowsPerEvent'> | undefined) =>
    cost === undefined
      ? '-'.padStart(22)
      : `${cost.execUsPerEvent.toFixed(1).padStart(7)} µs ${cost.walRecordsPerEvent.toFixed(2).padStart(6)} rec`;
  const texts = [...new Set([...base.statements, ...head.statements].map((cost) => cost.statement))];
  const find = (costs: StatementCosts, text: string) => costs.statements.find((cost) => cost.statement === text);
  const lines = texts
    .map((text) => ({ text, base: find(base, text), head: find(head, text) }))
    .filter(({ base: b, head: h }) =>
      [b, h].some((cost) => cost !== undefined && (cost.execUsPerEvent >= 1 || cost.walRecordsPerEvent >= 0.5)),
    )
    .map(({ text, base: b, head: h }) => `  ${cell(b)}  ${cell(h)}  ${text}`);
  return [
    `${mode}: PostgreSQL per event by statement (pg_stat_statements, the measured rounds), base / head`,
    `  ${cell(base.total)}  ${cell(head.total)}  all statements (WAL bytes ${base.total.walBytesPerEvent} / ${head.total.walBytesPerEvent})`,
    ...lines,
  ].join('\n');
}
