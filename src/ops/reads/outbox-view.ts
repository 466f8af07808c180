// What an operator reads about outbox messages (CLI `outbox list`, the admin API and the dashboard):
// filtered listings newest first and paged by cursor, one message, the messages an event produced,
// and the wire form (snake_case, like the table) they all share. Payloads are shown only on a
// message's own page and API answer, when asked.
import { and, between, count, desc, eq, gte, like, lt, type SQL, sql } from 'drizzle-orm';
import { type AnyPgColumn, unionAll } from 'drizzle-orm/pg-core';
import type { Executor } from '../../db/client.ts';
import { type OutboxStatus, outboxMessages, outboxStatus, outboxStatusRanges } from '../../db/schema.ts';
import { isoOrNull } from '../../lib/clock.ts';
import type { ExactJson } from '../../lib/json.ts';
import { storedJson } from '../../lib/json-out.ts';
import { isStorableText } from '../../lib/text.ts';
import { DEFAULT_DESTINATION } from '../../outbox/destinations.ts';
import { isMessageId } from '../../outbox/operator.ts';
import { countOutboxMessages, countOutboxMessagesByDestination } from '../../outbox/stats.ts';
import { type CountsByStatus, countPerStatus } from './counts.ts';
import { after, type ListWindow, micros, type Page, pageOf, resumeFrom, startsWith } from './cursor.ts';

export interface OutboxListing {
  id: string;
  topic: string;
  deduplicationKey: string;
  status: OutboxStatus;
  attempts: number;
  lastError: string | null;
  createdAt: Date;
  availableAt: Date;
  publishedAt: Date | null;
  lockedUntil: Date | null;
  /** The destination this row goes to (a message has one row per destination). */
  destination: string;
}

export interface OutboxDetail extends OutboxListing {
  /** Present only when asked for, every number as stored. */
  payload?: ExactJson | null;
}

/** Its window (ListWindow) is of the time created. */
export interface OutboxFilter extends ListWindow {
  status?: OutboxStatus | undefined;
  topic?: string | undefined;
  /** A configured destination's name (the caller checks it is one). */
  destination?: string | undefined;
  /** Message ids starting with this (an exact id finds that message). */
  id?: string | undefined;
}

const t = outboxMessages;
const listingColumns = {
  id: t.id,
  topic: t.topic,
  deduplicationKey: t.deduplicationKey,
  status: t.status,
  attempts: t.attempts,
  lastError: t.lastError,
  createdAt: t.createdAt,
  availableAt: t.availableAt,
  publishedAt: t.publishedAt,
  lockedUntil: t.lockedUntil,
  destination: t.destination,
};

export function outboxJson(message: OutboxDetail) {
  return {
    id: message.id,
    topic: message.topic,
    deduplication_key: message.deduplicationKey,
    status: message.status,
    attempts: message.attempts,
    last_error: message.lastError,
    created_at: isoOrNull(message.createdAt),
    available_at: isoOrNull(message.availableAt),
    published_at: isoOrNull(message.publishedAt),
    locked_until: isoOrNull(message.lockedUntil),
    destination: message.destination,
    ...('payload' in message ? { payload: message.payload ?? null } : {}),
  };
}

/** One destination's outcome for a message (a row of siblingsOf): the detail's `destinations`. */
export function outcomeJson(message: OutboxListing) {
  return {
    destination: message.destination,
    id: message.id,
    status: message.status,
    attempts: message.attempts,
    last_error: message.lastError,
    published_at: isoOrNull(message.publishedAt),
  };
}

const UUID_FORM = 'xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx';

/**
 * Message ids starting with `prefix` (case aside): the uuids between the prefix padded with the
 * lowest and with the highest hex digit, a range of the primary key. A prefix no uuid can start with
 * matches nothing.
 */
