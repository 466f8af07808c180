// The outbox's destinations as operators see them (issue 27 part 4), against real PostgreSQL: the
// admin API's list (states from outbox_destinations, a missing row healthy; backlog from the
// counters; rate; filters; a redacted target), the outbox list's destination filter and column, a
// message's per-destination outcomes, the CLI (`destinations list`, `outbox list --destination`),
// /metrics' per-destination series (configured names only), and the dashboard's Destinations page,
// overview panel and message page, in headless chromium at 1280 and 390 px. The pause and resume
// routes belong to the relay's side: here only the buttons' targets and fields are checked.
// Needs a process: headless Chromium renders the destinations page.
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../src/config.ts';
import { createLogger } from '../src/lib/logger.ts';
import { bulkRunnerFor } from '../src/ops/maintenance/drainers.ts';
import { destinationGauges } from '../src/ops/reads/destinations-view.ts';
import { defaultGaugeSources } from '../src/ops/routes/metrics.ts';
import { parseDestinations } from '../src/outbox/destinations.ts';
import { uniqueId } from './helpers/acme.ts';
import { buildTestApp } from './helpers/app.ts';
import { ARTIFACTS, type BrowserGlobal, hasChromium, useBrowser } from './helpers/browser.ts';
import { runCli } from './helpers/cli.ts';
import { useTestDatabase } from './helpers/database.ts';
import { insertEvent } from './helpers/events.ts';

const { sql, db, url } = await useTestDatabase();
const TOKEN = 'destinations-token-for-tests-0123456789';
const bearer = { authorization: `Bearer ${TOKEN}` };

/** Credentials and query secrets in the targets: none may appear in any answer, output or page. */
const SECRETS = [
  'hunter2-http-password',
  'T0KEN-IN-PATH',
  'sekrit-query-value',
  'natsuser-name',
  'nats-password-secret',
  'redis-password-secret',
  'amqp-password-secret',
];
const CONFIG = {
  OUTBOX_TARGET_URL: `https://webhook:${SECRETS[0]}@hooks.example.com/services/${SECRETS[1]}?token=${SECRETS[2]}`,
  OUTBOX_DESTINATIONS: JSON.stringify([
    {
      name: 'orders',
      url: `nats://${SECRETS[3]}:${SECRETS[4]}@127.0.0.1:4222?stream=ORDERS`,
      topics: ['subscription.*'],
    },
    { name: 'audit', url: `redis://:${SECRETS[5]}@127.0.0.1:6379/0?stream=audit-log`, senders: ['acme'] },
    { name: 'ledger', url: `amqp://guest:${SECRETS[6]}@127.0.0.1:5672/books?exchange=ledger`, types: ['invoice.*'] },
    { name: 'edge', url: 'queue:OUTBOX_QUEUE' },
  ]),
};
const routing = parseDestinations(CONFIG);
const test = await buildTestApp(db, {
  config: { ADMIN_TOKEN: TOKEN },
  outboxRouting: routing,
  gaugeSources: [...defaultGaugeSources, destinationGauges(routing)],
});
// Rows are written at the database's now(): the app's clock must agree for the rate's window.
test.setNow(Date.now());

function expectNoSecret(text: string, where: string) {
  for (const secret of SECRETS) expect(text, `${where} shows ${secret}`).not.toContain(secret);
}

interface Row {
  key: string;
  destination: string;
  status?: 'pending' | 'published' | 'dead';
  attempts?: number;
  lastError?: string | null;
  /** Seconds before now. */
  createdAgo?: number;
  publishedAgo?: number;
  topic?: string;
}

/** Rows written as the enqueue writes them (one per destination), so the counters' triggers count them. */
async function insertRows(rows: readonly Row[]): Promise<string[]> {
  const ids: string[] = [];
  for (const row of rows) {
    const id = randomUUID();
    ids.push(id);
    await sql`insert into outbox_messages (id, topic, deduplication_key, payload, status, attempts, last_error,
        destination, created_at, available_at, published_at)
      values (${id}, ${row.topic ?? 'subscription.changed'}, ${row.key}, ${sql.json({ n: 1 })}, ${row.status ?? 'pending'},
        ${row.attempts ?? 0}, ${row.lastError ?? null}, ${row.destination},
        now() - ${row.createdAgo ?? 120} * interval '1 second', now() - ${row.createdAgo ?? 120} * interval '1 second',
        ${row.publishedAgo === undefined ? null : sql`now() - ${row.publishedAgo} * interval '1 second'`})`;
  }
  return ids;
}

