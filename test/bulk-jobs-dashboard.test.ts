// Bulk jobs on the dashboard, in headless chromium: a filtered list offers "Retry all N matching" /
// "Replay all N matching", which counts exactly, asks to confirm (declining does nothing), creates the
// job and leads to the jobs page; the jobs page shows progress and cancels. Screenshots at 1280 and
// 390 px go to test/artifacts/, and nothing scrolls sideways at 390 px.
// Needs a process: headless Chromium renders the Jobs page.
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../src/config.ts';
import { createLogger } from '../src/lib/logger.ts';
import { bulkRunnerFor } from '../src/ops/maintenance/drainers.ts';
import { uniqueId } from './helpers/acme.ts';
import { buildTestApp } from './helpers/app.ts';
import { ARTIFACTS, type BrowserGlobal, hasChromium, useBrowser } from './helpers/browser.ts';
import { useTestDatabase } from './helpers/database.ts';
import { insertEvent } from './helpers/events.ts';
import { eventRow } from './helpers/facts.ts';
import { insertMessages, outboxRows } from './helpers/outbox.ts';

const { sql, db } = await useTestDatabase();
const TOKEN = 'dashboard-token-for-tests-0123456789';
const test = await buildTestApp(db, { config: { ADMIN_TOKEN: TOKEN } });
test.setNow(Date.now());

const jobsOf = (topicOrPrefix: string) =>
  sql<Array<{ id: string; status: string; total: number; processed: number }>>`
    select id, status::text as status, total, processed from bulk_jobs
    where filter->>'topic' = ${topicOrPrefix} or filter->>'id' = ${topicOrPrefix}`;

describe('the list pages through app.request', () => {
  it('offer the bulk action only under a status the action takes, with the filter and the count', async () => {
    const topic = uniqueId('dash_bulk');
    await insertMessages(sql, 4, { topic, status: 'dead' });
    const headers = { authorization: `Bearer ${TOKEN}` };
    const dead = await (await test.request(`/admin/outbox?status=dead&topic=${topic}`, { headers })).text();
    expect(dead).toContain('Retry all 4 matching');
    expect(dead).toContain(
      `data-filter="{&quot;status&quot;:&quot;dead&quot;,&quot;topic&quot;:&quot;${topic}&quot;}"`,
    );
    const all = await (await test.request(`/admin/outbox?topic=${topic}`, { headers })).text();
    expect(all).not.toContain('data-bulk=');
    const completed = await (await test.request('/admin/events?status=completed', { headers })).text();
    expect(completed).not.toContain('data-bulk=');
    const jobs = await test.request('/admin/jobs', { headers });
    expect(jobs.status).toBe(200);
    expect(await jobs.text()).toContain('<h1 tabindex="-1">Jobs</h1>');
  });
});

