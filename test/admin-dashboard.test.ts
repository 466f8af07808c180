// The /admin dashboard: its gate and page through app.request, then in a real headless browser
// (Debian chromium driven by playwright-core): sign in with the token, see a failed event, replay it
// with a click, and find the change in the database. A screenshot is kept in test/artifacts/.
import { existsSync, mkdirSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { chromium } from 'playwright-core';
import { afterAll, describe, expect, it } from 'vitest';
import { buildTestApp } from './helpers/app.ts';
import { useTestDatabase } from './helpers/database.ts';
import { insertEvent } from './helpers/events.ts';
import { eventRow, subscriptionRow } from './helpers/facts.ts';
import { insertMessages, operatorActionRows } from './helpers/outbox.ts';

const { sql, db } = await useTestDatabase();
const TOKEN = 'dashboard-token-for-tests-0123456789';
const test = await buildTestApp(db, { config: { ADMIN_TOKEN: TOKEN } });
const CHROMIUM = '/usr/bin/chromium';

const storeFailedEvent = (lastError: string) =>
  insertEvent(sql, { status: 'failed', lastError, attempts: 3, version: 5, to: 'unpaid' });

describe('dashboard through app.request', () => {
  it('answers a browser without a token with a 401 sign-in page that holds no data', async () => {
    const { eventId } = await storeFailedEvent('ledger down');
    const response = await test.request('/admin', {});
    expect(response.status).toBe(401);
    expect(response.headers.get('content-type')).toMatch(/^text\/html/);
    expect(response.headers.get('cache-control')).toBe('no-store');
    const csp = response.headers.get('content-security-policy') ?? '';
    expect(csp).toMatch(/script-src 'nonce-[^']+'/);
    const page = await response.text();
    expect(page).toContain('id="sign-in"');
    expect(page).not.toContain(eventId);
    const wrong = await test.request('/admin', { headers: { authorization: 'Bearer not-the-token-at-all' } });
    expect(wrong.status).toBe(401);
  });

  it('renders counts, failures, parked, dead letters and dead messages for the token, escaped', async () => {
    const { eventId } = await storeFailedEvent('<script>alert(1)</script>');
    const [message] = (await insertMessages(sql, 1, { status: 'dead' })) as [string];
    const response = await test.request('/admin', { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(response.status).toBe(200);
    const page = await response.text();
    expect(page).toContain('Events by status');
    expect(page).toContain(`data-event="acme/${eventId}"`);
    expect(page).toContain(`/admin/api/events/acme/${eventId}/replay`);
    expect(page).toContain(`/admin/api/outbox/${message}/retry`);
    expect(page).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(page).not.toContain(TOKEN);
    expect(page.match(/name="operator"[^>]*required/g)?.length).toBeGreaterThanOrEqual(2);
  });
});

describe.skipIf(!existsSync(CHROMIUM))('dashboard in headless chromium', () => {
  const server = serve({ fetch: test.app.fetch, port: 0, hostname: '127.0.0.1' });
  const origin = new Promise<string>((resolve) =>
    server.once('listening', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)),
  );
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('signs in with the token, lists a failed event, and a replay click applies it', async () => {
    const { eventId, subscription } = await storeFailedEvent('ledger down');
    const browser = await chromium.launch({
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
    try {
      const page = await browser.newPage();
      await page.goto(`${await origin}/admin`);
      await page.fill('#sign-in input[name="token"]', TOKEN);
      await page.click('#sign-in button');
      const row = page.locator(`tr[data-event="acme/${eventId}"]`);
      await row.waitFor();
      expect(await row.locator('.status').textContent()).toBe('failed');
      expect(await row.locator('.error').textContent()).toBe('ledger down');

      // The operator field is required: an empty form is not sent.
      await row.locator('button').click();
      expect((await eventRow(sql, eventId))?.status).toBe('failed');

      await row.locator('input[name="operator"]').fill('grace');
      await row.locator('button').click();
      await page.locator('#notice', { hasText: `acme/${eventId}: completed` }).waitFor();
      mkdirSync('test/artifacts', { recursive: true });
      await page.screenshot({ path: 'test/artifacts/dashboard.png', fullPage: true });

      expect(await eventRow(sql, eventId)).toMatchObject({ status: 'completed', last_error: null });
      expect(await subscriptionRow(sql, subscription)).toMatchObject({ status: 'unpaid', provider_version: '5' });
      expect(await operatorActionRows(sql, `acme/${eventId}`)).toEqual([
        expect.objectContaining({
          operator: 'grace',
          action: 'replay',
          before_status: 'failed',
          after_status: 'completed',
        }),
      ]);
      // Replayed, it left the failures table; a reload keeps the tab signed in.
      expect(await page.locator(`tr[data-event="acme/${eventId}"]`).count()).toBe(0);
      await page.reload();
      await page.locator('h2', { hasText: 'Recent failures' }).waitFor();
    } finally {
      await browser.close();
    }
  }, 60_000);
});