// The states: orders open, audit half_open, ledger paused (its circuit open too: the pause wins),
// edge closed with a row, default without a row; `removed` is a row no configuration names.
await sql`insert into outbox_destinations (name, circuit, consecutive_failures, opened_at, probe_at, paused_at, paused_by)
  values
    ('orders', 'open', 5, now() - interval '2 minutes', now() + interval '1 minute', null, null),
    ('audit', 'half_open', 3, now() - interval '5 minutes', now(), null, null),
    ('ledger', 'open', 2, now() - interval '1 minute', now() + interval '1 minute', now() - interval '30 seconds', 'ann'),
    ('edge', 'closed', 0, null, null, null, null),
    ('removed', 'open', 9, now(), now(), null, null)`;

const base = `acme:${uniqueId('evt_fan')}:subscription.changed`;
const [defaultId, ordersId, auditId] = (await insertRows([
  { key: base, destination: 'default', status: 'published', publishedAgo: 60 },
  { key: `${base}@orders`, destination: 'orders', status: 'dead', attempts: 7, lastError: 'nats: stream not found' },
  { key: `${base}@audit`, destination: 'audit', status: 'pending', attempts: 2, lastError: 'redis: timeout' },
  // Its key starts with the base key: not a sibling.
  { key: `${base}x`, destination: 'default', topic: 'subscription.changedx' },
])) as [string, string, string, string];
// Backlog and rate: orders 3 pending (+1 dead above); audit 10 published in the last minute, 2 long ago.
await insertRows([
  ...Array.from({ length: 3 }, (_, i) => ({ key: `acme:${uniqueId('evt_o')}_${i}:x@orders`, destination: 'orders' })),
  ...Array.from({ length: 10 }, (_, i) => ({
    key: `acme:${uniqueId('evt_a')}_${i}:x@audit`,
    destination: 'audit',
    status: 'published' as const,
    createdAgo: 90,
    publishedAgo: 50,
  })),
  ...Array.from({ length: 2 }, (_, i) => ({
    key: `acme:${uniqueId('evt_b')}_${i}:x@audit`,
    destination: 'audit',
    status: 'published' as const,
    createdAgo: 1200,
    publishedAgo: 1100,
  })),
]);

interface DestinationAnswer {
  name: string;
  kind: string;
  target: Record<string, unknown>;
  filters: Record<string, unknown>;
  state: string;
  circuit: string;
  consecutive_failures: number;
  paused_by: string | null;
  paused_at: string | null;
  backlog: { pending: number; dead: number };
  published_per_minute: number;
}

const getJson = async (path: string) => {
  const response = await test.request(path, { headers: bearer });
  return { status: response.status, text: await response.text() };
};

describe('GET /admin/api/destinations', () => {
  it('lists the configured destinations in order with their states, backlog, rate, filters and redacted targets', async () => {
    const { status, text } = await getJson('/admin/api/destinations');
    expect(status).toBe(200);
    expectNoSecret(text, 'the API');
    const { destinations } = JSON.parse(text) as { destinations: DestinationAnswer[] };
    expect(destinations.map((destination) => destination.name)).toEqual([
      'default',
      'orders',
      'audit',
      'ledger',
      'edge',
    ]);
    const byName = Object.fromEntries(destinations.map((destination) => [destination.name, destination]));
    expect(byName.default).toMatchObject({
      kind: 'http',
      target: { scheme: 'https', host: 'hooks.example.com' },
      filters: { topics: null, senders: null, types: null },
      state: 'healthy',
      circuit: 'closed',
      consecutive_failures: 0,
      paused_at: null,
    });
    expect(byName.orders).toMatchObject({
      kind: 'nats',
      target: { scheme: 'nats', host: '127.0.0.1:4222', stream: 'ORDERS' },
      filters: { topics: ['subscription.*'], senders: null, types: null },
      state: 'open',
      consecutive_failures: 5,
      backlog: { pending: 3, dead: 1 },
    });
    expect(byName.audit).toMatchObject({
      kind: 'redis',
      target: { scheme: 'redis', host: '127.0.0.1:6379', stream: 'audit-log' },
      state: 'half_open',
      backlog: { pending: 1, dead: 0 },
      // 10 published 50 s ago over 5 minutes; the 2 published 1,100 s ago are outside the window.
      published_per_minute: 2,
    });
    expect(byName.ledger).toMatchObject({
      kind: 'amqp',
      target: { scheme: 'amqp', host: '127.0.0.1:5672', exchange: 'ledger' },
      state: 'paused',
      circuit: 'open',
      paused_by: 'ann',
    });
    expect(byName.edge).toMatchObject({ kind: 'queue', target: { scheme: 'queue', binding: 'OUTBOX_QUEUE' } });
    expect(byName.edge?.state).toBe('healthy');
    expect(text).not.toContain('removed');
  });

  it('is in the OpenAPI document, and behind the bearer token', async () => {
    const { text } = await getJson('/admin/api/openapi.json');
    const document = JSON.parse(text) as { paths: Record<string, { get?: { parameters?: Array<{ name: string }> } }> };
    expect(document.paths['/admin/api/destinations']?.get).toBeDefined();
    const outboxParameters = document.paths['/admin/api/outbox']?.get?.parameters?.map((parameter) => parameter.name);
    expect(outboxParameters).toContain('destination');
    expect((await test.request('/admin/api/destinations', {})).status).toBe(401);
  });
});

