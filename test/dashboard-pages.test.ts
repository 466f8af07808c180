// The dashboard's pages as served HTML (no browser): what their legends and filters offer.
import { describe, expect, it } from 'vitest';
import { enableSenders } from '../src/senders/registry.ts';
import { buildTestApp } from './helpers/app.ts';
import { useTestDatabase } from './helpers/database.ts';

const { db } = await useTestDatabase();
const TOKEN = 'dashboard-pages-token-0123456789';
const test = await buildTestApp(db, {
  config: { ADMIN_TOKEN: TOKEN },
  enabledSenders: await enableSenders({ acme: ['acme-secret-for-pages'], github: ['github-secret-for-pages'] }),
});
const html = async (path: string) =>
  (await test.request(path, { headers: { authorization: `Bearer ${TOKEN}` } })).text();

/** The text between `open` and the next `close` after it. */
const within = (page: string, open: string, close: string) => {
  const at = page.indexOf(open);
  return at === -1 ? '' : page.slice(at, page.indexOf(close, at));
};

describe('the overview page', () => {
  it('names event statuses in its legend: the waiting ones as "received or processing", never "pending"', async () => {
    const legend = within(await html('/admin'), '<ul class="legend">', '</ul>');
    expect(legend).toContain('received or processing');
    expect(legend).toContain('dead_letter');
    expect(legend).not.toMatch(/>\s*pending\s*</);
  });
});

describe('the events page', () => {
  const providerOptions = async (query = '') =>
    [
      ...within(await html(`/admin/events${query}`), '<select name="provider"', '</select>').matchAll(
        /<option value="([^"]*)"/g,
      ),
    ]
      .map((match) => match[1])
      .filter((value) => value !== '');

  it('offers the enabled senders as the provider filter, not every sender the service knows', async () => {
    expect(await providerOptions()).toEqual(['acme', 'github']);
  });

  it('keeps a filter already set to a sender no longer enabled, selected', async () => {
    expect(await providerOptions('?provider=stripe')).toEqual(['acme', 'github', 'stripe']);
    expect(within(await html('/admin/events?provider=stripe'), '<select name="provider"', '</select>')).toMatch(
      /<option value="stripe" selected/,
    );
  });
});

describe('a refused filter', () => {
  it('says an unknown parameter is no filter of the page, and a bad value is a bad value', async () => {
    const unknown = await test.request('/admin/events?colour=red', { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(unknown.status).toBe(400);
    expect(await unknown.text()).toContain('This page has no filter named <strong>colour</strong>.');
    const bad = await html('/admin/events?status=nonsense');
    expect(bad).toContain('The value of <strong>status</strong> is not one this page accepts.');
  });
});
