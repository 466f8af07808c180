// The delivery log (`webhook_deliveries`): one row per delivery of an event that passed its checks
// (the first, each duplicate, each retry after a failure) with its time, the answer it got, the time
// it took and its trace id, so an operator can say what we answered each time a sender delivered it.
// The intake only appends records to a Spool; the runtime flushes it outside the request (Node on a
// short schedule, a Worker after each request), in two statements per flush: one insert for every
// record gathered, then one trim that keeps each touched event's newest DELIVERY_LOG_CAP rows.
// Retention deletes an event's rows with the event (retention.ts).
import { and, desc, eq, sql } from 'drizzle-orm';
import type { Database, Executor } from '../db/client.ts';
import { describeError } from '../db/errors.ts';
import { executePrepared } from '../db/prepared.ts';
import { webhookDeliveries } from '../db/schema.ts';
import type { Logger } from '../lib/logger.ts';
import type { Metrics } from '../lib/metrics.ts';
import { Spool } from '../lib/spool.ts';
import { isStorableText } from '../lib/text.ts';
import { storedKeyString } from './event-rows.ts';

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
   * This delivery wrote the event's row (its first store, attempt 1): the event's only earlier rows
   * are those of deliveries refused before it was stored, already trimmed, so its flush does not
   * trim it (see writeDeliveries).
   */
  firstStore?: boolean;
}

/** Where the intake leaves its records; flushed by the runtime with the database it has at hand. */
export type DeliveryLog = Spool<DeliveryRecord, Database>;

export function createDeliveryLog(deps: { logger: Logger; metrics?: Metrics; capacity?: number }): DeliveryLog {
  return new Spool<DeliveryRecord, Database>({
    capacity: deps.capacity ?? DELIVERY_LOG_CAPACITY,
    write: (records, db) => writeDeliveries(db, records),
    onLost: (count, reason, error) => {
      deps.metrics?.countRecordsLost('delivery_log', reason, count);
      deps.logger.warn('delivery log records lost', {
        count,
        reason,
        ...(error === undefined ? {} : { error: describeError(error) }),
      });
    },
  });
}

/**
 * Inserts the records (a repeat of a row already written, same time and trace, is skipped), each
 * under its stored event's id: a delivery with a content digest belongs to the row holding that
 * digest, whose id is the first delivery's (the unique index on provider and digest finds it), and
 * otherwise to its delivered id, stored or not (a 503 before storing). Then trims each event the
 * insert touched to its newest DELIVERY_LOG_CAP rows, reading at most that many index entries per
 * event. One transaction: a failed flush leaves nothing half done.
 *
 * An event whose only records in the flush are first stores is not trimmed: it had at most the
 * rows of deliveries refused before it was stored (each flush of those trimmed it to the cap), so it
 * holds at most DELIVERY_LOG_CAP + 1 rows until its next delivery's flush trims it. The trim's read
 * per event was two thirds of the log's database time, and nearly every delivery is a first store.
 */
export async function writeDeliveries(db: Database, records: readonly DeliveryRecord[]): Promise<void> {
  if (records.length === 0) return;
  const input = records.map((record) => ({
    provider: record.provider,
    event_id: record.eventId,
    content_digest: record.contentDigest ?? null,
    delivered_at: record.deliveredAt.toISOString(),
    trace_id: record.traceId,
    status_code: record.statusCode,
    outcome: record.outcome,
    duration_ms: record.durationMs,
  }));
  const insert = sql`insert into webhook_deliveries
      (provider, event_id, delivered_at, trace_id, status_code, outcome, duration_ms)
    select r.provider,
      coalesce((select e.event_id from webhook_events e
        where e.provider = r.provider and e.content_digest = r.content_digest), r.event_id),
      r.delivered_at, r.trace_id, r.status_code, r.outcome, r.duration_ms
    from json_to_recordset(${JSON.stringify(input)}::json) as r(provider text, event_id text, content_digest text,
      delivered_at timestamptz, trace_id text, status_code smallint, outcome text, duration_ms real)
    on conflict do nothing
    returning provider, event_id`;
  const settled = firstStoresOnly(records);
  await db.transaction(async (tx) => {
    const touched = await executePrepared<{ provider: string; event_id: string }>(tx, insert);
    const trimmed = touched.filter((key) => !settled.has(storedKeyString(key.provider, key.event_id)));
    if (trimmed.length > 0) await executePrepared(tx, trimStatement(trimmed));
  });
}

/** The events every record of which (in this flush) is the event's first store. */
function firstStoresOnly(records: readonly DeliveryRecord[]): Set<string> {
  const first = new Set<string>();
  const other = new Set<string>();
  for (const record of records) {
    (record.firstStore === true ? first : other).add(storedKeyString(record.provider, record.eventId));
  }
  for (const key of other) first.delete(key);
  return first;
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

/** One logged delivery, as the operator reads it. */
export interface LoggedDelivery {
  deliveredAt: Date;
  statusCode: number;
  outcome: string;
  durationMs: number;
  traceId: string;
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
