// The /admin dashboard: its gate and pages through app.request, then in a real headless browser
// (Debian chromium driven by playwright-core): a wrong token is refused on screen, filters show only
// their rows, paging reaches the last row, an event's page shows the exact stored payload, a replay
// that fails again is shown as failed (and one that works as done), keyboard navigation works, and
// at 390 px nothing scrolls sideways. Screenshots at 1280 and 390 px go to test/artifacts/.
// Needs a process: headless Chromium renders the dashboard's pages.
import { existsSync, mkdirSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defaultHandlers, defineHandler, type HandlerMap } from '../src/domain/handlers.ts';
import { DomainRejection } from '../src/lib/errors.ts';
import { uniqueId } from './helpers/acme.ts';
import { buildTestApp } from './helpers/app.ts';
import { openPage } from './helpers/browser.ts';
import { useTestDatabase } from './helpers/database.ts';
import { insertEvent } from './helpers/events.ts';
import { EXACT_NUMBERS, insertExactEvent } from './helpers/exact-payload.ts';
import { eventRow, subscriptionRow } from './helpers/facts.ts';
import { insertMessages, operatorActionRows, outboxRow } from './helpers/outbox.ts';
import { WAIT_MS } from './helpers/patience.ts';

/** What page.evaluate reads in the browser (the test's own types have no DOM). */
type BrowserGlobal = { document: { documentElement: { scrollWidth: number } } };

const { sql, db } = await useTestDatabase();
const TOKEN = 'dashboard-token-for-tests-0123456789';
const CHROMIUM = '/usr/bin/chromium';
const ARTIFACTS = 'test/artifacts';

/** The real acme handler, except that a change to `past_due` fails: a replay of such an event fails again. */
const realUpdate = defaultHandlers.acme?.['subscription.updated'];
if (realUpdate === undefined) throw new Error('no acme subscription.updated handler');
const handlers: HandlerMap = {
  ...defaultHandlers,
  acme: {
    ...defaultHandlers.acme,
    'subscription.updated': defineHandler({
      schema: z.unknown(),
      async apply(context, payload) {
        if ((payload as { data: { status: string } }).data.status === 'past_due') {
          throw new DomainRejection('ledger still down');
        }
        await realUpdate.apply(context, payload);
      },
    }),
  },
};
const test = await buildTestApp(db, { config: { ADMIN_TOKEN: TOKEN }, handlers });
// Rows are inserted at the database's now(): the app's clock must agree for the overview's windows.
test.setNow(Date.now());
const bearer = { authorization: `Bearer ${TOKEN}` };

/** Events of one fresh type, so a filter on it sees exactly these rows. */
async function eventsOfType(count: number, status = 'completed'): Promise<{ type: string; ids: string[] }> {
  const type = `${uniqueId('dash')}.seen`;
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const { eventId } = await insertEvent(sql, { status });
    await sql`update webhook_events set event_type = ${type}, received_at = now() - ${count - i} * interval '1 second'
      where event_id = ${eventId}`;
    ids.push(eventId);
  }
  return { type, ids };
}

describe('dashboard through app.request', () => {
  it('answers any page without a token with a 401 sign-in page that holds no data', async () => {
    const { eventId } = await insertEvent(sql, { status: 'failed', lastError: 'ledger down' });
    for (const path of ['/admin', '/admin/events', `/admin/events/acme/${eventId}`, '/admin/outbox']) {
      const response = await test.request(path, {});
      expect(response.status).toBe(401);
      expect(response.headers.get('content-type')).toMatch(/^text\/html/);
      expect(response.headers.get('cache-control')).toBe('no-store');
      expect(response.headers.get('content-security-policy') ?? '').toMatch(/script-src 'nonce-[^']+'/);
      const page = await response.text();
      expect(page).toContain('id="sign-in"');
      expect(page).not.toContain(eventId);
    }
    const wrong = await test.request('/admin/events', { headers: { authorization: 'Bearer not-the-token-at-all' } });
    expect(wrong.status).toBe(401);
    // The API stays JSON: no sign-in page there.
    const api = await test.request('/admin/api/events', {});
    expect(await api.json()).toEqual({ error: 'unauthorized' });
  });

  it('renders the overview with server-drawn charts, and lists events escaped', async () => {
    const { eventId } = await insertEvent(sql, { status: 'failed', lastError: '<script>alert(1)</script>' });
    const overview = await test.request('/admin', { headers: bearer });
    expect(overview.status).toBe(200);
    const html = await overview.text();
    expect(html.match(/<svg [^>]*class="chart"/g)?.length).toBe(5);
    expect(html).toContain('As of');
    expect(html).toContain(`data-event="acme/${eventId}"`);
    expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(html).not.toContain(TOKEN);

    const refused = await test.request('/admin/events?status=lost', { headers: bearer });
    expect(refused.status).toBe(400);
    expect(await refused.text()).toContain('<strong>status</strong>');
    expect((await test.request('/admin/events/acme/evt_nobody', { headers: bearer })).status).toBe(404);

    // Paging links keep the filters, the page size included.
    const { type } = await eventsOfType(3);
    const paged = await (await test.request(`/admin/events?type=${type}&limit=2`, { headers: bearer })).text();
    expect(paged.match(/<tr data-event=/g)?.length).toBe(2);
    const next = /<a href="([^"]+)" rel="next">/.exec(paged)?.[1]?.replaceAll('&amp;', '&') ?? '';
    expect(new URL(next, 'http://x').searchParams.get('type')).toBe(type);
    expect(new URL(next, 'http://x').searchParams.get('limit')).toBe('2');
    const last = await (await test.request(next, { headers: bearer })).text();
    expect(last.match(/<tr data-event=/g)?.length).toBe(1);
    expect(last).toContain('Last page');
  });
});

