// Sending outbox history to a destination added later (a `send_to_destination` bulk job, bulk-jobs.ts):
// the selection such a job walks and one batch's copies. A message is a base key (the key without
// `@destination`, outbox/destinations.ts destinationKey) with a row per destination it went to; the
// job takes each message once, through its newest row in the selection, and writes a row for the
// destination unless that destination's key exists already (so a re-run, or a message the
// destination got at enqueue, sends nothing twice). The destination's own rows are not read. Only
// messages the destination's own filters would have taken at enqueue are copied.

import { and, count, desc, eq, ne, or, type SQL, sql } from 'drizzle-orm';
import { alias } from 'drizzle-orm/pg-core';
import { recordOnEach } from '../../db/audit.ts';
import type { Executor } from '../../db/client.ts';
import { outboxMessageCounts, outboxMessages, webhookEvents } from '../../db/schema.ts';
import { DEFAULT_DESTINATION, type Destination, destinationKey } from '../../outbox/destinations.ts';
import { copyMessages } from '../../outbox/message-rows.ts';
import { after, micros, type Page, type PageKey, pageOf } from '../reads/cursor.ts';
import {
  baseKeyOf,
  newestMessageKeys,
  type OutboxColumns,
  type OutboxSelection,
  outboxRangesOf,
  selected,
} from '../reads/outbox-view.ts';

/** The outbox list's filters a copy takes (any status, any destination) and the destination to send to. */
export interface SendJobFilter extends Pick<OutboxSelection, 'topic' | 'id' | 'since' | 'until'> {
  /** A configured destination's name (the caller checks it is one). */
  to: string;
}

const t = outboxMessages;
const SIBLING = 'sibling';
/** The table again, for a message's other rows (a template renders an alias as its bare name: the FROM names the table). */
const s = alias(outboxMessages, SIBLING);

/** A row's base key in SQL: its key without `@destination` (ops/reads/outbox-view.ts baseKeyOf). */
const baseKeySql = sql`case
  when ${t.destination} <> ${DEFAULT_DESTINATION}
    and right(${t.deduplicationKey}, length(${t.destination}) + 1) = '@' || ${t.destination}
  then left(${t.deduplicationKey}, -(length(${t.destination}) + 1))
  else ${t.deduplicationKey} end`;

/**
 * The selection's rows that stand for their message: those with no newer row of the same message in
 * the selection. A message's other rows have the keys its base key takes for each destination that
 * has rows at all (the counters' destinations, outbox_message_counts): a lookup each in the key's
 * unique index. (A range of the text_pattern_ops index would do without the names, but the planner
 * cannot estimate a range whose bounds come from the outer row, and plans a join in place of the lookups.)
 */
function standsForItsMessage(filter: SendJobFilter): SQL {
  return sql`not exists (
    select 1 from (select distinct ${outboxMessageCounts.destination} as name from ${outboxMessageCounts}) as stored
    join ${t} as ${sql.identifier(SIBLING)}
      on ${s.deduplicationKey} = (case when stored.name = ${DEFAULT_DESTINATION} then (${baseKeySql})
        else (${baseKeySql}) || '@' || stored.name end)
      and ${s.destination} = stored.name
    where (${s.createdAt}, ${s.id}) > (${t.createdAt}, ${t.id})
      and ${rowsOf(filter, s)})`;
}

/**
 * The rows the job reads: the list filter's, but never the destination's own. It has those messages
 * already, and its rows are where the copies go: a copy written in the millisecond the job was
 * created would otherwise enter the selection and hide the older rows of its message.
 */
function rowsOf(filter: SendJobFilter, table: OutboxColumns): SQL {
  const selection: OutboxSelection = { topic: filter.topic, id: filter.id, since: filter.since, until: filter.until };
  return and(selected(selection, table), ne(table.destination, filter.to)) ?? sql`true`;
}

/** The messages a copy job takes, exactly: one per base key among the selected rows. */
export async function countMessagesToSend(db: Executor, filter: SendJobFilter): Promise<number> {
  const [row] = await db
    .select({ n: count() })
    .from(t)
    .where(and(rowsOf(filter, t), standsForItsMessage(filter)));
  return row?.n ?? 0;
}

