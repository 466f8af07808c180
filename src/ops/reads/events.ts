// What an operator reads about inbox events (CLI `events list|show`, the admin API and the
// dashboard): filtered listings without payloads, newest first and paged by cursor, one event with
// its payload only when asked, and counts by status. Reads only: every change goes through replay
// (src/ops/actions/replay.ts).
import { and, count, desc, eq, gte, like, lt, type SQL, sql } from 'drizzle-orm';
import { unionAll } from 'drizzle-orm/pg-core';
import type { Executor } from '../../db/client.ts';
import { eventSubject, listingRanges, rangesUnder, type WebhookEventStatus, webhookEvents } from '../../db/schema.ts';
import type { LoggedDelivery } from '../../inbox/delivery-log.ts';
import { isoOrNull } from '../../lib/clock.ts';
import type { ExactJson } from '../../lib/json.ts';
import { storedJson } from '../../lib/json-out.ts';
import { isStorableText } from '../../lib/text.ts';
import { countOutboxMessages, oldestPendingCreatedAt } from '../../outbox/stats.ts';
import { type CountsByStatus, countMatching } from './counts.ts';
import { after, type ListWindow, micros, type Page, pageOf, resumeFrom, startsWith } from './cursor.ts';
import { countEventsFromCounters } from './event-counts.ts';

export interface EventListing {
  provider: string;
  eventId: string;
  eventType: string;
  status: WebhookEventStatus;
  attempts: number;
  lastError: string | null;
  receivedAt: Date;
  completedAt: Date | null;
  availableAt: Date;
}

export interface EventDetail extends EventListing {
  occurredAt: Date | null;
  lockedUntil: Date | null;
  /** Present only when asked for, every number as stored; null once retention purged it. */
  payload?: ExactJson | null;
}

/** Its window (ListWindow) is of the time received. */
export interface EventFilter extends ListWindow {
  status?: WebhookEventStatus | undefined;
  provider?: string | undefined;
  type?: string | undefined;
  /** Event ids starting with this (an exact id finds that event). */
  id?: string | undefined;
  /** The sender's own id of what the event is about (eventSubject), exactly. */
  subject?: string | undefined;
}

const t = webhookEvents;
const listingColumns = {
  provider: t.provider,
  eventId: t.eventId,
  eventType: t.eventType,
  status: t.status,
  attempts: t.attemptCount,
  lastError: t.lastError,
  receivedAt: t.receivedAt,
  completedAt: t.completedAt,
  availableAt: t.availableAt,
};

/** The filters of a listing without its page position: what its rows and its status counts share. */
export type EventSelection = Omit<EventFilter, 'cursor' | 'limit'>;

/**
 * Where the rows a selection matches are found: one status is a range of the (status, received_at)
 * index. Every status under a filter with an index of its own (sender, type, id, subject) is that
 * index's rows, which leave out the queue (listedInIndexes), and the queue's range per status; without
 * one, a range per status. A query over several ranges reads each and merges them.
 */
function rangesOf(filter: EventSelection): SQL[] {
  if (filter.status !== undefined) return [eq(t.status, filter.status)];
  return rangesUnder(
    t,
    [filter.provider, filter.type, filter.id, filter.subject].some((value) => value !== undefined),
  );
}

/** The WHERE of a listing, as one condition: the list and its counts by status use the same one. */
function selected(filter: EventSelection): SQL | undefined {
  return and(
    filter.status === undefined ? undefined : eq(t.status, filter.status),
    filter.provider === undefined ? undefined : eq(t.provider, filter.provider),
    filter.type === undefined ? undefined : eq(t.eventType, filter.type),
    filter.id === undefined ? undefined : like(t.eventId, startsWith(filter.id)),
    filter.subject === undefined ? undefined : eq(eventSubject(t), filter.subject),
    filter.since === undefined ? undefined : gte(t.receivedAt, filter.since),
    filter.until === undefined ? undefined : lt(t.receivedAt, filter.until),
  );
}

