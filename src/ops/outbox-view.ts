// What an operator reads about one outbox message, and the wire form (snake_case, like the table)
// that `outbox list --json`, the admin API and the dashboard share. Payloads are never shown.
import { eq } from 'drizzle-orm';
import type { Executor } from '../db/client.ts';
import { outboxMessages } from '../db/schema.ts';
import { isoOrNull } from '../lib/clock.ts';
import type { OutboxListing } from '../outbox/operator.ts';

export function outboxJson(message: OutboxListing) {
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
