// What an operator reads about one outbox message, and the wire form (snake_case, like the table)
// that `outbox list --json`, the admin API and the dashboard share. Payloads are never shown.
import { eq } from 'drizzle-orm';
import type { Executor } from '../db/client.ts';
import { outboxMessages } from '../db/schema.ts';
import type { OutboxListing } from '../outbox/operator.ts';

const iso = (date: Date | null) => (date === null ? null : date.toISOString());

export function outboxJson(message: OutboxListing) {
  return {
    id: message.id,
    topic: message.topic,
    deduplication_key: message.deduplicationKey,
    status: message.status,
    attempts: message.attempts,
    last_error: message.lastError,
    created_at: iso(message.createdAt),
    available_at: iso(message.availableAt),
    published_at: iso(message.publishedAt),
    locked_until: iso(message.lockedUntil),
  };
}

export async function getOutboxMessage(db: Executor, id: string): Promise<OutboxListing | undefined> {
  const t = outboxMessages;
  const [row] = await db
    .select({
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
    })
    .from(t)
    .where(eq(t.id, id));
  return row;
}
