// The delivery log (`webhook_deliveries`): one row per delivery of an event that passed its checks
// (the first, each retry after a failure, each change of answer) with its time, the answer it got,
// the time it took and its trace id, so an operator can say what we answered each time a sender
// delivered it. A run of duplicates answered alike is one row with a repeat count: a duplicate folds
// into the event's newest row when that row is a duplicate with the same status code (the row keeps
// the first delivery's time, trace id and duration; `repeats` counts the others, `last_delivered_at`
// is the newest's time). Anything else starts a row, so every change of state shows, in order.
// The intake only appends records to a Spool, which folds the same way while records wait (a replay
// flood of one event takes one slot); the runtime flushes it outside the request (Node on a short
// schedule, a Worker after each request), in one transaction per flush: one statement that folds
// each event's first record into its newest row where it repeats it and inserts the rest, then one
// trim that keeps each event given a new row its newest DELIVERY_LOG_CAP rows.
// Retention deletes an event's rows with the event (retention.ts).
import { and, desc, eq, sql } from 'drizzle-orm';
import type { Database, Executor } from '../db/client.ts';
import { describeError, isUniqueViolation } from '../db/errors.ts';
import { executePrepared } from '../db/prepared.ts';
import { webhookDeliveries } from '../db/schema.ts';
import type { Logger } from '../lib/logger.ts';
import type { Metrics } from '../lib/metrics.ts';
import { Spool } from '../lib/spool.ts';
import { isStorableText } from '../lib/text.ts';

/**
 * Rows kept per event, newest first. A sender's whole retry schedule fits with room to spare
 * (Shopify retries 8 times over 4 hours, Stripe for up to three days with exponential backoff), so
 * the cap only bites on an event redelivered in a loop, whose newest 50 say what older ones would.
 * It bounds what one event can cost (bytes per row: docs/scaling.md) and the rows each trim reads.
 */
export const DELIVERY_LOG_CAP = 50;

/**
 * Records held between flushes: about 2.5 s of a 4,000 deliveries/s intake at 250 ms flushes, a few
 * MB of memory. Beyond it the oldest are dropped and counted (a database that stopped taking writes).
 */
export const DELIVERY_LOG_CAPACITY = 10_000;

/**
 * What the log's promise allows one write: a quarter-second's records are one insert and one trim
 * (the trim of 500 events took 5.1 ms in EXPLAIN ANALYZE, docs/scaling.md), with room for a loaded
 * machine.
 */
export const DELIVERY_LOG_WRITE_MS = 50;

/**
 * How long after its answer a delivery's record may still be only in memory, what a SIGKILL can
 * lose: a record appended just after a write took its batch waits for that write to end, the
 * schedule's longest interval, then its own write. Holds only while the write never queues for a
 * connection (src/entry/setup/pools.ts gives it one of its own).
 */
export function deliveryLogDelayBoundMs(longestFlushIntervalMs: number): number {
  return longestFlushIntervalMs + 2 * DELIVERY_LOG_WRITE_MS;
}

/** The answer a delivery got, in words: the event's outcome, or why it was not accepted. */
export type DeliveryLogOutcome = 'completed' | 'ignored' | 'queued' | 'parked' | 'duplicate' | 'failed' | 'unavailable';

/** One delivery of one event, as the intake saw it. */
export interface DeliveryRecord {
  provider: string;
  /** The delivered id; a content-digest duplicate is logged under the stored row's id at flush. */
  eventId: string;
  /** The digest of the signed bytes (GitHub, Shopify): finds the stored row whatever id it came under. */
  contentDigest?: string | undefined;
  /** When the request arrived. */
  deliveredAt: Date;
  traceId: string;
  statusCode: number;
  outcome: DeliveryLogOutcome;
  /** From the body's arrival to the answer. */
  durationMs: number;
  /**
   * Further identical deliveries folded into this record while it waited (see foldDelivery); 0 or
   * absent: this delivery alone.
   */
  repeats?: number;
  /** When the newest of the folded deliveries arrived; absent until the first repeat. */
  lastDeliveredAt?: Date | undefined;
  /**
   * This delivery wrote the event's row (its first store, attempt 1): the event's only earlier rows
   * are those of deliveries refused before it was stored, already trimmed, so its flush does not
   * trim it (see writeDeliveries).
   */
  firstStore?: boolean;
}