describe('dashboard payloads', () => {
  it("shows an event's payload with every number as stored", async () => {
    const { eventId } = await insertExactEvent(sql);
    const html = await (await test.request(`/admin/events/acme/${eventId}`, { headers: bearer })).text();
    const shown = /<pre id="payload">(.*?)<\/pre>/s.exec(html)?.[1] ?? '';
    for (const digits of EXACT_NUMBERS) expect(shown).toContain(digits);
    expect(shown).toContain('&quot;note&quot;: &quot;line one\\nline two&quot;');
  });
});

describe('dashboard figures', () => {
  /** The overview's figure of that id: its count, and whether it is highlighted. */
  async function figure(id: string): Promise<{ count: number; alert: boolean }> {
    const html = await (await test.request('/admin', { headers: bearer })).text();
    const found = new RegExp(`<div( class="alert")?>(?:(?!</div>).)*<strong id="${id}">(\\d+)</strong>`, 's').exec(
      html,
    );
    if (found === null) throw new Error(`no figure ${id}`);
    return { count: Number(found[2]), alert: found[1] !== undefined };
  }

  it('highlights dead letters and dead messages when there are any, and not when there are none', async () => {
    await sql`delete from webhook_events where status = 'dead_letter'`;
    await sql`delete from outbox_messages where status = 'dead'`;
    expect(await figure('dead-letters')).toEqual({ count: 0, alert: false });
    expect(await figure('dead-messages')).toEqual({ count: 0, alert: false });
    expect(await (await test.request('/admin', { headers: bearer })).text()).not.toContain('need an operator');

    await insertEvent(sql, { status: 'dead_letter', lastError: 'gave up' });
    expect(await figure('dead-letters')).toEqual({ count: 1, alert: true });
    expect(await figure('dead-messages')).toEqual({ count: 0, alert: false });
    await insertMessages(sql, 2, { status: 'dead', attempts: 10 });
    const [dead] = await sql<{ n: number }[]>`select count(*)::int as n from outbox_messages where status = 'dead'`;
    expect(await figure('dead-messages')).toEqual({ count: dead?.n, alert: true });
    expect(dead?.n).toBe(2);
  });

  it("a list's counts per status honour its provider, type, id and time filters", async () => {
    const { type, ids } = await eventsOfType(3, 'failed');
    const [first] = ids as [string];
    await sql`update webhook_events set status = 'completed' where event_id = ${first}`;
    await sql`update webhook_events set received_at = now() - interval '2 hours' where event_id = ${ids[1] ?? ''}`;
    const counts = async (query: string) => {
      const html = await (await test.request(`/admin/events?type=${type}&${query}`, { headers: bearer })).text();
      const nav = /<nav class="counts".*?<\/nav>/s.exec(html)?.[0] ?? '';
      return Object.fromEntries(
        [...nav.matchAll(/<a href="([^"]*)"[^>]*>.*?<span class="n">(\d+)<\/span>/gs)].map((match) => {
          const link = new URL((match[1] ?? '').replaceAll('&amp;', '&'), 'http://x');
          // Each count links to what it counts: the same filters, its status.
          expect(link.searchParams.get('type')).toBe(type);
          return [link.searchParams.get('status') ?? 'all', Number(match[2])];
        }),
      );
    };
    expect(await counts('provider=acme')).toMatchObject({ all: 3, failed: 2, completed: 1, dead_letter: 0 });
    expect(await counts('provider=stripe')).toMatchObject({ all: 0, failed: 0, completed: 0 });
    expect(await counts('since=1h')).toMatchObject({ all: 2, failed: 1, completed: 1 });
    expect(await counts(`id=${first}`)).toMatchObject({ all: 1, failed: 0, completed: 1 });
    // The status filter picks the rows; the counts stay those of the other filters.
    expect(await counts('status=failed&since=1h')).toMatchObject({ all: 2, failed: 1, completed: 1 });

    const topic = `dash.${Date.now()}`;
    await insertMessages(sql, 2, { topic, status: 'dead' });
    const outbox = await (await test.request(`/admin/outbox?topic=${topic}`, { headers: bearer })).text();
    expect(/<nav class="counts".*?<\/nav>/s.exec(outbox)?.[0]).toMatch(/all <span class="n">2<\/span>/);
  });
});