/**
 * Newest first, `limit` at a time; payloads are left out (a listing is for finding events, not
 * reading data). The page's keys are chosen first from the index alone, then its rows read by key:
 * the filter's own index (sender, type) then answers without the table, so the planner prefers it
 * to walking every event newest first, which it may otherwise choose when the filter matches a
 * third of the table, and which reads everything else that arrived since (an hour of another
 * sender's traffic) before it finds a page.
 */
export async function listEvents(db: Executor, filter: EventFilter): Promise<Page<EventListing>> {
  const position = resumeFrom(filter.cursor, 2);
  const newestFirst = () => [desc(t.receivedAt), desc(t.provider), desc(t.eventId)];
  const keysWhere = (where: SQL) =>
    db
      .select({ provider: t.provider, eventId: t.eventId, receivedAt: t.receivedAt })
      .from(t)
      .where(
        and(
          where,
          selected({ ...filter, status: undefined }),
          position === undefined ? undefined : after(t.receivedAt, [t.provider, t.eventId], position),
        ),
      )
      .orderBy(...newestFirst())
      .limit(filter.limit + 1);
  const [first, second, ...rest] = rangesOf(filter).map(keysWhere);
  if (first === undefined) throw new Error('a listing reads at least one range');
  // One range per index, each in the list's order; merged, the planner reads each only as far as the page.
  const page = (
    second === undefined
      ? first
      : unionAll(first, second, ...rest)
          // The union's own columns, by their names in the table.
          .orderBy(sql`received_at desc`, sql`provider desc`, sql`event_id desc`)
          .limit(filter.limit + 1)
  ).as('page');
  const rows = await db
    .select({ ...listingColumns, atMicros: micros(t.receivedAt) })
    .from(t)
    .innerJoin(page, and(eq(t.provider, page.provider), eq(t.eventId, page.eventId)))
    .orderBy(desc(page.receivedAt), desc(t.provider), desc(t.eventId));
  return pageOf(rows, filter.limit, (row) => [row.provider, row.eventId]);
}

/**
 * Events by status under every filter of the listing but its status (the counts are the links that
 * choose one). Sender, type and time are read from the counters (event-counts.ts), exactly; with an
 * id prefix or a subject, the matching rows are counted through that filter's index, up to COUNT_CAP.
 */
export async function countEventsByStatus(db: Executor, filter: EventSelection): Promise<CountsByStatus> {
  if (filter.id === undefined && filter.subject === undefined) {
    return { byStatus: await countEventsFromCounters(db, filter), atLeast: [] };
  }
  // A range at a time (their statuses never overlap), each through the filter's index.
  const where = selected({ ...filter, status: undefined });
  const counted = await Promise.all(listingRanges(t).map((range) => countMatching(db, t, t.status, and(range, where))));
  return {
    byStatus: Object.assign({}, ...counted.map((counts) => counts.byStatus)),
    atLeast: counted.flatMap((counts) => counts.atLeast),
  };
}

/**
 * Every event the selection matches, exactly (no cap): what a bulk job will take, counted once when
 * it is created. It reads the filter's index, every matching entry of it.
 */
export async function countEventsExactly(db: Executor, filter: EventSelection): Promise<number> {
  const where = selected({ ...filter, status: undefined });
  const ranges = rangesOf(filter).map((range) => db.select({ n: count() }).from(t).where(and(range, where)));
  const counted = await Promise.all(ranges);
  return counted.reduce((total, [row]) => total + (row?.n ?? 0), 0);
}

/** The payload as jsonb's text, read exactly by storedJson (the driver's JSON.parse would round big numbers). */
const storedText = sql<string | null>`${t.payload}::text`;

export async function getEvent(
  db: Executor,
  key: { provider: string; eventId: string },
  options: { payload?: boolean } = {},
): Promise<EventDetail | undefined> {
  // An id the database cannot hold (a NUL from a URL's %00) names no event; the query would fail.
  if (!isStorableText(key.eventId)) return undefined;
  const [row] = await db
    .select({ ...listingColumns, occurredAt: t.occurredAt, lockedUntil: t.lockedUntil, payload: storedText })
    .from(t)
    .where(and(eq(t.provider, key.provider), eq(t.eventId, key.eventId)));
  if (row === undefined) return undefined;
  const { payload, ...rest } = row;
  return options.payload ? { ...rest, payload: storedJson(payload) } : rest;
}