/** Where the intake leaves its records; flushed by the runtime with the database it has at hand. */
export type DeliveryLog = Spool<DeliveryRecord, Database>;

/** The shortest time between two warnings about records dropped for room (the metric counts each). */
export const DELIVERY_LOG_LOST_REPORT_MS = 1000;

export function createDeliveryLog(deps: {
  logger: Logger;
  metrics?: Metrics;
  capacity?: number;
  /** Milliseconds now, for the interval between warnings; Date.now unless told (tests). */
  now?: () => number;
}): DeliveryLog {
  return new Spool<DeliveryRecord, Database>({
    capacity: deps.capacity ?? DELIVERY_LOG_CAPACITY,
    write: (records, db) => writeDeliveries(db, records),
    fold: { key: foldKey, merge: foldDelivery },
    countLost: (count, reason) => deps.metrics?.countRecordsLost('delivery_log', reason, count),
    onLost: (count, reason, error) => {
      deps.logger.warn('delivery log records lost', {
        count,
        reason,
        ...(reason === 'overflow' ? { window_ms: DELIVERY_LOG_LOST_REPORT_MS } : {}),
        ...(error === undefined ? {} : { error: describeError(error) }),
      });
    },
    lostReportMs: DELIVERY_LOG_LOST_REPORT_MS,
    ...(deps.now === undefined ? {} : { now: deps.now }),
  });
}

/**
 * The records of one stored event share a key while they wait: its content digest when it has one
 * (GitHub, Shopify: a body delivered again under a fresh id belongs to the first id's row), else its id.
 */
function foldKey(record: DeliveryRecord): string {
  return record.contentDigest === undefined
    ? `${record.provider}\u0000${record.eventId}`
    : `${record.provider}\u0000\u0000${record.contentDigest}`;
}

/**
 * Folds `record` into `into`, the newest record waiting for its event, when both are duplicates
 * answered with the same status code: `into` keeps its time, trace id and duration (the first
 * delivery of the run), counts the record's deliveries in `repeats` and takes the newest time as
 * `lastDeliveredAt`. Answers whether it folded.
 */
export function foldDelivery(into: DeliveryRecord, record: DeliveryRecord): boolean {
  if (into.outcome !== 'duplicate' || record.outcome !== 'duplicate' || into.statusCode !== record.statusCode) {
    return false;
  }
  into.repeats = (into.repeats ?? 0) + 1 + (record.repeats ?? 0);
  const newest = (record.lastDeliveredAt ?? record.deliveredAt).getTime();
  into.lastDeliveredAt = new Date(Math.max(newest, (into.lastDeliveredAt ?? into.deliveredAt).getTime()));
  return true;
}

/**
 * Writes a flush's records in one transaction (a failed flush leaves nothing half done), in two parts.
 *
 * A first store (the delivery that wrote its event's row: nearly every delivery) is inserted as it
 * is, by a statement that does nothing else: its event's id is the one it came with, nothing of its
 * event's can fold into it, and it is not trimmed (the event's only earlier rows are those of
 * deliveries refused before it was stored, which each flush of theirs trimmed to the cap, so it holds
 * at most DELIVERY_LOG_CAP + 1 rows until its next delivery's flush trims it). That statement takes a
 * fifth less of PostgreSQL's time a record than the general one (docs/benchmarks.md). It is a plain
 * INSERT, without ON CONFLICT: a first store is one delivery's own row under a fresh trace id, so its
 * key is new, and ON CONFLICT's speculative insertion cost a WAL record and an index probe more per row.
 * Should a key exist after all (a record written twice), the flush is written again with the
 * conflict-tolerant statement rather than lost.
 *
 * Every other record is folded and inserted under its stored event's id: a delivery with a content
 * digest belongs to the row holding that digest, whose id is the first delivery's (the unique index
 * on provider and digest finds it), and otherwise to its delivered id, stored or not (a 503 before
 * storing). An event's first record in the flush, when a duplicate, folds into the event's newest row
 * if that row is a duplicate answered with the same status code (repeats and last_delivered_at grow;
 * the row keeps its first delivery's time, trace id and duration); its later records were folded by
 * the spool already, so every other record is a new row (a repeat of a row already written, same time
 * and trace, is skipped). Then each event those touched is trimmed to its newest DELIVERY_LOG_CAP
 * rows, reading at most that many index entries per event.
 */