function idStartsWith(prefix: string, column: AnyPgColumn = t.id): SQL {
  const typed = prefix.toLowerCase();
  const fits = [...typed].every((char, i) => (UUID_FORM[i] === '-' ? char === '-' : /^[0-9a-f]$/.test(char)));
  if (!fits || typed.length > UUID_FORM.length) return sql`false`;
  const rest = UUID_FORM.slice(typed.length);
  return between(column, typed + rest.replaceAll('x', '0'), typed + rest.replaceAll('x', 'f'));
}

/** The filters of a listing without its page position: what its rows and its status counts share. */
export type OutboxSelection = Omit<OutboxFilter, 'cursor' | 'limit'>;

/** The columns a selection reads, of the table or of an alias of it. */
export type OutboxColumns = Record<'status' | 'topic' | 'destination' | 'id' | 'createdAt', AnyPgColumn>;

/**
 * The WHERE of a listing, as one condition: the list and its counts by status use the same one (and
 * a copy job, ops/jobs/destination-copy.ts, on an alias of the table as well).
 */
export function selected(filter: OutboxSelection, table: OutboxColumns = t): SQL | undefined {
  return and(
    filter.status === undefined ? undefined : eq(table.status, filter.status),
    filter.topic === undefined ? undefined : eq(table.topic, filter.topic),
    filter.destination === undefined ? undefined : eq(table.destination, filter.destination),
    filter.id === undefined ? undefined : idStartsWith(filter.id, table.id),
    filter.since === undefined ? undefined : gte(table.createdAt, filter.since),
    filter.until === undefined ? undefined : lt(table.createdAt, filter.until),
  );
}

/**
 * The ranges a listing reads: its filter's own index (a status, a topic, an id prefix) as one range;
 * else one range of the (status, created_at) index per status, merged (outboxStatusRanges): there is
 * no index of creation time alone.
 */
export function outboxRangesOf(filter: Pick<OutboxSelection, 'status' | 'topic' | 'id'>): (SQL | undefined)[] {
  return [filter.status, filter.topic, filter.id].some((value) => value !== undefined)
    ? [undefined]
    : outboxStatusRanges(t);
}

/**
 * The newest `limit + 1` messages `where` takes, as a subquery of their keys (`id`, `created_at`),
 * newest first: each range read in the list's order as far as the page, and merged (a Merge Append).
 */
export function newestMessageKeys(
  db: Executor,
  ranges: readonly (SQL | undefined)[],
  where: SQL | undefined,
  limit: number,
) {
  const keysWhere = (range: SQL | undefined) =>
    db
      .select({ id: t.id, createdAt: t.createdAt })
      .from(t)
      .where(and(range, where))
      .orderBy(desc(t.createdAt), desc(t.id))
      .limit(limit + 1);
  const [first, second, ...rest] = ranges.map(keysWhere);
  if (first === undefined) throw new Error('a listing reads at least one range');
  return (
    second === undefined
      ? first
      : // The union's own columns, by their names in the table.
        unionAll(first, second, ...rest)
          .orderBy(sql`created_at desc`, sql`id desc`)
          .limit(limit + 1)
  ).as('page');
}

/** Newest first, `limit` at a time; payloads are left out. */
export async function listOutbox(db: Executor, filter: OutboxFilter): Promise<Page<OutboxListing>> {
  const position = resumeFrom(filter.cursor, 1, isMessageId);
  const page = newestMessageKeys(
    db,
    outboxRangesOf(filter),
    and(
      selected(filter),
      // The id column is a uuid: the cursor's text key is cast back to one.
      position === undefined ? undefined : after(t.createdAt, [t.id], position),
    ),
    filter.limit,
  );
  const rows = await db
    .select({ ...listingColumns, atMicros: micros(t.createdAt) })
    .from(t)
    .innerJoin(page, eq(t.id, page.id))
    .orderBy(desc(page.createdAt), desc(t.id));
  return pageOf(rows, filter.limit, (row) => [row.id]);
}

/**
 * Messages by status under every filter of the listing but its status: without one, the outbox's
 * counters (exact; under a destination alone, that destination's counters); with one, the listing's
 * own WHERE, one count per status, each a range of the (status, created_at) index, up to COUNT_CAP
 * (counts.ts).
 */
