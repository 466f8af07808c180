// Inbox rows inserted with plain SQL in any state, as the intake or a worker would have left them:
// a valid acme subscription event with ids of its own, for replay and operator tests.
import type postgres from 'postgres';
import { acmeEvent, uniqueId } from './acme.ts';

export interface StoredEvent {
  eventId: string;
  /** The subscription the event changes once applied. */
  subscription: string;
}

export async function insertEvent(
  sql: postgres.Sql,
  options: {
    status: string;
    lastError?: string | null;
    attempts?: number;
    version?: number;
    to?: string;
    /** An id of the test's choosing (`.`, `..`, control characters); a fresh one by default. */
    eventId?: string;
  },
): Promise<StoredEvent> {
  const subscription = uniqueId('sub');
  const event = acmeEvent({
    ...(options.eventId === undefined ? {} : { id: options.eventId }),
    version: options.version ?? 4,
    data: { id: subscription, status: options.to ?? 'past_due' },
  });
  await sql`insert into webhook_events (provider, event_id, event_type, status, payload, attempt_count, last_error,
      completed_at)
    values ('acme', ${event.id}, ${event.type}, ${options.status}, ${sql.json(event as unknown as postgres.JSONValue)},
      ${options.attempts ?? 0}, ${options.lastError ?? null},
      ${['completed', 'ignored', 'dead_letter'].includes(options.status) ? new Date() : null})`;
  return { eventId: event.id, subscription };
}