describe.skipIf(!hasChromium)('bulk jobs in headless chromium', () => {
  const browser = useBrowser(test.app);

  it('Retry all: counts, asks, declining does nothing, accepting queues the job; the jobs page shows it and cancels', async () => {
    const topic = uniqueId('dash_retry');
    const ids = await insertMessages(sql, 6, { topic, status: 'dead', attempts: 10 });
    const page = await browser.signedIn(TOKEN);
    await page.fill('#operator', 'ada');
    await page.goto(`${await browser.origin}/admin/outbox?status=dead&topic=${topic}`);
    const button = page.locator('form[data-bulk="retry_outbox"] button');
    await button.waitFor();
    expect(await button.textContent()).toBe('Retry all 6 matching');
    await page.screenshot({ path: `${ARTIFACTS}/bulk-outbox-1280.png`, fullPage: true });

    const questions: string[] = [];
    page.once('dialog', (dialog) => {
      questions.push(dialog.message());
      void dialog.dismiss();
    });
    await button.click();
    await page.locator('#notice', { hasText: 'Nothing was done.' }).waitFor();
    expect(questions).toEqual(['Retry all 6 matching messages as a job?']);
    expect(await jobsOf(topic)).toEqual([]);

    page.once('dialog', (dialog) => void dialog.accept());
    await button.click();
    await page.locator('#notice.ok', { hasText: 'Retry job queued: 6 message(s).' }).waitFor();
    await page.locator('h1', { hasText: 'Jobs' }).waitFor();
    const [job] = await jobsOf(topic);
    expect(job).toMatchObject({ status: 'queued', total: 6, processed: 0 });
    if (job === undefined) throw new Error('no job');
    const row = page.locator(`tr[data-job="${job.id}"]`);
    expect(await row.locator('.progress').textContent()).toContain('0 / 6');
    await page.screenshot({ path: `${ARTIFACTS}/bulk-jobs-queued-1280.png`, fullPage: true });

    await row.locator('form[data-kind="cancel"] button').click();
    await page.locator('#notice.ok', { hasText: `Job ${job.id}: cancelled after 0 of 6` }).waitFor();
    expect(await jobsOf(topic)).toEqual([expect.objectContaining({ status: 'cancelled' })]);
    expect((await outboxRows(sql, ids)).every((message) => message.status === 'dead')).toBe(true);
    expect(await page.locator(`tr[data-job="${job.id}"] form[data-kind="cancel"]`).count()).toBe(0);
    await page.close();
  });

  it('Replay all on the events list queues a job that a runner finishes; the page shows it done', async () => {
    const prefix = uniqueId('evt_dash');
    const stored = await Promise.all(
      Array.from({ length: 3 }, (_, index) => insertEvent(sql, { status: 'failed', eventId: `${prefix}_${index}` })),
    );
    const page = await browser.signedIn(TOKEN);
    await page.fill('#operator', 'ada');
    await page.goto(`${await browser.origin}/admin/events?status=failed&id=${prefix}`);
    page.once('dialog', (dialog) => void dialog.accept());
    await page.locator('form[data-bulk="replay_events"] button', { hasText: 'Replay all 3 matching' }).click();
    await page.locator('#notice.ok', { hasText: 'Replay job queued: 3 event(s).' }).waitFor();
    const logger = createLogger({ level: 'silent', now: () => new Date(), write: () => {} });
    await bulkRunnerFor({ config: parseConfig({}), db, clock: Date.now, logger, newId: () => uniqueId('r') }).run({
      budgetMs: 60_000,
    });
    for (const event of stored) expect(await eventRow(sql, event.eventId)).toMatchObject({ status: 'completed' });
    await page.click('#refresh');
    const [job] = await jobsOf(prefix);
    if (job === undefined) throw new Error('no job');
    await page.locator(`tr[data-job="${job.id}"] .status`, { hasText: 'done' }).waitFor();
    expect(await page.locator(`tr[data-job="${job.id}"] .progress`).textContent()).toContain('3 / 3');
    await page.close();
  });

  it('fits 390 px without sideways scrolling, and 1280 px', async () => {
    const topic = uniqueId('dash_fit');
    await insertMessages(sql, 2, { topic, status: 'dead' });
    for (const width of [390, 1280]) {
      const page = await browser.signedIn(TOKEN, width);
      for (const [name, path] of [
        ['jobs', '/admin/jobs'],
        ['outbox', `/admin/outbox?status=dead&topic=${topic}`],
      ] as const) {
        await page.goto(`${await browser.origin}${path}`);
        await page.locator('main h1').waitFor();
        await page.locator('#sign-in').waitFor({ state: 'detached' });
        const scrollWidth = await page.evaluate(
          () => (globalThis as unknown as BrowserGlobal).document.documentElement.scrollWidth,
        );
        expect(scrollWidth, `${name} at ${width} px`).toBeLessThanOrEqual(width);
        await page.screenshot({ path: `${ARTIFACTS}/bulk-${name}-${width}.png`, fullPage: true });
      }
      await page.close();
    }
  });
});