describe('the outbox by destination', () => {
  it('filters the list by a configured destination, shows each row’s destination, refuses another name', async () => {
    const { status, text } = await getJson('/admin/api/outbox?destination=orders&limit=100');
    expect(status).toBe(200);
    const { messages, counts } = JSON.parse(text) as {
      messages: Array<{ id: string; destination: string }>;
      counts: Record<string, number>;
    };
    expect(messages).toHaveLength(4);
    // From the counters by destination: exact.
    expect(counts).toEqual({ pending: 3, dead: 1 });
    expect(new Set(messages.map((message) => message.destination))).toEqual(new Set(['orders']));
    expect(messages.map((message) => message.id)).toContain(ordersId);

    for (const name of ['removed', 'nope']) {
      const refused = await getJson(`/admin/api/outbox?destination=${name}`);
      expect(refused.status).toBe(400);
      expect(JSON.parse(refused.text)).toMatchObject({ error: 'invalid_request', field: 'destination' });
    }
  });

  it("answers a message with its rows for every destination: each one's outcome", async () => {
    for (const id of [defaultId, ordersId, auditId]) {
      const { status, text } = await getJson(`/admin/api/outbox/${id}`);
      expect(status).toBe(200);
      const answer = JSON.parse(text) as { message: { id: string }; destinations: unknown[] };
      expect(answer.message.id).toBe(id);
      expect(answer.destinations).toEqual([
        {
          destination: 'audit',
          id: auditId,
          status: 'pending',
          attempts: 2,
          last_error: 'redis: timeout',
          published_at: null,
        },
        {
          destination: 'default',
          id: defaultId,
          status: 'published',
          attempts: 0,
          last_error: null,
          published_at: expect.any(String),
        },
        {
          destination: 'orders',
          id: ordersId,
          status: 'dead',
          attempts: 7,
          last_error: 'nats: stream not found',
          published_at: null,
        },
      ]);
    }
  });
});

describe("an event's messages", () => {
  it('include its rows for every destination, each naming its destination', async () => {
    const { eventId } = await insertEvent(sql, { status: 'completed' });
    const key = `acme:${eventId}:subscription.changed`;
    const ids = await insertRows([
      { key, destination: 'default' },
      { key: `${key}@orders`, destination: 'orders' },
    ]);
    const { status, text } = await getJson(`/admin/api/events/acme/${eventId}`);
    expect(status).toBe(200);
    const { messages } = JSON.parse(text) as { messages: Array<{ id: string; destination: string }> };
    expect(messages.map(({ id, destination }) => ({ id, destination }))).toEqual([
      { id: ids[0], destination: 'default' },
      { id: ids[1], destination: 'orders' },
    ]);
    // Back to what the other tests count: these rows are not part of their figures.
    await sql`delete from outbox_messages where id in ${sql(ids)}`;
  });
});

