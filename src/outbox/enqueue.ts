// Writing side effects into the outbox, inside the transaction that makes the domain change: the
// message commits with the change or not at all, and nothing is published from inside a transaction
// (the relay does that after COMMIT). A message fans out here, at enqueue: one row per destination
// whose filters match (destinations.ts), each with its own key, state, attempts and dead letter.
// Each row's id is made here too, time-ordered (newTimeOrderedId), so the outbox's primary key grows
// at its right edge.
import type { Executor } from '../db/client.ts';
import { type IdGenerator, newTimeOrderedId } from '../lib/clock.ts';
import type { JsonValue } from '../lib/json.ts';
import { DEFAULT_ROUTING, type DestinationRouting, destinationKey } from './destinations.ts';
import { insertMessages, type NewMessage } from './message-rows.ts';

export interface OutgoingMessage {
  topic: string;
  payload: JsonValue;
}

/** The event a message comes from: its key makes the message's key; sender and type choose its destinations. */
export interface MessageSource {
  provider: string;
  eventId: string;
  eventType: string;
  /** The enqueuing span's W3C traceparent, stored with the message for its consumers. */
  traceparent?: string | null | undefined;
}

/** What a handler calls to enqueue a side effect; bound to its transaction and its event. */
export type Enqueue = (message: OutgoingMessage) => Promise<void>;

/**
 * `provider:event_id:topic`: the same event can only ever produce one message per topic, whether it
 * is replayed, redelivered after a failure or applied twice by a race the inbox lost.
 */
export function deduplicationKey(source: Pick<MessageSource, 'provider' | 'eventId'>, topic: string): string {
  return `${source.provider}:${source.eventId}:${topic}`;
}

/**
 * The rows a message becomes: one per matching destination, keyed `key@destination` (the `default`
 * destination keeps the bare key), each with an id from `newId`. None when no destination wants it.
 */
export function messageRows(
  source: MessageSource,
  message: OutgoingMessage,
  routing: DestinationRouting = DEFAULT_ROUTING,
  newId: IdGenerator = newTimeOrderedId,
): NewMessage[] {
  const key = deduplicationKey(source, message.topic);
  const facts = { topic: message.topic, sender: source.provider, type: source.eventType };
  const destinations = routing.route(facts);
  if (destinations.length === 0) routing.unrouted?.(facts);
  return destinations.map((destination) => ({
    ...message,
    id: newId(),
    destination,
    deduplicationKey: destinationKey(key, destination),
    traceparent: source.traceparent ?? null,
  }));
}

/** Inserts the message's rows unless their keys exist already; the number of rows written. */
export function enqueueMessage(
  db: Executor,
  source: MessageSource,
  message: OutgoingMessage,
  routing: DestinationRouting = DEFAULT_ROUTING,
  newId: IdGenerator = newTimeOrderedId,
): Promise<number> {
  return insertMessages(db, messageRows(source, message, routing, newId));
}

export function enqueuerFor(
  db: Executor,
  source: MessageSource,
  routing: DestinationRouting = DEFAULT_ROUTING,
  newId: IdGenerator = newTimeOrderedId,
): Enqueue {
  return async (message) => {
    await enqueueMessage(db, source, message, routing, newId);
  };
}
