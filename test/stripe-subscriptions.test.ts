// Stripe's customer.subscription.* events in the subscriptions domain: rows under `stripe:<id>`,
// Stripe's statuses folded into ours, and the ordering rule (event `created`, then lifecycle step)
// holding whatever order the deliveries arrive in.
import { describe, expect, it } from 'vitest';
import { enableSenders } from '../src/senders/registry.ts';
import { acmeEvent, signedHeaders, TEST_NOW_SECONDS, TEST_SECRET, uniqueId } from './helpers/acme.ts';
import { buildTestApp } from './helpers/app.ts';
import { useTestDatabase } from './helpers/database.ts';
import { countEvents, eventRow, subscriptionRow } from './helpers/facts.ts';
import { allSchemeSecrets, stripeEvent, stripeHeader } from './helpers/senders.ts';

const { sql, db } = await useTestDatabase();
const test = await buildTestApp(db, {
  enabledSenders: await enableSenders({ ...allSchemeSecrets(), acme: [TEST_SECRET] }),
});

type Lifecycle = 'created' | 'updated' | 'deleted';

function subscriptionEvent(lifecycle: Lifecycle, subscription: string, status: string, created: number) {
  return stripeEvent(
    `customer.subscription.${lifecycle}`,
    { id: subscription, object: 'subscription', status, customer: 'cus_1', items: { data: [] } },
    created,
  );
}

async function deliver(event: object) {
  const body = JSON.stringify(event);
  return test.request('/webhooks/stripe', {
    method: 'POST',
    body,
    headers: { 'content-type': 'application/json', 'stripe-signature': stripeHeader(body) },
  });
}

const T = TEST_NOW_SECONDS - 60;
const row = (subscription: string) => subscriptionRow(sql, `stripe:${subscription}`);

describe('Stripe customer.subscription.* into subscriptions', () => {
  it('creates the row under stripe:<id>, versioned by the event time', async () => {
    const subscription = uniqueId('sub');
    const event = subscriptionEvent('created', subscription, 'active', T);
    expect(await (await deliver(event)).text()).toBe('{"received":true}');

    expect(await row(subscription)).toMatchObject({ status: 'active', provider_version: String(T * 4) });
    expect((await row(subscription))?.updated_at.getTime()).toBe(T * 1000);
    expect(await eventRow(sql, event.id, 'stripe')).toMatchObject({ status: 'completed', event_type: event.type });
    expect(await subscriptionRow(sql, subscription)).toBeUndefined();
  });

  it('applies created then updated of one second in lifecycle order, whatever order they arrive in', async () => {
    const subscription = uniqueId('sub');
    await deliver(subscriptionEvent('updated', subscription, 'active', T));
    await deliver(subscriptionEvent('created', subscription, 'incomplete', T));
    expect(await row(subscription)).toMatchObject({ status: 'active', provider_version: String(T * 4 + 1) });
  });

  it('never lets an older event overwrite a newer one', async () => {
    const subscription = uniqueId('sub');
    await deliver(subscriptionEvent('updated', subscription, 'past_due', T + 10));
    const stale = subscriptionEvent('updated', subscription, 'active', T);
    expect((await deliver(stale)).status).toBe(200);
    expect(await row(subscription)).toMatchObject({ status: 'past_due', provider_version: String((T + 10) * 4 + 1) });
    expect((await eventRow(sql, stale.id, 'stripe'))?.status).toBe('completed');
  });

  it('keeps the first of two updates in one second: the documented limit of the rule', async () => {
    const subscription = uniqueId('sub');
    await deliver(subscriptionEvent('updated', subscription, 'past_due', T));
    await deliver(subscriptionEvent('updated', subscription, 'active', T));
    expect(await row(subscription)).toMatchObject({ status: 'past_due' });
  });

  it('cancels on deleted, and a later update does not revive it', async () => {
    const subscription = uniqueId('sub');
    await deliver(subscriptionEvent('created', subscription, 'active', T));
    await deliver(subscriptionEvent('deleted', subscription, 'active', T + 1));
    await deliver(subscriptionEvent('updated', subscription, 'active', T + 2));
    expect(await row(subscription)).toMatchObject({ status: 'canceled', provider_version: String((T + 1) * 4 + 2) });
  });

  it.each([
    ['incomplete', 'unpaid'],
    ['paused', 'unpaid'],
    ['incomplete_expired', 'canceled'],
    ['trialing', 'trialing'],
    ['unpaid', 'unpaid'],
  ])('folds Stripe status %s into %s', async (stripeStatus, ours) => {
    const subscription = uniqueId('sub');
    await deliver(subscriptionEvent('updated', subscription, stripeStatus, T));
    expect((await row(subscription))?.status).toBe(ours);
  });

  it('refuses an unknown status with 400 before any database work', async () => {
    const subscription = uniqueId('sub');
    const event = subscriptionEvent('updated', subscription, 'hibernating', T);
    const response = await deliver(event);
    expect(response.status).toBe(400);
    expect(await countEvents(sql, event.id)).toBe(0);
    expect(await row(subscription)).toBeUndefined();
  });

  it('leaves an acme subscription of the same id alone', async () => {
    const shared = uniqueId('sub');
    const acme = acmeEvent({ version: 3, data: { id: shared, status: 'active' } });
    const body = JSON.stringify(acme);
    await test.request('/webhooks/acme', { method: 'POST', body, headers: await signedHeaders(body) });
    await deliver(subscriptionEvent('deleted', shared, 'canceled', T));

    expect(await subscriptionRow(sql, shared)).toMatchObject({ status: 'active', provider_version: '3' });
    expect(await row(shared)).toMatchObject({ status: 'canceled' });
  });
});