describe('the CLI', () => {
  const env = { DATABASE_URL: url, ...CONFIG };

  it('destinations list: a table and --json (the API’s shape), without any secret', async () => {
    const table = await runCli(['destinations', 'list'], env);
    expect(table.code).toBe(0);
    expectNoSecret(table.output, 'the table');
    const lines = table.output.trim().split('\n');
    expect(lines[0]).toMatch(/^name\s+state\s+pending\s+dead\s+per_minute\s+paused_by\s+target$/);
    expect(lines.find((line) => line.startsWith('orders '))).toMatch(
      /^orders\s+open\s+3\s+1\s+0\s+nats:\/\/127\.0\.0\.1:4222 stream ORDERS$/,
    );
    expect(lines.find((line) => line.startsWith('ledger '))).toMatch(
      /^ledger\s+paused\s+0\s+0\s+0\s+ann\s+amqp:\/\/127/,
    );
    expect(lines.find((line) => line.startsWith('default '))).toMatch(/healthy.*https:\/\/hooks\.example\.com$/);

    const json = await runCli(['destinations', 'list', '--json'], env);
    expect(json.code).toBe(0);
    expectNoSecret(json.output, 'the JSON');
    const api = JSON.parse((await getJson('/admin/api/destinations')).text) as { destinations: unknown[] };
    expect(JSON.parse(json.output)).toEqual(api.destinations);
  });

  it('outbox list --destination: that destination’s rows only, with the column; another name is a usage error', async () => {
    const listed = await runCli(['outbox', 'list', '--destination', 'audit', '--json', '--limit', '100'], env);
    expect(listed.code).toBe(0);
    const rows = JSON.parse(listed.output) as Array<{ destination: string }>;
    expect(rows).toHaveLength(13);
    expect(new Set(rows.map((row) => row.destination))).toEqual(new Set(['audit']));
    const table = await runCli(['outbox', 'list', '--destination', 'orders'], env);
    expect(table.output.split('\n')[0]).toContain('destination');
    expect(table.output).toContain(ordersId);

    const refused = await runCli(['outbox', 'list', '--destination', 'removed'], env);
    expect(refused.code).toBe(2);
    expect(refused.output).toContain('not a configured destination');
  });
});

describe('/metrics', () => {
  it('has per-destination backlog, circuit and pause series for configured names only', async () => {
    const text = await (await test.request('/metrics', {})).text();
    const sample = (series: string) => {
      const line = text.split('\n').find((candidate) => candidate.startsWith(`${series} `));
      return line === undefined ? undefined : Number(line.slice(series.length + 1));
    };
    expect(sample('webhook_outbox_destination_backlog{destination="orders",status="pending"}')).toBe(3);
    expect(sample('webhook_outbox_destination_backlog{destination="orders",status="dead"}')).toBe(1);
    expect(sample('webhook_outbox_destination_backlog{destination="edge",status="pending"}')).toBe(0);
    expect(sample('webhook_outbox_destination_circuit{destination="orders",state="open"}')).toBe(1);
    expect(sample('webhook_outbox_destination_circuit{destination="orders",state="closed"}')).toBe(0);
    expect(sample('webhook_outbox_destination_circuit{destination="audit",state="half_open"}')).toBe(1);
    expect(sample('webhook_outbox_destination_circuit{destination="default",state="closed"}')).toBe(1);
    expect(sample('webhook_outbox_destination_paused{destination="ledger"}')).toBe(1);
    expect(sample('webhook_outbox_destination_paused{destination="orders"}')).toBe(0);
    const labelled = [...text.matchAll(/destination="([^"]*)"/g)].map((match) => match[1]);
    expect(new Set(labelled)).toEqual(new Set(['default', 'orders', 'audit', 'ledger', 'edge']));
    expectNoSecret(text, '/metrics');
  });
});

