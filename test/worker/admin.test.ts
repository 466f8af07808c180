// The admin surface from the Worker entry inside workerd: the same bearer gate, JSON API, OpenAPI
// document and server-rendered dashboard as on Node, over Hyperdrive.
import { createExecutionContext, waitOnExecutionContext } from 'cloudflare:test';
import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import worker from '../../src/entry/worker.ts';

const TOKEN = 'worker-admin-token-0123456789';
const bindings = { ...env, ADMIN_TOKEN: TOKEN, LOG_LEVEL: 'silent' } as Env;

async function fetchAdmin(path: string, headers: Record<string, string> = { authorization: `Bearer ${TOKEN}` }) {
  const ctx = createExecutionContext();
  const response = await worker.fetch(new Request(`https://inbox.test${path}`, { headers }), bindings, ctx);
  await waitOnExecutionContext(ctx);
  return response;
}

describe('admin on Workers', () => {
  it('serves stats and the OpenAPI document behind the bearer token', async () => {
    const stats = await fetchAdmin('/admin/api/stats');
    expect(stats.status).toBe(200);
    expect(await stats.json()).toMatchObject({ events: expect.any(Object), outbox: expect.any(Object) });
    const document = await fetchAdmin('/admin/api/openapi.json');
    expect(((await document.json()) as { openapi: string }).openapi).toBe('3.1.0');
    const refused = await fetchAdmin('/admin/api/stats', {});
    expect(refused.status).toBe(401);
    expect(await refused.json()).toEqual({ error: 'unauthorized' });
  });

  it('renders the dashboard: the overview with its charts, and the events list', async () => {
    const page = await fetchAdmin('/admin');
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain('<h1 tabindex="-1">Overview</h1>');
    expect(html.match(/<svg [^>]*class="chart"/g)?.length).toBe(5);
    const events = await fetchAdmin('/admin/events?status=failed');
    expect(events.status).toBe(200);
    expect(await events.text()).toContain('aria-label="filters"');
    expect((await fetchAdmin('/admin/events?sinse=1h')).status).toBe(400);
  });
});