describe.skipIf(!existsSync(CHROMIUM))('dashboard in headless chromium', () => {
  const server = serve({ fetch: test.app.fetch, port: 0, hostname: '127.0.0.1' });
  const origin = new Promise<string>((resolve) =>
    server.once('listening', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)),
  );
  let browser: Awaited<ReturnType<typeof chromium.launch>>;
  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
  });
  afterAll(async () => {
    await browser?.close();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  async function signedIn(width = 1280, height = 900): Promise<Page> {
    const page = await openPage(browser, { viewport: { width, height } });
    await page.goto(`${await origin}/admin`);
    await page.fill('#sign-in input[name="token"]', TOKEN);
    await page.click('#sign-in button');
    await page.locator('h1', { hasText: 'Overview' }).waitFor();
    return page;
  }

  it('says so when the token is wrong, and signs in with the right one', async () => {
    const page = await openPage(browser);
    await page.goto(`${await origin}/admin`);
    await page.fill('#sign-in input[name="token"]', 'a-wrong-token-of-some-length');
    await page.click('#sign-in button');
    const notice = page.locator('#notice.error', { hasText: 'not accepted' });
    await notice.waitFor();
    expect(await page.locator('#sign-in').count()).toBe(1);
    await page.fill('#sign-in input[name="token"]', TOKEN);
    await page.click('#sign-in button');
    await page.locator('h1', { hasText: 'Overview' }).waitFor();
    expect(await page.locator('#notice').textContent()).toBe('');
    await page.close();
  });

  it('filters show only their rows, counts link into the list, and paging reaches the last row', async () => {
    const failing = await eventsOfType(2, 'failed');
    await sql`update webhook_events set event_type = ${failing.type} where event_id = ${(await insertEvent(sql, { status: 'completed' })).eventId}`;
    const paged = await eventsOfType(55);
    const page = await signedIn();
    await page.click('header nav a:has-text("Events")');
    await page.locator('h1', { hasText: 'Events' }).waitFor();

    await page.fill('form.filters input[name="type"]', failing.type);
    await page.selectOption('form.filters select[name="status"]', 'failed');
    await page.click('form.filters button');
    await page.waitForURL(/status=failed/);
    const rows = page.locator('tr[data-event]');
    await expect.poll(() => rows.count(), { timeout: WAIT_MS }).toBe(2);
    expect(await rows.locator('.status').allTextContents()).toEqual(['failed', 'failed']);
    expect(page.url()).toContain(`type=${encodeURIComponent(failing.type)}`);

    // Refresh keeps the filters (they are in the address).
    await page.click('#refresh');
    await page.locator('#notice', { hasText: 'Refreshed' }).waitFor();
    await expect.poll(() => rows.count(), { timeout: WAIT_MS }).toBe(2);

    // A status count is a link to the list filtered by that status.
    await page.click('nav.counts a:has(.s-parked)');
    await page.waitForURL(/\/admin\/events\?.*status=parked/);
    expect(new Set(await page.locator('tr[data-event] .status').allTextContents())).not.toContain('failed');

    await page.goto(`${await origin}/admin/events?type=${encodeURIComponent(paged.type)}`);
    await page.locator('tr[data-event]').first().waitFor();
    expect(await page.locator('tr[data-event]').count()).toBe(50);
    await page.screenshot({ path: `${ARTIFACTS}/dashboard-events-1280.png`, fullPage: true });
    await page.click('a[rel="next"]');
    await page.locator('.pager span', { hasText: 'Last page' }).waitFor();
    const last = await page
      .locator('tr[data-event]')
      .evaluateAll((found) => found.map((row) => row.getAttribute('data-event')));
    // Newest first: the second page ends with the oldest row.
    expect(last).toEqual(
      paged.ids
        .slice(0, 5)
        .reverse()
        .map((id) => `acme/${id}`),
    );
    await page.close();
  });

  it("shows an event's exact stored payload, and a replay that fails again as failed, with its reason", async () => {
    const { eventId } = await insertEvent(sql, { status: 'failed', lastError: 'ledger down', to: 'past_due' });
    const [stored] = await sql<{ payload: unknown }[]>`select payload from webhook_events where event_id = ${eventId}`;
    const page = await signedIn();
    await page.fill('#operator', 'grace');
    await page.goto(`${await origin}/admin/events?id=${eventId}`);
    // Keyboard: focus the event's link and follow it with Enter.
    await page.focus(`a[href="/admin/events/acme/${eventId}"]`);
    await page.keyboard.press('Enter');
    await page.locator('#payload').waitFor();
    expect(JSON.parse((await page.locator('#payload').textContent()) ?? '')).toEqual(stored?.payload);
    await page.screenshot({ path: `${ARTIFACTS}/dashboard-event-1280.png`, fullPage: true });

    // The operator name typed once is remembered for the session (after a full reload too).
    await page.reload();
    await page.locator('#payload').waitFor();
    expect(await page.inputValue('#operator')).toBe('grace');
    await page.focus('form[data-kind="replay"] button');
    await page.keyboard.press('Enter');
    const notice = page.locator('#notice.error', { hasText: `acme/${eventId}: replay failed, now failed` });
    await notice.waitFor();
    expect(await notice.textContent()).toContain('ledger still down');
    expect(await page.locator('#last-error').textContent()).toBe('DomainRejection: ledger still down');
    // The count is of failures: an event that never failed reads "failed attempts 0", not "attempts 0".
    const [failures] = await sql<{ attempt_count: number }[]>`
      select attempt_count from webhook_events where event_id = ${eventId}`;
    expect(await page.locator('dt:text-is("failed attempts") + dd').textContent()).toBe(
      String(failures?.attempt_count),
    );
    expect(await eventRow(sql, eventId)).toMatchObject({
      status: 'failed',
      last_error: 'DomainRejection: ledger still down',
    });
    expect(await operatorActionRows(sql, `acme/${eventId}`)).toEqual([
      expect.objectContaining({ operator: 'grace', before_status: 'failed', after_status: 'failed' }),
    ]);
    await page.screenshot({ path: `${ARTIFACTS}/dashboard-replay-failed-1280.png`, fullPage: true });
    await page.close();
  });

  it('a replay that works is shown as done and applied; a dead message is retried from its page', async () => {
    const { eventId, subscription } = await insertEvent(sql, {
      status: 'failed',
      lastError: 'ledger down',
      to: 'unpaid',
    });
    const [message] = (await insertMessages(sql, 1, { status: 'dead', attempts: 10 })) as [string];
    const page = await signedIn();
    await page.fill('#operator', 'ada');
    await page.goto(`${await origin}/admin/events/acme/${eventId}`);
    await page.click('form[data-kind="replay"] button');
    await page.locator('#notice.ok', { hasText: `acme/${eventId}: replayed, now completed` }).waitFor();
    expect(await eventRow(sql, eventId)).toMatchObject({ status: 'completed', last_error: null });
    expect(await subscriptionRow(sql, subscription)).toMatchObject({ status: 'unpaid' });

    await page.goto(`${await origin}/admin/outbox/${message}`);
    await page.click('form[data-kind="retry"] button');
    await page.locator('#notice.ok', { hasText: `Message ${message}: retried` }).waitFor();
    expect(await outboxRow(sql, message)).toMatchObject({ status: 'pending', attempts: 0 });
    expect(await operatorActionRows(sql, message)).toEqual([expect.objectContaining({ operator: 'ada' })]);
    await page.close();
  });

  it('refreshes by itself every 30 s once asked to, keeping the filters', async () => {
    const { type } = await eventsOfType(1);
    const page = await openPage(browser);
    await page.clock.install();
    await page.goto(`${await origin}/admin`);
    await page.fill('#sign-in input[name="token"]', TOKEN);
    await page.click('#sign-in button');
    await page.locator('h1', { hasText: 'Overview' }).waitFor();
    await page.click('header nav a:has-text("Events")');
    await page.locator('form.filters').waitFor();
    await page.fill('form.filters input[name="type"]', type);
    await page.click('form.filters button');
    await expect.poll(() => page.locator('tr[data-event]').count(), { timeout: WAIT_MS }).toBe(1);
    await page.check('#auto-refresh');
    const { eventId } = await insertEvent(sql, { status: 'completed' });
    await sql`update webhook_events set event_type = ${type} where event_id = ${eventId}`;
    await page.clock.runFor(31_000);
    await page.locator(`tr[data-event="acme/${eventId}"]`).waitFor();
    expect(await page.locator('tr[data-event]').count()).toBe(2);
    expect(await page.isChecked('#auto-refresh')).toBe(true);
    await page.close();
  });

  it('at 390x844 the first screen of the events list shows at least six whole events', async () => {
    // Events as an incident leaves them: failed, with an error, ids as long as Stripe's.
    const type = `${uniqueId('phone')}.failed`;
    for (let i = 0; i < 10; i++) {
      const { eventId } = await insertEvent(sql, {
        status: 'failed',
        lastError: 'DomainRejection: ledger still down (connection refused)',
        attempts: 3,
      });
      await sql`update webhook_events set event_type = ${type} where event_id = ${eventId}`;
    }
    const page = await signedIn(390, 844);
    const views: Array<[string, string]> = [
      ['all', '/admin/events'],
      ['filtered', `/admin/events?status=failed&type=${encodeURIComponent(type)}`],
    ];
    for (const [name, path] of views) {
      await page.goto(`${await origin}${path}`);
      await page.locator('tr[data-event]').first().waitFor();
      await page.locator('#sign-in').waitFor({ state: 'detached' });
      const visible = await page.locator('tr[data-event]').evaluateAll(
        (rows, height) =>
          rows.filter((row) => {
            const box = row.getBoundingClientRect();
            return box.top >= 0 && box.bottom <= height && box.height > 0;
          }).length,
        844,
      );
      await page.screenshot({ path: `${ARTIFACTS}/dashboard-events-${name}-390x844-screen.png` });
      // The header took 190 px before: brand and sections on one line, the session's controls on two.
      expect(await page.locator('header').evaluate((header) => header.getBoundingClientRect().height)).toBeLessThan(
        100,
      );
      expect(visible, `${path}: events wholly on the first screen`).toBeGreaterThanOrEqual(6);
    }
    // The filters are a tap away, and say which are in use.
    await page.click('details.filter-fold > summary');
    await page.locator('form.filters select[name="status"]').waitFor({ state: 'visible' });
    expect(await page.locator('details.filter-fold > summary').textContent()).toContain('2 in use');
    await page.screenshot({ path: `${ARTIFACTS}/dashboard-events-390x844-filters.png` });
    await page.close();
  });

  it('fits 390 px without sideways scrolling, and 1280 px, on every page', async () => {
    const { eventId } = await insertEvent(sql, { status: 'failed', lastError: 'x'.repeat(300) });
    const [message] = (await insertMessages(sql, 1, { status: 'dead' })) as [string];
    for (const width of [390, 1280]) {
      const page = await signedIn(width);
      const views: Array<[string, string]> = [
        ['overview', '/admin'],
        ['overview-day', '/admin?range=day'],
        ['events', '/admin/events'],
        ['event', `/admin/events/acme/${eventId}`],
        ['outbox', '/admin/outbox'],
        ['message', `/admin/outbox/${message}`],
      ];
      for (const [name, path] of views) {
        await page.goto(`${await origin}${path}`);
        await page.locator('main h1').waitFor();
        // The sign-in page comes first; the script then loads the page with the tab's token.
        await page.locator('#sign-in').waitFor({ state: 'detached' });
        const scrollWidth = await page.evaluate(
          () => (globalThis as unknown as BrowserGlobal).document.documentElement.scrollWidth,
        );
        expect(scrollWidth, `${name} at ${width} px`).toBeLessThanOrEqual(width);
        await page.screenshot({ path: `${ARTIFACTS}/dashboard-${name}-${width}.png`, fullPage: true });
        // What a phone shows first, at its own size.
        if (width === 390) await page.screenshot({ path: `${ARTIFACTS}/dashboard-${name}-${width}-screen.png` });
      }
      await page.close();
    }
  });
});
