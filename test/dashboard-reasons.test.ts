// Every state says why, on the dashboard in headless chromium at 1280 and 390 px: a parked event
// shows the rule that parked it and the value it met on its page, in the events list and in the
// overview's "Needs attention"; a bulk job done with failures is no green "done" but "done with
// failures", its failed count links to its page, which lists each failed item with its reason and a
// link to the item's own page. Screenshots go to test/artifacts/; nothing scrolls sideways at 390 px.
// Needs a process: headless Chromium renders the pages.
import { randomUUID } from 'node:crypto';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { defaultHandlers } from '../src/domain/handlers.ts';
import { createLogger } from '../src/lib/logger.ts';
import { createBulkRunner } from '../src/ops/jobs/bulk-runner.ts';
import { acmeEvent, signedHeaders, uniqueId } from './helpers/acme.ts';
import { buildTestApp } from './helpers/app.ts';
import { ARTIFACTS, type BrowserGlobal, hasChromium, useBrowser } from './helpers/browser.ts';
import { useTestDatabase } from './helpers/database.ts';
import { insertEvent } from './helpers/events.ts';
import { eventRow } from './helpers/facts.ts';

const { sql, db } = await useTestDatabase();
const TOKEN = 'dashboard-reasons-token-0123456789';
const test = await buildTestApp(db, { config: { ADMIN_TOKEN: TOKEN } });
test.setNow(Date.now());

const REASON = 'unknown api_version 2099-01-01 (known: 2024-06-01)';

/** A delivered acme event of an api_version this service does not know: parked. */
async function parkedDelivery(): Promise<string> {
  const event = acmeEvent({
    api_version: '2099-01-01',
    created: Math.floor(Date.now() / 1000) - 5,
    data: { id: uniqueId('sub'), status: 'active' },
  });
  const body = JSON.stringify(event);
  const timestamp = Math.floor(Date.now() / 1000);
  const response = await test.request('/webhooks/acme', {
    method: 'POST',
    body,
    headers: await signedHeaders(body, { timestamp }),
  });
  expect(response.status).toBe(202);
  expect(await eventRow(sql, event.id)).toMatchObject({ status: 'parked', last_error: REASON });
  return event.id;
}

/** A replay job over parked events, one still of an unknown version, run to its end. */
async function jobWithAFailure(): Promise<{ jobId: string; stuck: string }> {
  const prefix = uniqueId('evt_dash_why');
  const [stuck] = await Promise.all(
    [0, 1].map((index) => insertEvent(sql, { status: 'parked', eventId: `${prefix}_${index}` })),
  );
  if (stuck === undefined) throw new Error('no event stored');
  await sql`update webhook_events set payload = jsonb_set(payload, '{api_version}', '"2099-01-01"')
    where provider = 'acme' and event_id = ${stuck.eventId}`;
  const response = await test.request('/admin/api/jobs', {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      operator: 'ada',
      kind: 'replay_events',
      filter: { provider: 'acme', id: prefix, status: 'parked' },
    }),
  });
  const { job } = (await response.json()) as { job: { id: string } };
  await createBulkRunner({
    db,
    handlers: defaultHandlers,
    clock: Date.now,
    logger: createLogger({ level: 'silent', now: () => new Date(), write: () => {} }),
    owner: `test-${randomUUID()}`,
    settings: { pauseMs: 0 },
  }).run({ budgetMs: 60_000, jobId: job.id });
  const [row] = await sql`select status::text as status, failed from bulk_jobs where id = ${job.id}`;
  expect(row).toEqual({ status: 'done', failed: 1 });
  return { jobId: job.id, stuck: stuck.eventId };
}

/** How wide the page is laid out: wider than the window means it scrolls sideways. */
const scrollWidth = (page: Page) =>
  page.evaluate(() => (globalThis as unknown as BrowserGlobal).document.documentElement.scrollWidth);

describe.skipIf(!hasChromium)('why, in headless chromium', () => {
  const browser = useBrowser(test.app);

  for (const width of [1280, 390]) {
    it(`a parked event shows its reason on its page, in the list and in Needs attention (${width} px)`, async () => {
      const eventId = await parkedDelivery();
      const page = await browser.signedIn(TOKEN, width);
      const origin = await browser.origin;

      await page.goto(`${origin}/admin/events/acme/${eventId}`);
      // The field itself, not the heading: on a busy machine the heading can be read before the rest.
      await page.locator('#last-error').waitFor();
      expect(await page.locator('dt', { hasText: 'parked because' }).count()).toBe(1);
      expect(await page.locator('#last-error').textContent()).toBe(REASON);
      await page.screenshot({ path: `${ARTIFACTS}/why-parked-event-${width}.png`, fullPage: true });

      await page.goto(`${origin}/admin/events?status=parked&id=${eventId}`);
      const row = page.locator(`tr[data-event="acme/${eventId}"]`);
      await row.waitFor();
      expect(await row.locator('td.error').textContent()).toBe(REASON);
      expect(await row.locator('td.error').isVisible()).toBe(true);

      await page.goto(`${origin}/admin`);
      const attention = page.locator(`tr[data-event="acme/${eventId}"]`);
      await attention.waitFor();
      expect(await attention.locator('td.error').textContent()).toBe(REASON);
      expect(await scrollWidth(page)).toBeLessThanOrEqual(width);
      await page.close();
    });

    it(`a job done with failures is no green done: its failed items, with why, link to their rows (${width} px)`, async () => {
      const { jobId, stuck } = await jobWithAFailure();
      const page = await browser.signedIn(TOKEN, width);
      const origin = await browser.origin;
      await page.goto(`${origin}/admin/jobs`);
      const row = page.locator(`tr[data-job="${jobId}"]`);
      await row.waitFor();
      const badge = row.locator('.status');
      expect(await badge.textContent()).toBe('done with failures');
      const colour = await badge.evaluate(
        (element) =>
          (globalThis as unknown as { getComputedStyle(node: unknown): { backgroundColor: string } }).getComputedStyle(
            element,
          ).backgroundColor,
      );
      // Amber, not the green of a plain done.
      expect(colour).toBe('rgb(179, 92, 0)');
      expect(await scrollWidth(page)).toBeLessThanOrEqual(width);
      await page.screenshot({ path: `${ARTIFACTS}/why-jobs-${width}.png`, fullPage: true });

      await row.locator('.progress a', { hasText: '1 failed' }).click();
      await page.locator('h2#failures').waitFor();
      expect(page.url()).toBe(`${origin}/admin/jobs/${jobId}#failures`);
      const failed = page.locator(`tr[data-failed="acme/${stuck}"]`);
      const why = failed.locator('td.error');
      expect(await why.textContent()).toBe(`parked again: ${REASON}`);
      // Read in full, not cut off, at any width.
      expect(await why.evaluate((element) => element.scrollWidth <= element.clientWidth)).toBe(true);
      expect(await page.locator('dl .status').textContent()).toBe('done with failures');
      expect(await scrollWidth(page)).toBeLessThanOrEqual(width);
      await page.screenshot({ path: `${ARTIFACTS}/why-job-${width}.png`, fullPage: true });

      await failed.locator('a').click();
      await page.locator('main h1', { hasText: stuck }).waitFor();
      expect(await page.locator('#last-error').textContent()).toBe(REASON);
      await page.close();
    });
  }
});