export interface MessageToSend {
  id: string;
  topic: string;
  deduplicationKey: string;
  destination: string;
}

/** One page of the messages to send, newest first (the outbox listing's order and cursor). */
export async function messagesToSend(
  db: Executor,
  filter: SendJobFilter,
  position: PageKey | undefined,
  limit: number,
): Promise<Page<MessageToSend>> {
  const page = newestMessageKeys(
    db,
    outboxRangesOf({ topic: filter.topic, id: filter.id }),
    and(
      rowsOf(filter, t),
      standsForItsMessage(filter),
      position === undefined ? undefined : after(t.createdAt, [t.id], position),
    ),
    limit,
  );
  const rows = await db
    .select({
      id: t.id,
      topic: t.topic,
      deduplicationKey: t.deduplicationKey,
      destination: t.destination,
      atMicros: micros(t.createdAt),
    })
    .from(t)
    .innerJoin(page, eq(t.id, page.id))
    .orderBy(desc(page.createdAt), desc(t.id));
  return pageOf(rows, limit, (row) => [row.id]);
}

/** The event a base key `provider:event_id:topic` names, or undefined when the key is not of that form. */
export function eventOfKey(base: string, topic: string): { provider: string; eventId: string } | undefined {
  const colon = base.indexOf(':');
  const suffix = `:${topic}`;
  if (colon <= 0 || !base.endsWith(suffix)) return undefined;
  const eventId = base.slice(colon + 1, base.length - suffix.length);
  return eventId.length === 0 ? undefined : { provider: base.slice(0, colon), eventId };
}

/** True when the destination's type filter lets only some types through (a lookup is needed). */
function filtersOnType(destination: Destination): boolean {
  const types = destination.filters?.types;
  return types !== undefined && !types.includes('*');
}

export interface SendRequest {
  to: Destination;
  operator: string;
  jobId: string;
  /** The audit rows' time, on the runner's clock. */
  at: Date;
}

/**
 * Copies a page's messages to the destination, with one audit row per copy (`send`, the new row's id).
 * Skipped, and counted as such: a message whose key is not `provider:event_id:topic`, one the
 * destination's filters refuse (sender: the key's provider; type: its event's, looked up), one whose
 * event is gone when the destination filters on type, and one the destination has already.
 */
export async function sendMessages(
  tx: Executor,
  messages: readonly MessageToSend[],
  request: SendRequest,
): Promise<{ copied: number; skipped: number }> {
  const keyed = messages.map((message) => {
    const base = baseKeyOf(message);
    return { message, base, event: eventOfKey(base, message.topic) };
  });
  const types = new Map<string, string>();
  const events = keyed.flatMap(({ event }) => (event === undefined ? [] : [event]));
  if (filtersOnType(request.to) && events.length > 0) {
    const e = webhookEvents;
    const rows = await tx
      .select({ provider: e.provider, eventId: e.eventId, type: e.eventType })
      .from(e)
      .where(or(...events.map((event) => and(eq(e.provider, event.provider), eq(e.eventId, event.eventId)))));
    for (const row of rows) types.set(`${row.provider}:${row.eventId}`, row.type);
  }
  const wanted = keyed.flatMap(({ message, base, event }) => {
    if (event === undefined) return [];
    const type = types.get(`${event.provider}:${event.eventId}`);
    if (type === undefined && filtersOnType(request.to)) return [];
    const facts = { topic: message.topic, sender: event.provider, type: type ?? '' };
    return request.to.matches(facts)
      ? [{ from: message.id, deduplicationKey: destinationKey(base, request.to.name) }]
      : [];
  });
  const written = await copyMessages(tx, wanted, request.to.name);
  const send = { operator: request.operator, action: 'send', targetKind: 'outbox', afterStatus: 'pending' } as const;
  await recordOnEach(tx, request.at, written, { ...send, jobId: request.jobId }, (row) => ({
    target: row.id,
    detail: { from: row.from, destination: request.to.name },
  }));
  return { copied: written.length, skipped: messages.length - written.length };
}