describe('the dashboard through app.request', () => {
  it('the Destinations page: every configured destination, its badge, figures, and Pause or Resume forms', async () => {
    const { status, text } = await getJson('/admin/destinations');
    expect(status).toBe(200);
    expectNoSecret(text, 'the page');
    expect(text).toContain('<a href="/admin/destinations" aria-current="page">Destinations</a>');
    expect(text).not.toContain('data-destination="removed"');
    for (const [name, state] of [
      ['default', 'healthy'],
      ['orders', 'open'],
      ['audit', 'half_open'],
      ['ledger', 'paused'],
      ['edge', 'healthy'],
    ]) {
      expect(text).toContain(`data-destination="${name}"`);
      const card = text.slice(text.indexOf(`data-destination="${name}"`)).split('data-destination=')[1] ?? '';
      expect(card).toContain(`<span class="status d-${state}">${state}</span>`);
      if (state === 'paused') {
        expect(card).toContain(
          `data-action="/admin/api/destinations/${name}/resume" data-target="${name}" data-kind="destination-resume"`,
        );
        expect(card).not.toContain('/pause"');
      } else {
        expect(card).toContain(`data-action="/admin/api/destinations/${name}/pause"`);
        expect(card).toContain('data-kind="destination-pause"');
        expect(card).toContain(`data-confirm="Pause ${name}?`);
        expect(card).toContain('<input name="note"');
      }
    }
    const orders = text.slice(text.indexOf('data-destination="orders"'));
    expect(orders).toContain('<span data-figure="pending">3</span>');
    expect(orders).toContain('<a href="/admin/outbox?destination=orders&amp;status=pending">');
    expect(orders).toContain('nats://127.0.0.1:4222 stream ORDERS');
  });

  it('the overview shows the destinations that are not healthy', async () => {
    const { text } = await getJson('/admin');
    const panel = text.slice(
      text.indexOf('id="unhealthy-destinations"'),
      text.indexOf('</section>', text.indexOf('id="unhealthy-destinations"')),
    );
    expect(panel).toContain('Destinations not healthy: 3');
    for (const name of ['orders', 'audit', 'ledger']) expect(panel).toContain(`data-destination="${name}"`);
    for (const name of ['default', 'edge']) expect(panel).not.toContain(`data-destination="${name}"`);
    expect(panel).toContain('data-action="/admin/api/destinations/ledger/resume"');
  });

  it('the outbox list filters by destination (a select of configured names) and refuses another', async () => {
    const { status, text } = await getJson('/admin/outbox?destination=orders');
    expect(status).toBe(200);
    expect(text).toContain('<option value="orders" selected="">orders</option>');
    expect(text).not.toContain('<option value="removed"');
    expect(text).toContain(`data-message="${ordersId}"`);
    expect(text).not.toContain(`data-message="${auditId}"`);
    expect((await getJson('/admin/outbox?destination=removed')).status).toBe(400);
  });

  it("a message's page lists every destination's outcome", async () => {
    const { text } = await getJson(`/admin/outbox/${ordersId}`);
    for (const name of ['default', 'orders', 'audit']) expect(text).toContain(`data-outcome="${name}"`);
    expect(text).toContain(`<a href="/admin/outbox/${auditId}">audit</a>`);
    expect(text).toContain('nats: stream not found');
  });
});

