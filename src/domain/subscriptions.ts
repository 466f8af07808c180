// The example domain: subscriptions kept in step with the provider. Every write is conditional, so
// replays, duplicates and out-of-order deliveries cannot move a subscription backwards.
import { type SQL, sql } from 'drizzle-orm';
import type { Executor } from '../db/client.ts';
import type { SubscriptionStatus } from '../db/schema.ts';
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
 *
 * `announce` embeds a statement that runs in the same round trip only if a row changed (it is given
 * the name of the CTE holding the changed row): the outbox message for the change, typically.
 * A SQL template, not the insert builder: this runs once per event on the hot path.
 */
export async function applySubscriptionChange(
  db: Executor,
  change: SubscriptionChange,
  announce?: (changed: SQL) => SQL,
): Promise<boolean> {
  const upsert = sql`insert into subscriptions (external_id, status, provider_version, updated_at)
    values (${change.externalId}, ${change.status}, ${change.providerVersion}, ${change.occurredAt.toISOString()})
    on conflict (external_id) do update
      set status = excluded.status, provider_version = excluded.provider_version, updated_at = excluded.updated_at
      where subscriptions.provider_version < excluded.provider_version and subscriptions.status <> 'canceled'
    returning external_id`;
  if (announce === undefined) return (await db.execute(upsert)).length > 0;
  // Data-modifying CTEs run whether or not the final SELECT reads them.
  const [row] = await db.execute<{ changed: boolean }>(sql`
    with changed as (${upsert}), announced as (${announce(sql.raw('changed'))})
    select exists (select 1 from changed) as changed`);
  return row?.changed === true;
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
