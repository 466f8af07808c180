// Which senders park an event of a schema version the code does not know (docs/senders.md, "Which
// senders park"): acme alone. Stripe's api_version is the endpoint's, chosen by its user, and the
// subscription mapping reads only fields every version shares, so an unknown one is applied
// (docs/domain.md). Stripe's thin events are not snapshot events and are refused.
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

const postStripe = (event: object) => {
  const body = JSON.stringify(event);
  return test.request('/webhooks/stripe', {
    method: 'POST',
    body,
    headers: { 'content-type': 'application/json', 'stripe-signature': stripeHeader(body) },
  });
};

describe('unknown schema versions', () => {
  it('parks an acme event of an unknown api_version: 202, stored parked, nothing applied', async () => {
    const subscription = uniqueId('sub');
    const event = acmeEvent({ api_version: '2099-01-01', data: { id: subscription, status: 'active' } });
    const body = JSON.stringify(event);
    const response = await test.request('/webhooks/acme', { method: 'POST', body, headers: await signedHeaders(body) });
    expect(response.status).toBe(202);
    expect(await response.text()).toBe('{"received":true,"queued":true}');
    expect((await eventRow(sql, event.id))?.status).toBe('parked');
    expect(await subscriptionRow(sql, subscription)).toBeUndefined();
  });

  it('applies a Stripe subscription event of an api_version it has never seen: 200, completed', async () => {
    const subscription = uniqueId('sub');
    const event = {
      ...stripeEvent(
        'customer.subscription.updated',
        { id: subscription, object: 'subscription', status: 'active' },
        TEST_NOW_SECONDS - 60,
      ),
      api_version: '2099-01-01',
    };
    const response = await postStripe(event);
    expect(response.status).toBe(200);
    expect(await response.text()).toBe('{"received":true}');
    expect((await eventRow(sql, event.id, 'stripe'))?.status).toBe('completed');
    expect(await subscriptionRow(sql, `stripe:${subscription}`)).toMatchObject({ status: 'active' });
  });

  it("refuses Stripe's thin events (not `object: event`) with 400, storing nothing", async () => {
    const id = uniqueId('evt');
    const thin = {
      id,
      object: 'v2.core.event',
      type: 'v1.customer.subscription.updated',
      created: new Date((TEST_NOW_SECONDS - 60) * 1000).toISOString(),
      related_object: { id: uniqueId('sub'), type: 'subscription', url: '/v1/subscriptions/sub_1' },
    };
    const response = await postStripe(thin);
    expect(response.status).toBe(400);
    expect(await countEvents(sql, id)).toBe(0);
  });
});