describe.skipIf(!hasChromium)('the dashboard in headless chromium', () => {
  const browser = useBrowser(test.app);

  it('shows the Destinations page, the overview panel and a message’s outcomes at 1280 and 390 px', async () => {
    for (const width of [1280, 390]) {
      const page = await browser.signedIn(TOKEN, width, width === 390 ? 844 : 900);
      await page.click('header nav a:has-text("Destinations")');
      await page.locator('h1', { hasText: 'Destinations' }).waitFor();
      expect(await page.locator('[data-destination]').count()).toBe(5);
      expect(await page.locator('[data-destination="orders"] .status').textContent()).toBe('open');
      const badge = await page
        .locator('[data-destination="ledger"] .status')
        .evaluate(
          (element) =>
            (
              globalThis as unknown as { getComputedStyle(node: unknown): { backgroundColor: string } }
            ).getComputedStyle(element).backgroundColor,
        );
      expect(badge).toBe('rgb(97, 97, 97)');
      const pause = page.locator('[data-destination="orders"] form[data-kind="destination-pause"]');
      expect(await pause.getAttribute('data-action')).toBe('/admin/api/destinations/orders/pause');
      expect(await pause.locator('input[name="note"]').count()).toBe(1);
      expect(
        await page.evaluate(() => (globalThis as unknown as BrowserGlobal).document.documentElement.scrollWidth),
      ).toBeLessThanOrEqual(width);
      if (width === 390) {
        expect(await page.locator('header').evaluate((header) => header.getBoundingClientRect().height)).toBeLessThan(
          100,
        );
      }
      expectNoSecret(await page.content(), 'the page in the browser');
      await page.screenshot({ path: `${ARTIFACTS}/destinations-${width}.png`, fullPage: true });

      await page.goto(`${await browser.origin}/admin`);
      await page.locator('#unhealthy-destinations').waitFor();
      await page.screenshot({ path: `${ARTIFACTS}/destinations-overview-${width}.png` });

      await page.goto(`${await browser.origin}/admin/outbox/${ordersId}`);
      await page.locator('tr[data-outcome="audit"]').waitFor();
      expect(
        await page.evaluate(() => (globalThis as unknown as BrowserGlobal).document.documentElement.scrollWidth),
      ).toBeLessThanOrEqual(width);
      await page.screenshot({ path: `${ARTIFACTS}/destinations-message-${width}.png`, fullPage: true });

      await page.goto(`${await browser.origin}/admin/outbox?destination=audit`);
      await page.locator('tr[data-message]').first().waitFor();
      expect(await page.locator('tr[data-message] td.destination').allTextContents()).toContain('audit');
      await page.screenshot({ path: `${ARTIFACTS}/destinations-outbox-${width}.png` });
      await page.close();
    }
  });

  it('pauses and resumes a destination from its page, after a confirmation, audited', async () => {
    const page = await browser.signedIn(TOKEN);
    await page.goto(`${await browser.origin}/admin/destinations`);
    await page.locator('h1', { hasText: 'Destinations' }).waitFor();
    await page.fill('#operator', 'ada');
    const edge = page.locator('[data-destination="edge"]');
    await edge.locator('input[name="note"]').fill('consumer redeploying');
    const confirmations: string[] = [];
    page.once('dialog', (dialog) => {
      confirmations.push(dialog.message());
      void dialog.accept();
    });
    await edge.locator('button', { hasText: 'Pause edge' }).click();
    await page.locator('#notice.ok', { hasText: 'edge: paused' }).waitFor();
    expect(confirmations).toEqual([expect.stringContaining('Pause edge?')]);
    const state = async () =>
      (await sql`select paused_by, paused_at is not null as paused from outbox_destinations where name = 'edge'`)[0];
    expect(await state()).toEqual({ paused_by: 'ada', paused: true });

    await page.reload();
    await page.locator('[data-destination="edge"] .status', { hasText: 'paused' }).waitFor();
    await page.locator('[data-destination="edge"] button', { hasText: 'Resume edge' }).click();
    await page.locator('#notice.ok', { hasText: 'edge: resumed' }).waitFor();
    expect(await state()).toEqual({ paused_by: null, paused: false });
    const audit = await sql`select operator, action, before_status, after_status, detail from operator_actions
      where target_kind = 'destination' and target = 'edge' order by at`;
    expect(audit).toMatchObject([
      {
        operator: 'ada',
        action: 'pause',
        before_status: 'active',
        after_status: 'paused',
        detail: { note: 'consumer redeploying' },
      },
      { operator: 'ada', action: 'resume', before_status: 'paused', after_status: 'active' },
    ]);
    await page.close();
  });
});

describe('a bulk retry by destination', () => {
  it('retries the dead rows of that destination only, and refuses a name the configuration does not have', async () => {
    const [edgeDead] = (await insertRows([
      { key: `acme:${uniqueId('evt_e')}:x@edge`, destination: 'edge', status: 'dead', attempts: 3 },
    ])) as [string];
    const post = (filter: Record<string, string>) =>
      test.request('/admin/api/jobs', {
        method: 'POST',
        headers: { ...bearer, 'content-type': 'application/json' },
        body: JSON.stringify({ kind: 'retry_outbox', filter, operator: 'ann' }),
      });
    const refused = await post({ destination: 'removed' });
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({ error: 'invalid_request', field: 'filter.destination' });
    expect(await sql`select id from bulk_jobs`).toHaveLength(0);

    const created = await post({ destination: 'orders' });
    expect(created.status).toBe(202);
    expect(await created.json()).toMatchObject({
      count: 1,
      job: { filter: { destination: 'orders', status: 'dead' } },
    });
    const logger = createLogger({ level: 'silent', now: () => new Date(), write: () => {} });
    await bulkRunnerFor({ config: parseConfig({}), db, clock: Date.now, logger, newId: () => uniqueId('r') }).run({
      budgetMs: 60_000,
    });
    const statuses = await sql<{ id: string; status: string }[]>`select id::text as id, status::text as status
      from outbox_messages where id in ${sql([ordersId, edgeDead])}`;
    expect(Object.fromEntries(statuses.map((row) => [row.id, row.status]))).toEqual({
      [ordersId]: 'pending',
      [edgeDead]: 'dead',
    });
  });
});
