// Writing side effects into the outbox, inside the transaction that makes the domain change: the
// message commits with the change or not at all, and nothing is published from inside a transaction
// (the relay does that after COMMIT).
import { type SQL, sql } from 'drizzle-orm';
import type { Executor } from '../db/client.ts';
import type { JsonValue } from '../lib/json.ts';

export interface OutgoingMessage {
  topic: string;
  payload: JsonValue;
}

/** The event a message comes from: its key makes the message's deduplication key. */
export interface MessageSource {
  provider: string;
  eventId: string;
}

/** What a handler calls to enqueue a side effect; bound to its transaction and its event. */
export type Enqueue = (message: OutgoingMessage) => Promise<void>;

/**
 * `provider:event_id:topic`: the same event can only ever produce one message per topic, whether it
 * is replayed, redelivered after a failure or applied twice by a race the inbox lost.
 */
export function deduplicationKey(source: MessageSource, topic: string): string {
  return `${source.provider}:${source.eventId}:${topic}`;
}

/**
 * Inserts the message unless its key exists already; true when a row was written. A SQL template
 * rather than the insert builder: it runs inside every applied event's transaction.
 */
export async function enqueueMessage(db: Executor, source: MessageSource, message: OutgoingMessage): Promise<boolean> {
  const inserted = await db.execute<{ id: string }>(sql`
    insert into outbox_messages (topic, deduplication_key, payload)
    values (${message.topic}, ${deduplicationKey(source, message.topic)}, ${JSON.stringify(message.payload)})
    on conflict (deduplication_key) do nothing
    returning id`);
  return inserted.length > 0;
}

/**
 * The outbox INSERT of the messages `rows` holds (a FROM clause with `topic`, `deduplication_key` and
 * `payload` columns), to embed in a larger statement: a domain write and its announcements then cost
 * one round trip, and `rows` can name only what the write changed, so nothing else is announced.
 */
export function insertMessagesFrom(rows: SQL): SQL {
  return sql`insert into outbox_messages (topic, deduplication_key, payload)
    select topic, deduplication_key, payload from ${rows}
    on conflict (deduplication_key) do nothing`;
}

export function enqueuerFor(db: Executor, source: MessageSource): Enqueue {
  return async (message) => {
    await enqueueMessage(db, source, message);
  };
}
