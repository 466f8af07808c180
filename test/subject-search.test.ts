// Search by the sender's own id of what an event is about (`?subject=`, `--subject`): an acme
// delivery through the app, and stored Stripe, GitHub and Shopify payloads (Shopify's id beyond
// 2^53), found exactly by the admin API, the dashboard and the CLI, with counts that match.
import { describe, expect, it } from 'vitest';
import { acmeEvent, signedHeaders, uniqueId } from './helpers/acme.ts';
import { buildTestApp } from './helpers/app.ts';
import { runCli } from './helpers/cli.ts';
import { useTestDatabase } from './helpers/database.ts';

const { sql, db, url } = await useTestDatabase();
const TOKEN = 'admin-token-for-tests-0123456789';
const test = await buildTestApp(db, { config: { ADMIN_TOKEN: TOKEN } });
const bearer = { authorization: `Bearer ${TOKEN}` };
const SHOPIFY_ORDER = '820982911946154508901';

async function stored(provider: string, eventId: string, payload: string) {
  await sql`insert into webhook_events (provider, event_id, event_type, status, payload, completed_at)
    values (${provider}, ${eventId}, 'x', 'completed', (${payload}::text)::jsonb, now())`;
}

async function listed(query: string) {
  const response = await test.request(`/admin/api/events?${query}`, { headers: bearer });
  expect(response.status).toBe(200);
  return (await response.json()) as { events: Array<{ provider: string; event_id: string }>; counts: object };
}

describe('search by subject', () => {
  it('finds each sender’s events by the id inside their payloads, and nothing else', async () => {
    const subscription = uniqueId('sub');
    const event = acmeEvent({ data: { id: subscription, status: 'active' } });
    const body = JSON.stringify(event);
    const delivered = await test.request('/webhooks/acme', {
      method: 'POST',
      body,
      headers: await signedHeaders(body),
    });
    expect(delivered.status).toBe(200);
    await stored('acme', uniqueId('evt'), JSON.stringify({ id: 'other', data: { id: `${subscription}_not` } }));
    await stored('stripe', 'evt_s1', '{"id":"evt_s1","data":{"object":{"id":"sub_stripe_1"}}}');
    await stored('stripe', 'evt_s2', '{"id":"evt_s2","data":{"object":{"id":"sub_stripe_1"}}}');
    await stored('github', 'delivery-1', '{"repository":{"full_name":"acme/widgets"}}');
    await stored('shopify', 'webhook-1', `{"id":${SHOPIFY_ORDER},"total":"1.00"}`);
    // Another sender's payload with the same shape is not searched by Stripe's path.
    await stored('standard', 'msg_1', '{"data":{"object":{"id":"sub_stripe_1"}}}');

    const ids = async (query: string) => (await listed(query)).events.map((row) => `${row.provider}/${row.event_id}`);
    expect(await ids(`subject=${subscription}`)).toEqual([`acme/${event.id}`]);
    expect((await ids('subject=sub_stripe_1')).sort()).toEqual(['stripe/evt_s1', 'stripe/evt_s2']);
    expect(await ids('subject=acme%2Fwidgets')).toEqual(['github/delivery-1']);
    expect(await ids(`subject=${SHOPIFY_ORDER}`)).toEqual(['shopify/webhook-1']);
    expect(await ids('subject=sub_stripe_1&provider=github')).toEqual([]);
    expect((await listed('subject=sub_stripe_1')).counts).toEqual({ completed: 2 });

    const page = await test.request(`/admin/events?subject=${SHOPIFY_ORDER}`, { headers: bearer });
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain('webhook-1');
    expect(html).not.toContain('delivery-1');

    const cli = await runCli(['events', 'list', '--subject', 'acme/widgets', '--json'], { DATABASE_URL: url });
    expect(cli.code).toBe(0);
    expect((JSON.parse(cli.output) as Array<{ event_id: string }>).map((row) => row.event_id)).toEqual(['delivery-1']);
  });

  it('counts matching events up to 10,000, and says when it stopped there', async () => {
    await sql`insert into webhook_events (provider, event_id, event_type, status, completed_at)
      select 'acme', 'cap_' || g, 'x', (case when g % 10 = 0 then 'ignored' else 'completed' end)::webhook_event_status,
        now() from generate_series(1, 10050) g`;
    const many = await test.request('/admin/api/events?id=cap_', { headers: bearer });
    const manyBody = (await many.json()) as { counts: Record<string, number>; counts_complete?: boolean };
    expect(manyBody.counts_complete).toBe(false);
    expect(Object.values(manyBody.counts).reduce((sum, n) => sum + n, 0)).toBe(10_001);
    // cap_1, cap_10…19, cap_100…199, cap_1000…1999, cap_10000…10050: 1,162 events, counted exactly.
    const few = (await (await test.request('/admin/api/events?id=cap_1', { headers: bearer })).json()) as {
      counts: Record<string, number>;
      counts_complete?: boolean;
    };
    expect(few.counts_complete).toBeUndefined();
    const [truth] = await sql<{ completed: number; ignored: number }[]>`select
      count(*) filter (where status = 'completed')::int as completed, count(*) filter (where status = 'ignored')::int as ignored
      from webhook_events where event_id like 'cap\_1%'`;
    expect(few.counts).toEqual(truth);
    const page = await (await test.request('/admin/events?id=cap_', { headers: bearer })).text();
    expect(page).toMatch(/all\s*<span class="n">10001\+<\/span>/);
  });

  it('refuses a subject it cannot hold, as any other filter', async () => {
    const response = await test.request(`/admin/api/events?subject=${'x'.repeat(256)}`, { headers: bearer });
    expect(response.status).toBe(400);
  });
});