export async function countOutboxByStatus(db: Executor, filter: OutboxSelection): Promise<CountsByStatus> {
  // Callers pass their whole filter (its status, page size and cursor included): only these narrow.
  if ([filter.topic, filter.id, filter.since, filter.until].every((value) => value === undefined)) {
    if (filter.destination === undefined) return { byStatus: await countOutboxMessages(db), atLeast: [] };
    // One destination's counts are in the same counters (by destination and status).
    const counts = await countOutboxMessagesByDestination(db);
    const mine = counts.filter((entry) => entry.destination === filter.destination);
    return { byStatus: Object.fromEntries(mine.map((entry) => [entry.status, entry.n])), atLeast: [] };
  }
  return countPerStatus(db, t, t.status, outboxStatus.enumName, selected({ ...filter, status: undefined }));
}

/** Every message the selection matches, exactly (no cap): what a bulk job will take (see countEventsExactly). */
export async function countOutboxExactly(db: Executor, filter: OutboxSelection): Promise<number> {
  const [row] = await db.select({ n: count() }).from(t).where(selected(filter));
  return row?.n ?? 0;
}

export async function getOutboxMessage(
  db: Executor,
  id: string,
  options: { payload?: boolean } = {},
): Promise<OutboxDetail | undefined> {
  const [row] = await db
    .select({ ...listingColumns, payload: sql<string>`${t.payload}::text` })
    .from(t)
    .where(eq(t.id, id));
  if (row === undefined) return undefined;
  const { payload, ...rest } = row;
  return options.payload ? { ...rest, payload: storedJson(payload) } : rest;
}

/** A row's key from its base key, in SQL: destinationKey (outbox/destinations.ts) of the row's destination. */
const rowKeyOf = (base: SQL) =>
  sql`case when ${t.destination} = ${DEFAULT_DESTINATION} then ${base} else ${base} || '@' || ${t.destination} end`;

/**
 * The messages one event produced: their deduplication key is `provider:event_id:topic` (plus
 * `@destination` for a named destination's row). The prefix
 * finds candidates; the exact key rules out another event whose id merely starts the same way.
 */
export async function messagesOfEvent(
  db: Executor,
  key: { provider: string; eventId: string },
): Promise<OutboxListing[]> {
  if (!isStorableText(key.eventId)) return [];
  const prefix = `${key.provider}:${key.eventId}:`;
  return db
    .select(listingColumns)
    .from(t)
    .where(
      and(
        like(t.deduplicationKey, startsWith(prefix)),
        sql`${t.deduplicationKey} = ${rowKeyOf(sql`${prefix} || ${t.topic}`)}`,
      ),
    )
    .orderBy(t.createdAt, t.destination, t.id);
}

/**
 * The same message's rows for every destination it went to (itself included), in destination order:
 * each destination's outcome. Their keys share the base key (the key without `@destination`,
 * outbox/destinations.ts destinationKey); the prefix finds candidates through the key index and the
 * exact key per row rules out another message whose key merely starts the same way.
 */
export function baseKeyOf(message: Pick<OutboxListing, 'deduplicationKey' | 'destination'>): string {
  const suffix = `@${message.destination}`;
  return message.destination !== DEFAULT_DESTINATION && message.deduplicationKey.endsWith(suffix)
    ? message.deduplicationKey.slice(0, -suffix.length)
    : message.deduplicationKey;
}

export async function siblingsOf(
  db: Executor,
  message: Pick<OutboxListing, 'deduplicationKey' | 'destination'>,
): Promise<OutboxListing[]> {
  const base = baseKeyOf(message);
  return db
    .select(listingColumns)
    .from(t)
    .where(and(like(t.deduplicationKey, startsWith(base)), sql`${t.deduplicationKey} = ${rowKeyOf(sql`${base}`)}`))
    .orderBy(t.destination);
}