/** The wire form shared by `--json` and the admin API (snake_case, like the tables). */
export function eventJson(event: EventDetail | EventListing) {
  return {
    provider: event.provider,
    event_id: event.eventId,
    event_type: event.eventType,
    status: event.status,
    attempts: event.attempts,
    last_error: event.lastError,
    received_at: isoOrNull(event.receivedAt),
    completed_at: isoOrNull(event.completedAt),
    available_at: isoOrNull(event.availableAt),
    ...('occurredAt' in event
      ? { occurred_at: isoOrNull(event.occurredAt), locked_until: isoOrNull(event.lockedUntil) }
      : {}),
    ...('payload' in event ? { payload: event.payload ?? null } : {}),
  };
}

/** One delivery-log row in the wire form of `--json` and the admin API. */
export function deliveryJson(delivery: LoggedDelivery) {
  return {
    delivered_at: delivery.deliveredAt.toISOString(),
    status_code: delivery.statusCode,
    outcome: delivery.outcome,
    duration_ms: delivery.durationMs,
    trace_id: delivery.traceId,
    repeats: delivery.repeats,
    last_delivered_at: delivery.lastDeliveredAt?.toISOString() ?? null,
  };
}

/**
 * A logged delivery's repeats in words, for a person: "" without any, else how many deliveries the
 * row stands for and when the newest came (its time of day alone when on the same UTC day as the first).
 */
export function repeatsText(delivery: { deliveredAt: Date; repeats: number; lastDeliveredAt: Date | null }): string {
  if (delivery.repeats === 0) return '';
  const last = (delivery.lastDeliveredAt ?? delivery.deliveredAt).toISOString();
  const sameDay = last.slice(0, 10) === delivery.deliveredAt.toISOString().slice(0, 10);
  return `×${delivery.repeats + 1}, last ${sameDay ? last.slice(11, 19) : last.replace('T', ' ').slice(0, 19)}`;
}

/**
 * When the oldest event still to be applied (received, processing or failed) arrived: the one
 * definition of the inbox's "oldest unprocessed", for the operator's counts, the overview's backlog and
 * the /metrics gauge. One lookup per status, each the first entry of its range of the (status,
 * received_at) index: a min() over the three together reads every failed event ever kept.
 */
export const oldestUnprocessedReceivedAt = sql`least(
  (select min(received_at) from webhook_events where status = 'received'),
  (select min(received_at) from webhook_events where status = 'processing'),
  (select min(received_at) from webhook_events where status = 'failed'))`;

export interface StatusCounts {
  events: Record<string, number>;
  outbox: Record<string, number>;
  /** Seconds since the oldest event still to be applied (received, processing, failed) arrived. */
  oldestUnprocessedSeconds: number;
  /** Seconds since the oldest pending outbox message was written (oldestPendingCreatedAt). */
  oldestPendingOutboxSeconds: number;
}

/** Counts by status for both tables, and the ages the backlog alerts watch. */
export async function statusCounts(db: Executor): Promise<StatusCounts> {
  const events = await countEventsFromCounters(db, {});
  const outbox = await countOutboxMessages(db);
  const [ages] = await db.execute<{ inbox: string; outbox: string }>(sql`select
    coalesce(extract(epoch from now() - ${oldestUnprocessedReceivedAt}), 0) as inbox,
    coalesce(extract(epoch from now() - ${oldestPendingCreatedAt}), 0) as outbox`);
  return {
    events,
    outbox,
    oldestUnprocessedSeconds: Math.max(0, Math.round(Number(ages?.inbox ?? 0))),
    oldestPendingOutboxSeconds: Math.max(0, Math.round(Number(ages?.outbox ?? 0))),
  };
}