export async function writeDeliveries(db: Database, records: readonly DeliveryRecord[]): Promise<void> {
  if (records.length === 0) return;
  const seen = new Set<string>();
  const firstStores: DeliveryRecord[] = [];
  const others: ReturnType<typeof foldInput>[] = [];
  records.forEach((record, n) => {
    const key = foldKey(record);
    // The event's first record in this flush (first stores included) may fold into its newest row.
    const first = !seen.has(key);
    seen.add(key);
    if (record.firstStore === true) firstStores.push(record);
    else others.push(foldInput(record, n, first && record.outcome === 'duplicate'));
  });
  const write = (tolerateConflicts: boolean) =>
    db.transaction(async (tx) => {
      if (firstStores.length > 0) await executePrepared(tx, insertFirstStores(firstStores, tolerateConflicts));
      if (others.length === 0) return;
      const touched = await executePrepared<{ provider: string; event_id: string }>(tx, foldAndInsert(others));
      if (touched.length > 0) await executePrepared(tx, trimStatement(touched));
    });
  try {
    await write(false);
  } catch (error) {
    if (firstStores.length === 0 || !isUniqueViolation(error)) throw error;
    await write(true);
  }
}

/**
 * First stores, each a row under the id it came with (see writeDeliveries); with
 * `tolerateConflicts`, a row whose key exists is skipped instead of failing the statement.
 */
function insertFirstStores(records: readonly DeliveryRecord[], tolerateConflicts: boolean) {
  const input = records.map((record) => ({
    provider: record.provider,
    event_id: record.eventId,
    delivered_at: record.deliveredAt.toISOString(),
    trace_id: record.traceId,
    status_code: record.statusCode,
    outcome: record.outcome,
    duration_ms: record.durationMs,
  }));
  return sql`insert into webhook_deliveries (provider, event_id, delivered_at, trace_id, status_code, outcome, duration_ms)
    select * from json_to_recordset(${JSON.stringify(input)}::json) as r(provider text, event_id text,
      delivered_at timestamptz, trace_id text, status_code smallint, outcome text, duration_ms real)
    ${tolerateConflicts ? sql`on conflict do nothing` : sql``}`;
}

function foldInput(record: DeliveryRecord, n: number, foldFirst: boolean) {
  return {
    n,
    fold_first: foldFirst,
    provider: record.provider,
    event_id: record.eventId,
    content_digest: record.contentDigest ?? null,
    delivered_at: record.deliveredAt.toISOString(),
    trace_id: record.traceId,
    status_code: record.statusCode,
    outcome: record.outcome,
    duration_ms: record.durationMs,
    repeats: record.repeats ?? 0,
    last_delivered_at: record.lastDeliveredAt?.toISOString() ?? null,
  };
}

/**
 * One statement: the fold's update and the insert of what did not fold see the same snapshot and
 * never touch the same row. The update re-checks the row it folds into (a concurrent flush of
 * another process may have changed it first: the row lock makes it re-read). Answers the events it
 * gave a new row, to be trimmed.
 */
function foldAndInsert(input: readonly ReturnType<typeof foldInput>[]) {
  return sql`with r as (
      select r.n, r.fold_first, r.provider,
        coalesce((select e.event_id from webhook_events e
          where e.provider = r.provider and e.content_digest = r.content_digest), r.event_id) as event_id,
        r.delivered_at, r.trace_id, r.status_code, r.outcome, r.duration_ms, r.repeats, r.last_delivered_at
      from json_to_recordset(${JSON.stringify(input)}::json) as r(n int, fold_first boolean, provider text,
        event_id text, content_digest text, delivered_at timestamptz, trace_id text, status_code smallint,
        outcome text, duration_ms real, repeats int, last_delivered_at timestamptz)
    ), folded as (
      update webhook_deliveries d
      set repeats = d.repeats + 1 + f.repeats,
        last_delivered_at = greatest(coalesce(d.last_delivered_at, d.delivered_at),
          coalesce(f.last_delivered_at, f.delivered_at))
      from r f cross join lateral (select x.delivered_at, x.trace_id from webhook_deliveries x
          where x.provider = f.provider and x.event_id = f.event_id
          order by x.delivered_at desc, x.trace_id desc limit 1) newest
      where f.fold_first and d.provider = f.provider and d.event_id = f.event_id
        and d.delivered_at = newest.delivered_at and d.trace_id = newest.trace_id
        and d.outcome = 'duplicate' and d.status_code = f.status_code
      returning f.n
    )
    insert into webhook_deliveries
      (provider, event_id, delivered_at, trace_id, status_code, outcome, duration_ms, repeats, last_delivered_at)
    select r.provider, r.event_id, r.delivered_at, r.trace_id, r.status_code, r.outcome, r.duration_ms, r.repeats,
      r.last_delivered_at
    from r where r.n not in (select n from folded)
    on conflict do nothing
    returning provider, event_id`;
}

