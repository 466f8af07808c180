// Writing side effects into the outbox, inside the transaction that makes the domain change: the
// message commits with the change or not at all, and nothing is published from inside a transaction
// (the relay does that after COMMIT).
import type { Executor } from '../db/client.ts';
import type { JsonValue } from '../lib/json.ts';
import { insertMessage } from './message-rows.ts';

export interface OutgoingMessage {
  topic: string;
  payload: JsonValue;
}

/** The event a message comes from: its key makes the message's deduplication key. */
export interface MessageSource {
  provider: string;
  eventId: string;
  /** The enqueuing span's W3C traceparent, stored with the message for its consumers. */
  traceparent?: string | null | undefined;
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

/** Inserts the message unless its key exists already; true when a row was written. */
export function enqueueMessage(db: Executor, source: MessageSource, message: OutgoingMessage): Promise<boolean> {
  return insertMessage(db, {
    ...message,
    deduplicationKey: deduplicationKey(source, message.topic),
    traceparent: source.traceparent ?? null,
  });
}

export function enqueuerFor(db: Executor, source: MessageSource): Enqueue {
  return async (message) => {
    await enqueueMessage(db, source, message);
  };
}
