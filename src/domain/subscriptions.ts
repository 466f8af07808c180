// The example domain: subscriptions kept in step with the provider. Every write is conditional, so
// replays, duplicates and out-of-order deliveries cannot move a subscription backwards.
import { and, lt, ne, sql } from 'drizzle-orm';
import type { Executor } from '../db/client.ts';
import { type SubscriptionStatus, subscriptions } from '../db/schema.ts';
import type { OutgoingMessage } from '../outbox/enqueue.ts';

export interface SubscriptionChange {
  externalId: string;
  status: SubscriptionStatus;
  /** The provider's monotonic version of the resource. */
  providerVersion: number;
  occurredAt: Date;
}

/**
 * Applies the change when it is newer than what is stored, and never revives a canceled
 * subscription (canceled is terminal at every provider we model). True when a row changed.
 */
export async function applySubscriptionChange(db: Executor, change: SubscriptionChange): Promise<boolean> {
  const changed = await db
    .insert(subscriptions)
    .values({
      externalId: change.externalId,
      status: change.status,
      providerVersion: change.providerVersion,
      updatedAt: change.occurredAt,
    })
    .onConflictDoUpdate({
      target: subscriptions.externalId,
      set: {
        status: sql`excluded.status`,
        providerVersion: sql`excluded.provider_version`,
        updatedAt: sql`excluded.updated_at`,
      },
      setWhere: and(
        lt(subscriptions.providerVersion, sql`excluded.provider_version`),
        ne(subscriptions.status, 'canceled'),
      ),
    })
    .returning({ externalId: subscriptions.externalId });
  return changed.length > 0;
}

/** The outbox message announcing a change that was applied (the topic consumers subscribe to). */
export function subscriptionChanged(change: SubscriptionChange): OutgoingMessage {
  return {
    topic: 'subscription.changed',
    payload: {
      external_id: change.externalId,
      status: change.status,
      provider_version: change.providerVersion,
      updated_at: change.occurredAt.toISOString(),
    },
  };
}