/**
 * Deletes what lies beyond each event's newest DELIVERY_LOG_CAP rows (newest by time, then trace id):
 * each event's boundary is read once from the primary key (at most DELIVERY_LOG_CAP entries; an event
 * with fewer rows has none and is left alone), then the rows below it are deleted by the same index.
 */
function trimStatement(keys: readonly { provider: string; event_id: string }[]) {
  return sql`delete from webhook_deliveries d
    using (select k.provider, k.event_id, b.delivered_at, b.trace_id
      from (select distinct provider, event_id
        from json_to_recordset(${JSON.stringify(keys)}::json) as k(provider text, event_id text)) k
      cross join lateral (select x.delivered_at, x.trace_id from webhook_deliveries x
        where x.provider = k.provider and x.event_id = k.event_id
        order by x.delivered_at desc, x.trace_id desc offset ${DELIVERY_LOG_CAP - 1} limit 1) b) oldest_kept
    where d.provider = oldest_kept.provider and d.event_id = oldest_kept.event_id
      and (d.delivered_at, d.trace_id) < (oldest_kept.delivered_at, oldest_kept.trace_id)`;
}

/** One logged delivery (with the identical ones folded into it), as the operator reads it. */
export interface LoggedDelivery {
  deliveredAt: Date;
  statusCode: number;
  outcome: string;
  durationMs: number;
  traceId: string;
  /** Further identical deliveries folded into this one (0: none). */
  repeats: number;
  /** When the newest of them arrived; null without repeats. */
  lastDeliveredAt: Date | null;
}

/** An event's logged deliveries, newest first (at most DELIVERY_LOG_CAP, what the trim keeps). */
export async function deliveriesOf(
  db: Executor,
  key: { provider: string; eventId: string },
): Promise<LoggedDelivery[]> {
  // As getEvent: an id the database cannot hold (a NUL from a URL's %00) has no deliveries.
  if (!isStorableText(key.eventId)) return [];
  const d = webhookDeliveries;
  return db
    .select({
      deliveredAt: d.deliveredAt,
      statusCode: d.statusCode,
      outcome: d.outcome,
      durationMs: d.durationMs,
      traceId: d.traceId,
      repeats: d.repeats,
      lastDeliveredAt: d.lastDeliveredAt,
    })
    .from(d)
    .where(and(eq(d.provider, key.provider), eq(d.eventId, key.eventId)))
    .orderBy(desc(d.deliveredAt), desc(d.traceId))
    .limit(DELIVERY_LOG_CAP);
}

/**
 * Retention's last phase: deletes up to `limit` rows delivered before `cutoff` whose event is not
 * kept: never stored (a first delivery answered 503), or a row past retention that stays only for its
 * content digest. An event's own rows otherwise go with it (purgeStatements.deleteRows). Oldest
 * first along webhook_deliveries_delivered_at_idx, so a run reads the old end of the log (the rows of
 * events still kept there, `failed` or `parked`, at most DELIVERY_LOG_CAP each) and stops. Answers `n`.
 */
export function purgeUnkeptDeliveries(cutoff: Date, limit: number) {
  return sql`with stale as (
      select l.provider, l.event_id, l.delivered_at, l.trace_id from webhook_deliveries l
      where l.delivered_at < ${cutoff.toISOString()} and not exists (
        select 1 from webhook_events e where e.provider = l.provider and e.event_id = l.event_id
          and not (e.status in ('completed', 'ignored', 'dead_letter')
            and coalesce(e.completed_at, e.received_at) < ${cutoff.toISOString()}))
      order by l.delivered_at limit ${limit} for update of l skip locked
    ), gone as (
      delete from webhook_deliveries l using stale s
      where l.provider = s.provider and l.event_id = s.event_id and l.delivered_at = s.delivered_at
        and l.trace_id = s.trace_id returning 1
    ) select count(*)::int as n from gone`;
}
