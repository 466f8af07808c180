// What operators read about refused deliveries (the admin API, the dashboard, the CLI): the ring of
// the most recent ones, newest first, and the minute counts added up per sender and reason over a time
// range, or per chart bucket for the overview. Written by src/inbox/rejection-log.ts.
import { and, desc, eq, gte, lt, type SQL, sql } from 'drizzle-orm';
import type { Executor } from '../../db/client.ts';
import { webhookRejectionCounts, webhookRejections } from '../../db/schema.ts';
import { REJECTION_REASONS, type RejectionReason } from '../../lib/rejection-reasons.ts';

const r = webhookRejections;
const counts = webhookRejectionCounts;

export interface RejectionFilter {
  provider?: string | undefined;
  reason?: RejectionReason | undefined;
  since?: Date | undefined;
  until?: Date | undefined;
}

export interface RejectionListing {
  at: Date;
  provider: string;
  statusCode: number;
  reason: string;
  detail: string | null;
  traceId: string | null;
  headers: Record<string, string>;
}

/** The kept refusals under the filter, newest first (at most the ring's size exist). */
export async function listRejections(
  db: Executor,
  filter: RejectionFilter & { limit: number },
): Promise<RejectionListing[]> {
  const rows = await db
    .select({
      at: r.at,
      provider: r.provider,
      statusCode: r.statusCode,
      reason: r.reason,
      detail: r.detail,
      traceId: r.traceId,
      headers: r.headers,
    })
    .from(r)
    .where(
      and(
        filter.provider === undefined ? undefined : eq(r.provider, filter.provider),
        filter.reason === undefined ? undefined : eq(r.reason, filter.reason),
        filter.since === undefined ? undefined : gte(r.at, filter.since),
        filter.until === undefined ? undefined : lt(r.at, filter.until),
      ),
    )
    .orderBy(desc(r.at), desc(r.slot))
    .limit(filter.limit);
  return rows.map((row) => ({ ...row, headers: stringRecord(row.headers) }));
}

/** The headers as written (rejections.ts): an object of strings; anything else reads as none. */
function stringRecord(value: unknown): Record<string, string> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return {};
  return Object.fromEntries(
    Object.entries(value).filter((entry): entry is [string, string] => typeof entry[1] === 'string'),
  );
}

export interface RejectionCount {
  provider: string;
  reason: string;
  /** The status the reason is answered with (null for a reason this code no longer knows). */
  statusCode: number | null;
  n: number;
  /** The first and the last minute it happened in, within the range. */
  firstMinute: Date;
  lastMinute: Date;
}

/** Minutes are counted whole: one is in the range when it starts in it. */
function countsWhere(filter: RejectionFilter): SQL | undefined {
  return and(
    filter.provider === undefined ? undefined : eq(counts.provider, filter.provider),
    filter.reason === undefined ? undefined : eq(counts.reason, filter.reason),
    filter.since === undefined ? undefined : gte(counts.bucketStart, filter.since),
    filter.until === undefined ? undefined : lt(counts.bucketStart, filter.until),
  );
}

const statusOf = (reason: string): number | null =>
  Object.hasOwn(REJECTION_REASONS, reason) ? REJECTION_REASONS[reason as RejectionReason] : null;

/** Refusals per sender and reason under the filter, the most frequent first. */
export async function countRejections(db: Executor, filter: RejectionFilter): Promise<RejectionCount[]> {
  const rows = await db
    .select({
      provider: counts.provider,
      reason: counts.reason,
      n: sql<string>`sum(${counts.n})::text`,
      firstMinute: sql<string>`min(${counts.bucketStart})`,
      lastMinute: sql<string>`max(${counts.bucketStart})`,
    })
    .from(counts)
    .where(countsWhere(filter))
    .groupBy(counts.provider, counts.reason)
    .orderBy(sql`sum(${counts.n}) desc`, counts.provider, counts.reason);
  return rows.map((row) => ({
    provider: row.provider,
    reason: row.reason,
    statusCode: statusOf(row.reason),
    n: Number(row.n),
    firstMinute: new Date(row.firstMinute),
    lastMinute: new Date(row.lastMinute),
  }));
}

type BucketWindow = { fromMs: number; bucketMs: number; buckets: number };

/**
 * The statement that counts refusals in [from, to) per bucket of `bucketMs` (whole minutes) counted
 * from `from`: rows of the bucket's index `i` and `n`, buckets with none absent. The overview's rate
 * beside the events it accepted (rejectionsPerBucketOf).
 */
export function rejectionsPerBucketQuery(window: BucketWindow): SQL {
  const from = new Date(window.fromMs).toISOString();
  const to = new Date(window.fromMs + window.buckets * window.bucketMs).toISOString();
  return sql`
    select floor(extract(epoch from ${counts.bucketStart} - ${from}::timestamptz) * 1000 / ${window.bucketMs})::int as i,
      sum(${counts.n})::bigint as n
    from ${counts}
    where ${counts.bucketStart} >= ${from}::timestamptz and ${counts.bucketStart} < ${to}::timestamptz
    group by 1`;
}

/** rejectionsPerBucketQuery's rows as one figure per bucket, zero for a bucket with none. */
export function rejectionsPerBucketOf(
  rows: Iterable<{ i: number; n: number | string }>,
  window: BucketWindow,
): number[] {
  const perBucket = Array.from({ length: window.buckets }, () => 0);
  for (const row of rows) {
    if (row.i >= 0 && row.i < window.buckets) perBucket[row.i] = Number(row.n);
  }
  return perBucket;
}
