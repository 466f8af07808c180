// How Stripe's subscription events map onto the subscriptions domain: which payload fields are read,
// how Stripe's eight statuses fold into our five, where the rows live and how events are ordered.
import { z } from 'zod';
import type { SubscriptionStatus } from '../db/schema.ts';
import { MAX_UNIX_SECONDS } from '../lib/occurrence.ts';
import type { SubscriptionChange } from './subscriptions.ts';

const stripeStatuses = [
  'incomplete',
  'incomplete_expired',
  'trialing',
  'active',
  'past_due',
  'canceled',
  'unpaid',
  'paused',
] as const;
type StripeStatus = (typeof stripeStatuses)[number];

/**
 * Stripe's statuses in our domain's terms. `incomplete` (first payment pending) and `paused` (trial
 * over, no payment method) are out of service but may resume, as `unpaid` is; `incomplete_expired`
 * is terminal, as `canceled` is. The stored event keeps the exact status.
 */
const domainStatus: Readonly<Record<StripeStatus, SubscriptionStatus>> = {
  incomplete: 'unpaid',
  incomplete_expired: 'canceled',
  trialing: 'trialing',
  active: 'active',
  past_due: 'past_due',
  canceled: 'canceled',
  unpaid: 'unpaid',
  paused: 'unpaid',
};

/** What the mapping reads of a `customer.subscription.*` event; everything else is kept, unread. */
export const stripeSubscriptionEvent = z.looseObject({
  // The version and the row's time come from it: required here, so out of range is a 400.
  created: z.int().nonnegative().max(MAX_UNIX_SECONDS),
  data: z.looseObject({
    object: z.looseObject({
      id: z.string().min(1).max(255),
      status: z.enum(stripeStatuses),
    }),
  }),
});
export type StripeSubscriptionEvent = z.infer<typeof stripeSubscriptionEvent>;

/**
 * Where in a second each type falls. A subscription is created before it is updated and updated
 * before it is deleted, so within one second of `created` that order is the true one.
 */
const lifecycleStep = { created: 0, updated: 1, deleted: 2 } as const;
export type StripeLifecycle = keyof typeof lifecycleStep;
const STEPS_PER_SECOND = 4;

/**
 * Stripe gives a subscription no version, so the event's `created` (Stripe's clock, whole seconds) is
 * the version, times four plus the lifecycle step: `created` then `updated` in the same second (a
 * subscription activated at once) apply in order whatever order they arrive in. Two `updated` in one
 * second tie, and the first to arrive wins; docs/senders.md says so.
 *
 * Rows are `stripe:<sub id>`: the subscriptions table has one namespace, and a Stripe id must not
 * meet an acme row of the same name, whose versions count differently.
 */
export function stripeSubscriptionChange(
  event: StripeSubscriptionEvent,
  lifecycle: StripeLifecycle,
): SubscriptionChange {
  const subscription = event.data.object;
  return {
    externalId: `stripe:${subscription.id}`,
    // The event type is the authoritative fact: a deletion cancels, whatever status it lists.
    status: lifecycle === 'deleted' ? 'canceled' : domainStatus[subscription.status],
    providerVersion: event.created * STEPS_PER_SECOND + lifecycleStep[lifecycle],
    occurredAt: new Date(event.created * 1000),
  };
}
