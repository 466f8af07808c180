// Inbox events counted by status without reading the events: webhook_event_counts holds, for every
// arrival hour (per sender and type), every arrival minute (all senders) and all time, how many
// events are in each status, kept by triggers in the transactions that change the rows
// (drizzle/0004_event_counts_triggers.sql). A count over a time range takes the coarsest counters
// that fit inside it and counts only the ragged ends (less than a minute, or an hour when a sender
// or type is chosen) from the table, so it reads a few hundred rows whatever the table holds.
// Each connection adds to counters of its own slot; ops/maintenance/counters-fold.ts merges them, off the intake's path.
import { and, eq, gte, lt, type SQL, sql } from 'drizzle-orm';
import type { Executor } from '../../db/client.ts';
import { rangesUnder, webhookEventCounts, webhookEvents } from '../../db/schema.ts';
import { countsByStatus } from './counts.ts';

const e = webhookEvents;
const c = webhookEventCounts;

/** The counters' resolutions in seconds: 0 is the one all-time bucket. */
type Resolution = 0 | 60 | 3600;
/** The minute counters add all senders and types together under this name. */
const ALL = '*';

/** A half-open range of arrival times [from, to), either end open; `seconds` unset: count it from the table. */
interface Piece {
  from?: number | undefined;
  to?: number | undefined;
  seconds?: Resolution;
}

/**
 * [from, to) cut into whole buckets of the coarsest resolution first, then finer ones for what is
 * left at each end, and the table for the rest (less than the finest resolution at each end).
 */
export function piecesOf(
  from: number | undefined,
  to: number | undefined,
  resolutions: readonly Resolution[],
): Piece[] {
  if (from !== undefined && to !== undefined && from >= to) return [];
  const [seconds, ...finer] = resolutions;
  if (seconds === undefined) return [{ from, to }];
  const step = seconds * 1000;
  const start = from === undefined ? undefined : Math.ceil(from / step) * step;
  const end = to === undefined ? undefined : Math.floor(to / step) * step;
  if (start !== undefined && end !== undefined && start >= end) return piecesOf(from, to, finer);
  return [
    ...(from === undefined ? [] : piecesOf(from, start, finer)),
    { from: start, to: end, seconds },
    ...(to === undefined ? [] : piecesOf(end, to, finer)),
  ];
}

export interface CountedSelection {
  provider?: string | undefined;
  type?: string | undefined;
  since?: Date | undefined;
  until?: Date | undefined;
}

const at = (ms: number) => new Date(ms).toISOString();

function pieceCount(piece: Piece, selection: CountedSelection): SQL {
  const { from, to, seconds } = piece;
  if (seconds === undefined) {
    const where = and(
      selection.provider === undefined ? undefined : eq(e.provider, selection.provider),
      selection.type === undefined ? undefined : eq(e.eventType, selection.type),
      from === undefined ? undefined : gte(e.receivedAt, sql`${at(from)}::timestamptz`),
      to === undefined ? undefined : lt(e.receivedAt, sql`${at(to)}::timestamptz`),
    );
    // Each range of rows through its own index: under a sender or a type, that filter's listing index
    // (which holds no queue row) and the queue's statuses (listingRanges); else a status at a time.
    const ranges = rangesUnder(e, selection.provider !== undefined || selection.type !== undefined).map(
      (range) => sql`select ${e.status} as status from ${e} where ${and(range, where)}`,
    );
    return sql`select status::text as status, count(*) as n from (${sql.join(ranges, sql` union all `)}) as arrived
      group by 1`;
  }
  const bySender = seconds !== 60;
  return sql`select ${c.status}::text as status, sum(${c.n}) as n from ${c} where ${and(
    eq(c.bucketSeconds, seconds),
    bySender ? undefined : eq(c.provider, ALL),
    !bySender || selection.provider === undefined ? undefined : eq(c.provider, selection.provider),
    !bySender || selection.type === undefined ? undefined : eq(c.eventType, selection.type),
    from === undefined ? undefined : gte(c.bucketStart, sql`${at(from)}::timestamptz`),
    to === undefined ? undefined : lt(c.bucketStart, sql`${at(to)}::timestamptz`),
  )} group by 1`;
}

/**
 * The statement that counts events by status under a sender, a type and a range of arrival times
 * (each optional), exactly: rows of `status` and `n`, a status whose counters add up to nothing
 * possibly among them with 0.
 */
export function countersQuery(selection: CountedSelection): SQL {
  const from = selection.since?.getTime();
  const to = selection.until?.getTime();
  // The minute counters do not tell senders or types apart.
  const resolutions: Resolution[] =
    selection.provider === undefined && selection.type === undefined ? [3600, 60] : [3600];
  const allTime: Piece = { seconds: 0 };
  // Everything before a time is all time less what came since: a day of counters, not a month's.
  const parts: Array<{ piece: Piece; sign: 1 | -1 }> =
    from === undefined && to !== undefined
      ? [
          { piece: allTime, sign: 1 },
          ...piecesOf(to, undefined, resolutions).map((piece) => ({ piece, sign: -1 as const })),
        ]
      : (from === undefined ? [allTime] : piecesOf(from, to, resolutions)).map((piece) => ({
          piece,
          sign: 1 as const,
        }));
  if (parts.length === 0) return sql`select null::text as status, 0::bigint as n where false`;
  const union = sql.join(
    parts.map(({ piece, sign }) =>
      sign === 1
        ? sql`(${pieceCount(piece, selection)})`
        : sql`(select status, -n as n from (${pieceCount(piece, selection)}) as later)`,
    ),
    sql` union all `,
  );
  return sql`select status, sum(n)::bigint as n from (${union}) as parts group by status`;
}

/** Events by status under a sender, a type and a range of arrival times (each optional), exactly. */
export async function countEventsFromCounters(
  db: Executor,
  selection: CountedSelection,
): Promise<Record<string, number>> {
  return countsByStatus(await db.execute<{ status: string; n: string }>(countersQuery(selection)));
}

/**
 * The statement that counts events received in [from, to) by current status per bucket of
 * `bucketMs` (whole minutes) counted from `from`, from the minute counters, added up in the
 * database: rows of the bucket's index `i`, `status` and `n` (never 0). A day of minutes is
 * thousands of counter rows, its 96 buckets a few hundred figures.
 */
export function arrivalsQuery(window: { fromMs: number; toMs: number; bucketMs: number }): SQL {
  const from = sql`${at(window.fromMs)}::timestamptz`;
  return sql`
    select (extract(epoch from ${c.bucketStart} - ${from}) * 1000)::bigint / ${window.bucketMs} as i,
      ${c.status}::text as status, sum(${c.n}::int)::int as n
    from ${c}
    where ${c.bucketSeconds} = 60 and ${c.provider} = ${ALL}
      and ${c.bucketStart} >= ${from} and ${c.bucketStart} < ${at(window.toMs)}::timestamptz
    group by 1, ${c.status} having sum(${c.n}::int) <> 0`;
}
