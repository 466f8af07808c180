// Pausing a sender: a paused sender's deliveries are refused with 503 + Retry-After before anything is
// verified or stored, other senders go on, and after the resume the same deliveries (the sender's
// retries) are applied; every pause and resume is audited with its detail; a pause with an end stops
// by itself (the clock moves, nothing sleeps) and the maintenance step audits that, and a new pause
// after it audits the sender as found active; a pause made by another process reaches this one within
// the cache's TTL, and pauses that cannot be read pause nobody; the admin API's refusals; the CLI's verbs.
// Real PostgreSQL throughout.
// Needs a process: headless Chromium renders the senders page.
import { mkdirSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { connectDatabase } from '../src/db/client.ts';
import { PAUSE_CHECK_TTL_MS, senderPauseGate } from '../src/inbox/pause-gate.ts';
import { pauseExpiry } from '../src/ops/maintenance/background-steps.ts';
import { enableSenders } from '../src/senders/registry.ts';
import { type AcmeEventShape, acmeEvent, signedHeaders, TEST_NOW_MS, TEST_SECRET } from './helpers/acme.ts';
import { buildTestApp, type TestApp } from './helpers/app.ts';
import { ARTIFACTS, hasChromium, launchChromium, openPage, serveLocally } from './helpers/browser.ts';
import { runCli } from './helpers/cli.ts';
import { useTestDatabase } from './helpers/database.ts';
import { eventRow, subscriptionRow } from './helpers/facts.ts';
import { githubSender, shopifySender } from './helpers/senders.ts';
import { cronParts } from './helpers/step-parts.ts';

const { sql, db, url } = await useTestDatabase();
const TOKEN = 'pause-token-for-tests-0123456789';
const bearer = { authorization: `Bearer ${TOKEN}` };
const enabledSenders = await enableSenders({
  acme: [TEST_SECRET],
  shopify: [...shopifySender.secrets],
  github: [...githubSender.secrets],
});

/** An app of its own (its own pause cache), with its own clock starting at TEST_NOW_MS. */
async function newApp(
  config: { PROCESSING_MODE?: 'sync' | 'async' } = {},
): Promise<TestApp & { now(): number; advance(ms: number): void }> {
  const app = await buildTestApp(db, { config: { ADMIN_TOKEN: TOKEN, ...config }, enabledSenders });
  let now = TEST_NOW_MS;
  return {
    ...app,
    now: () => now,
    advance(ms) {
      now += ms;
      app.setNow(now);
    },
  };
}

type App = Awaited<ReturnType<typeof newApp>>;

/** An acme delivery of `event`, signed at the app's now: what the sender sends, and sends again. */
async function deliverAcme(app: App, event: AcmeEventShape, secret = TEST_SECRET): Promise<Response> {
  const body = JSON.stringify(event);
  const headers = await signedHeaders(body, { secret, timestamp: Math.floor(app.now() / 1000) });
  return app.request('/webhooks/acme', { method: 'POST', body, headers });
}

async function deliverShopify(app: App): Promise<{ response: Response; eventId: string }> {
  const delivery = shopifySender.newEvent();
  const headers = await shopifySender.headers(delivery);
  const response = await app.request('/webhooks/shopify', { method: 'POST', body: delivery.body, headers });
  return { response, eventId: delivery.eventId };
}

async function api(app: App, method: 'GET' | 'POST', path: string, body?: unknown) {
  const response = await app.request(`/admin/api${path}`, {
    method,
    headers: { ...bearer, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  expect(response.headers.get('content-type')).toMatch(/^application\/json/);
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

interface AuditRow {
  operator: string;
  action: string;
  target_kind: string;
  before_status: string;
  after_status: string;
  at: Date;
  detail: unknown;
}

const auditRows = (provider: string) =>
  sql<AuditRow[]>`select operator, action, target_kind::text as target_kind, before_status, after_status, at, detail
    from operator_actions where target_kind = 'sender' and target = ${provider} order by at, action = 'resume'`;

interface PauseRow {
  provider: string;
  paused_by: string;
  paused_at: Date;
  until: Date | null;
  note: string | null;
}

const pauseRows = () =>
  sql<PauseRow[]>`select provider, paused_by, paused_at, until, note from sender_pauses order by provider`;

async function clearPauses() {
  await sql`delete from sender_pauses`;
  await sql`delete from operator_actions where target_kind = 'sender'`;
}

describe('a paused sender', () => {
  it('is refused 503 + Retry-After, stores nothing, leaves other senders alone; after resume its retries are applied', async () => {
    await clearPauses();
    const app = await newApp();
    const paused = await api(app, 'POST', '/senders/acme/pause', {
      operator: 'ada',
      minutes: 90,
      note: 'shopify migration, hold it',
    });
    expect(paused).toMatchObject({
      status: 200,
      body: {
        before: 'active',
        sender: {
          provider: 'acme',
          status: 'paused',
          pause: {
            paused_by: 'ada',
            paused_at: new Date(TEST_NOW_MS).toISOString(),
            until: new Date(TEST_NOW_MS + 90 * 60_000).toISOString(),
            note: 'shopify migration, hold it',
          },
        },
      },
    });
    app.advance(PAUSE_CHECK_TTL_MS);

    const events = [acmeEvent(), acmeEvent({ type: 'subscription.created' }), acmeEvent()];
    for (const event of events) {
      const refused = await deliverAcme(app, event);
      expect(refused.status).toBe(503);
      expect(await refused.json()).toEqual({ error: 'unavailable' });
      // 89 minutes are left: capped at an hour.
      expect(refused.headers.get('retry-after')).toBe('3600');
      expect(await eventRow(sql, event.id)).toBeUndefined();
    }
    // Refused before its signature is checked: a flood costs no verification.
    const unsigned = await deliverAcme(app, acmeEvent(), 'not-the-secret-at-all');
    expect(unsigned.status).toBe(503);
    expect(app.logs.some((line) => line.includes('"reason":"sender_paused"'))).toBe(true);
    const metrics = await (await app.request('/metrics', {})).text();
    expect(metrics).toContain('webhook_rejections_total{provider="acme",reason="unavailable"} 4');

    const other = await deliverShopify(app);
    expect(other.response.status).toBe(200);
    expect(await eventRow(sql, other.eventId, 'shopify')).toMatchObject({ status: 'ignored' });

    const listed = await api(app, 'GET', '/senders');
    expect(listed.body.senders).toEqual([
      { provider: 'acme', status: 'paused', pause: expect.objectContaining({ paused_by: 'ada' }) },
      { provider: 'github', status: 'active', pause: null },
      { provider: 'shopify', status: 'active', pause: null },
    ]);

    const resumed = await api(app, 'POST', '/senders/acme/resume', { operator: 'grace' });
    expect(resumed).toEqual({
      status: 200,
      body: { resumed: true, sender: { provider: 'acme', status: 'active', pause: null } },
    });
    expect(await pauseRows()).toEqual([]);
    app.advance(PAUSE_CHECK_TTL_MS);

    // The sender's retries: the same events, signed again.
    for (const event of events) {
      expect((await deliverAcme(app, event)).status).toBe(200);
      expect(await eventRow(sql, event.id)).toMatchObject({ status: 'completed' });
      expect(await subscriptionRow(sql, String(event.data.id))).toMatchObject({ status: 'active' });
    }

    const audit = await auditRows('acme');
    expect(audit).toEqual([
      expect.objectContaining({
        operator: 'ada',
        action: 'pause',
        target_kind: 'sender',
        before_status: 'active',
        after_status: 'paused',
        detail: { until: new Date(TEST_NOW_MS + 90 * 60_000).toISOString(), note: 'shopify migration, hold it' },
      }),
      expect.objectContaining({
        operator: 'grace',
        action: 'resume',
        before_status: 'paused',
        after_status: 'active',
        detail: { until: new Date(TEST_NOW_MS + 90 * 60_000).toISOString(), note: 'shopify migration, hold it' },
      }),
    ]);
  });

  it('asks for a retry after the time left, or after 300 s when the pause has no end; a new pause replaces it', async () => {
    await clearPauses();
    const app = await newApp();
    expect((await api(app, 'POST', '/senders/acme/pause', { operator: 'ada' })).body).toMatchObject({
      before: 'active',
      sender: { pause: { until: null, note: null } },
    });
    app.advance(PAUSE_CHECK_TTL_MS);
    expect((await deliverAcme(app, acmeEvent())).headers.get('retry-after')).toBe('300');

    const until = new Date(app.now() + 10_500).toISOString();
    const replaced = await api(app, 'POST', '/senders/acme/pause', { operator: 'grace', until, note: 'ten seconds' });
    expect(replaced.body).toMatchObject({
      before: 'paused',
      sender: { pause: { paused_by: 'grace', until, note: 'ten seconds' } },
    });
    // It was paused since the first pause, which it replaces.
    const [row] = await pauseRows();
    expect(row?.paused_at).toEqual(new Date(TEST_NOW_MS));
    app.advance(PAUSE_CHECK_TTL_MS);
    const refused = await deliverAcme(app, acmeEvent());
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('10');
    expect((await auditRows('acme')).map((audit) => [audit.action, audit.before_status, audit.after_status])).toEqual([
      ['pause', 'active', 'paused'],
      ['pause', 'paused', 'paused'],
    ]);
  });

  it('ends by itself at its end; the maintenance step deletes it and audits the resume as system', async () => {
    await clearPauses();
    const app = await newApp();
    const pausedAt = app.now();
    await api(app, 'POST', '/senders/acme/pause', { operator: 'ada', minutes: 1, note: 'one minute' });
    app.advance(PAUSE_CHECK_TTL_MS);
    expect((await deliverAcme(app, acmeEvent())).status).toBe(503);

    // Past the end: accepted at once, the row not deleted yet (reads ignore it).
    app.advance(60_000);
    const event = acmeEvent();
    expect((await deliverAcme(app, event)).status).toBe(200);
    expect(await eventRow(sql, event.id)).toMatchObject({ status: 'completed' });
    expect((await pauseRows()).length).toBe(1);
    expect((await api(app, 'GET', '/senders')).body.senders).toContainEqual({
      provider: 'acme',
      status: 'active',
      pause: null,
    });
    // Resuming it by hand now changes nothing: it has ended already.
    expect((await api(app, 'POST', '/senders/acme/resume', { operator: 'grace' })).body).toMatchObject({
      resumed: false,
    });

    const expire = pauseExpiry.prepare(cronParts(db, { clock: app.now }));
    expect(await expire({ budgetMs: 1000 })).toEqual({ resumed: 1 });
    expect(await pauseRows()).toEqual([]);
    const audit = await auditRows('acme');
    expect(audit.at(-1)).toEqual({
      operator: 'system',
      action: 'resume',
      target_kind: 'sender',
      before_status: 'paused',
      after_status: 'active',
      at: new Date(pausedAt + 60_000),
      detail: { until: new Date(pausedAt + 60_000).toISOString(), note: 'one minute', reason: 'ended by itself' },
    });
    expect(audit.filter((row) => row.operator === 'grace')).toEqual([]);
    expect(await expire({ budgetMs: 1000 })).toEqual({ resumed: 0 });
  });

  it('pausing again once an earlier pause has ended (its row not yet deleted) audits the sender as found active', async () => {
    await clearPauses();
    const app = await newApp();
    await api(app, 'POST', '/senders/acme/pause', { operator: 'ada', minutes: 1 });
    app.advance(60_000);
    expect((await pauseRows()).length).toBe(1);
    const again = await api(app, 'POST', '/senders/acme/pause', { operator: 'grace' });
    expect(again).toMatchObject({ status: 200, body: { before: 'active' } });
    expect((await auditRows('acme')).map((audit) => [audit.operator, audit.before_status, audit.after_status])).toEqual(
      [
        ['ada', 'active', 'paused'],
        ['grace', 'active', 'paused'],
      ],
    );
    expect(await pauseRows()).toEqual([
      expect.objectContaining({ paused_by: 'grace', paused_at: new Date(app.now()), until: null }),
    ]);
  });

  it('pauses nobody when the pauses cannot be read, whatever the last read found, and reads again after the TTL', async () => {
    await clearPauses();
    const app = await newApp();
    await api(app, 'POST', '/senders/acme/pause', { operator: 'ada' });
    const gate = senderPauseGate(app.now);
    await expect(gate.check(db, 'acme')).rejects.toMatchObject({ status: 503 });
    const unreachable = connectDatabase({
      url: 'postgres://postgres@127.0.0.1:1/none',
      maxConnections: 1,
      statementTimeoutMs: 1000,
    });
    try {
      app.advance(PAUSE_CHECK_TTL_MS);
      await expect(gate.check(unreachable.db, 'acme')).resolves.toBeUndefined();
    } finally {
      await unreachable.close();
    }
    app.advance(PAUSE_CHECK_TTL_MS);
    await expect(gate.check(db, 'acme')).rejects.toMatchObject({ status: 503 });
  });

  it('ends a pause at its end to the millisecond, and reads the pauses again when the clock steps back', async () => {
    await clearPauses();
    let now = TEST_NOW_MS;
    const gate = senderPauseGate(() => now);
    await sql`insert into sender_pauses (provider, paused_by, until) values ('acme', 'ada', ${new Date(TEST_NOW_MS + 500)})`;
    await expect(gate.check(db, 'acme')).rejects.toMatchObject({ status: 503 });
    now += 499;
    await expect(gate.check(db, 'acme')).rejects.toMatchObject({ status: 503 });
    now += 1;
    await expect(gate.check(db, 'acme')).resolves.toBeUndefined();

    // Read at TEST_NOW_MS, where the pause had not ended; a clock back before that read reads again.
    await clearPauses();
    now = TEST_NOW_MS - 1;
    await expect(gate.check(db, 'acme')).resolves.toBeUndefined();
  });

  it('reaches another process on the same database within the TTL of its cache', async () => {
    await clearPauses();
    const operator = await newApp();
    const other = await newApp();
    // `other` has read the pauses: none.
    expect((await deliverAcme(other, acmeEvent())).status).toBe(200);

    await api(operator, 'POST', '/senders/acme/pause', { operator: 'ada' });
    // Within its TTL, `other` trusts what it read (no query per delivery)...
    other.advance(PAUSE_CHECK_TTL_MS - 1);
    expect((await deliverAcme(other, acmeEvent())).status).toBe(200);
    // ...and sees the pause once the TTL has passed.
    other.advance(1);
    expect((await deliverAcme(other, acmeEvent())).status).toBe(503);

    await api(operator, 'POST', '/senders/acme/resume', { operator: 'ada' });
    expect((await deliverAcme(other, acmeEvent())).status).toBe(503);
    other.advance(PAUSE_CHECK_TTL_MS);
    expect((await deliverAcme(other, acmeEvent())).status).toBe(200);
  });
});

describe('a paused sender in async mode', () => {
  it('is refused the same way, and its retry is stored for the worker after the resume', async () => {
    await clearPauses();
    const app = await newApp({ PROCESSING_MODE: 'async' });
    await api(app, 'POST', '/senders/acme/pause', { operator: 'ada' });
    const event = acmeEvent();
    const refused = await deliverAcme(app, event);
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('300');
    expect(await eventRow(sql, event.id)).toBeUndefined();
    await api(app, 'POST', '/senders/acme/resume', { operator: 'ada' });
    app.advance(PAUSE_CHECK_TTL_MS);
    const stored = await deliverAcme(app, event);
    expect(stored.status).toBe(202);
    expect(await eventRow(sql, event.id)).toMatchObject({ status: 'received' });
  });
});

describe('the admin API', () => {
  it('settles two operators pausing at once: one pause, each audited with the state it found', async () => {
    await clearPauses();
    const app = await newApp();
    const answers = await Promise.all(
      ['ada', 'grace'].map((operator) => api(app, 'POST', '/senders/acme/pause', { operator, note: operator })),
    );
    expect(answers.map((answer) => answer.status)).toEqual([200, 200]);
    expect(answers.map((answer) => answer.body.before).sort()).toEqual(['active', 'paused']);
    const rows = await pauseRows();
    expect(rows.length).toBe(1);
    const audit = await auditRows('acme');
    expect(audit.map((row) => row.before_status).sort()).toEqual(['active', 'paused']);
    // The pause that stands is the one audited last, found `paused`.
    const last = audit.find((row) => row.before_status === 'paused');
    expect(rows[0]?.paused_by).toBe(last?.operator);
  });

  it('answers 404 for a sender not enabled and 400 naming the field, changing nothing', async () => {
    await clearPauses();
    const app = await newApp();
    for (const path of ['/senders/stripe/pause', '/senders/nonesuch/pause', '/senders/stripe/resume']) {
      expect(await api(app, 'POST', path, { operator: 'ada' })).toEqual({
        status: 404,
        body: { error: 'not_found' },
      });
    }
    const refusals: Array<[unknown, string]> = [
      [{}, 'operator'],
      [{ operator: '  ' }, 'operator'],
      [{ operator: 'ada', minutes: 0 }, 'minutes'],
      [{ operator: 'ada', minutes: 1.5 }, 'minutes'],
      [{ operator: 'ada', minutes: 7 * 24 * 60 + 1 }, 'minutes'],
      [{ operator: 'ada', minutes: '60' }, 'minutes'],
      [{ operator: 'ada', minutes: 10, until: new Date(TEST_NOW_MS + 60_000).toISOString() }, 'until'],
      [{ operator: 'ada', until: new Date(TEST_NOW_MS - 1000).toISOString() }, 'until'],
      [{ operator: 'ada', until: new Date(TEST_NOW_MS + 8 * 86_400_000).toISOString() }, 'until'],
      [{ operator: 'ada', until: 'tomorrow' }, 'until'],
      [{ operator: 'ada', minute: 10 }, 'minute'],
      [{ operator: 'ada', note: 'two\nlines' }, 'note'],
      [{ operator: 'ada', note: 'x'.repeat(501) }, 'note'],
    ];
    for (const [body, field] of refusals) {
      expect(await api(app, 'POST', '/senders/acme/pause', body), JSON.stringify(body)).toEqual({
        status: 400,
        body: { error: 'invalid_request', field },
      });
    }
    expect(await pauseRows()).toEqual([]);
    expect(await auditRows('acme')).toEqual([]);

    // Resuming a sender that is not paused: a clear answer, nothing recorded.
    expect(await api(app, 'POST', '/senders/acme/resume', { operator: 'ada' })).toEqual({
      status: 200,
      body: { resumed: false, sender: { provider: 'acme', status: 'active', pause: null } },
    });
    expect(await auditRows('acme')).toEqual([]);
    const unauthenticated = await app.request('/admin/api/senders', {});
    expect(unauthenticated.status).toBe(401);
  });

  it("warns when the sender does not retry by itself (GitHub), or may stop retrying before the pause's end", async () => {
    await clearPauses();
    const app = await newApp();
    const github = await api(app, 'POST', '/senders/github/pause', { operator: 'ada', minutes: 30 });
    expect(github.status).toBe(200);
    expect(github.body.warnings).toEqual([
      expect.stringMatching(/^github does not send a refused delivery again by itself/),
    ]);
    const shopify = await api(app, 'POST', '/senders/shopify/pause', { operator: 'ada', minutes: 6 * 60 });
    expect(shopify.body.warnings).toEqual([expect.stringContaining('shopify retries a delivery for about 4 hours')]);
    const shortShopify = await api(app, 'POST', '/senders/shopify/pause', { operator: 'ada', minutes: 60 });
    expect(shortShopify.body.warnings).toEqual([]);
    const document = await api(app, 'GET', '/openapi.json');
    expect(Object.keys(document.body.paths as object)).toEqual(
      expect.arrayContaining([
        '/admin/api/senders',
        '/admin/api/senders/{provider}/pause',
        '/admin/api/senders/{provider}/resume',
      ]),
    );
  });
});

describe('the CLI', () => {
  const env = {
    DATABASE_URL: url,
    ACME_WEBHOOK_SECRET: TEST_SECRET,
    GITHUB_WEBHOOK_SECRET: githubSender.secrets[0],
  };

  it('pauses, lists and resumes a sender, with the contract exit codes', async () => {
    await clearPauses();
    const paused = await runCli(
      ['senders', 'pause', 'acme', '--operator', 'ada', '--for', '1h', '--note', 'migration'],
      env,
    );
    expect(paused.code).toBe(0);
    expect(paused.output).toMatch(/^paused acme until \S+Z: migration\n$/);
    const [row] = await pauseRows();
    expect(row).toMatchObject({ provider: 'acme', paused_by: 'ada', note: 'migration' });
    expect(Number(row?.until?.getTime()) - Number(row?.paused_at.getTime())).toBe(3_600_000);

    // The pause reaches the intake (the app's clock at the pause's time).
    const app = await newApp();
    app.advance(Date.now() - app.now());
    expect((await deliverAcme(app, acmeEvent())).status).toBe(503);

    const listed = await runCli(['senders', 'list', '--json'], env);
    expect(listed.code).toBe(0);
    expect(JSON.parse(listed.output)).toEqual([
      { provider: 'acme', status: 'paused', pause: expect.objectContaining({ paused_by: 'ada', note: 'migration' }) },
      { provider: 'github', status: 'active', pause: null },
    ]);
    const table = await runCli(['senders', 'list'], env);
    expect(table.output.split('\n')[1]).toMatch(/^acme\s+paused\s+ada\s+/);

    const github = await runCli(['senders', 'pause', 'github', '--operator', 'ada', '--for', '30m'], env);
    expect(github.code).toBe(0);
    expect(github.output).toContain('warning: github does not send a refused delivery again by itself');

    expect((await runCli(['senders', 'pause', 'stripe', '--operator', 'ada'], env)).code).toBe(3);
    expect((await runCli(['senders', 'resume', 'stripe', '--operator', 'ada'], env)).code).toBe(3);
    expect((await runCli(['senders', 'pause', 'nonesuch', '--operator', 'ada'], env)).code).toBe(2);
    expect((await runCli(['senders', 'pause', 'acme', '--operator', 'ada', '--for', '9d'], env)).code).toBe(2);
    expect((await runCli(['senders', 'pause', 'acme', '--operator', 'ada', '--for', 'soon'], env)).code).toBe(2);
    expect((await runCli(['senders', 'pause', 'acme'], env)).code).toBe(2);
    const past = await runCli(
      ['senders', 'pause', 'acme', '--operator', 'ada', '--until', '2020-01-01T00:00:00Z'],
      env,
    );
    expect(past.code).toBe(2);
    expect(past.output).toContain('--until must be in the future');
    // None of the refusals changed the pause.
    expect((await pauseRows()).map((pause) => [pause.provider, pause.note])).toEqual([
      ['acme', 'migration'],
      ['github', null],
    ]);

    const resumed = await runCli(['senders', 'resume', 'acme', '--operator', 'grace'], env);
    expect(resumed).toEqual({ code: 0, output: 'resumed acme\n' });
    const again = await runCli(['senders', 'resume', 'acme', '--operator', 'grace', '--json'], env);
    expect(again.code).toBe(0);
    expect(JSON.parse(again.output)).toEqual({
      resumed: false,
      sender: { provider: 'acme', status: 'active', pause: null },
    });
    expect((await auditRows('acme')).map((audit) => [audit.operator, audit.action])).toEqual([
      ['ada', 'pause'],
      ['grace', 'resume'],
    ]);
  });
});

/** What page.evaluate reads in the browser (the test's own types have no DOM). */
type BrowserGlobal = { document: { documentElement: { scrollWidth: number } } };

describe.skipIf(!hasChromium)('the dashboard in headless chromium', () => {
  let closeServer: () => Promise<void> = async () => {};
  afterAll(() => closeServer());

  it('pauses a sender from the senders page, shows it first on the overview, and resumes it there', async () => {
    await clearPauses();
    const app = await newApp();
    const { origin, close } = await serveLocally(app.app);
    closeServer = close;
    mkdirSync(ARTIFACTS, { recursive: true });
    const browser = await launchChromium();
    try {
      const page = await openPage(browser, { viewport: { width: 1280, height: 900 } });
      await page.goto(`${origin}/admin/senders`);
      await page.fill('#sign-in input[name="token"]', TOKEN);
      await page.click('#sign-in button');
      await page.locator('h1', { hasText: 'Senders' }).waitFor();
      await page.fill('#operator', 'ada');

      const acme = page.locator('[data-sender="acme"]');
      await acme.locator('select[name="minutes"]').selectOption('120');
      await acme.locator('input[name="note"]').fill('shopify migration: hold it');
      const confirmations: string[] = [];
      page.once('dialog', (dialog) => {
        confirmations.push(dialog.message());
        void dialog.accept();
      });
      await acme.locator('button', { hasText: 'Pause acme' }).click();
      await page.locator('#notice.ok', { hasText: 'acme: paused until 2026-01-01 02:00 UTC' }).waitFor();
      expect(confirmations).toEqual([expect.stringContaining('Pause acme?')]);
      expect(await pauseRows()).toEqual([
        {
          provider: 'acme',
          paused_by: 'ada',
          paused_at: new Date(TEST_NOW_MS),
          until: new Date(TEST_NOW_MS + 120 * 60_000),
          note: 'shopify migration: hold it',
        },
      ]);
      await page.locator('[data-sender="acme"] .status', { hasText: 'paused' }).waitFor();
      await page.screenshot({ path: `${ARTIFACTS}/senders-1280.png`, fullPage: true });

      // Pausing GitHub says what that costs.
      page.once('dialog', (dialog) => void dialog.accept());
      await page.locator('[data-sender="github"] button', { hasText: 'Pause github' }).click();
      await page
        .locator('#notice.warn', { hasText: 'github does not send a refused delivery again by itself' })
        .waitFor();

      // A dismissed confirmation changes nothing.
      page.once('dialog', (dialog) => void dialog.dismiss());
      await page.locator('[data-sender="shopify"] button', { hasText: 'Pause shopify' }).click();
      expect((await pauseRows()).map((row) => row.provider)).toEqual(['acme', 'github']);

      await page.click('header nav a:has-text("Overview")');
      const panel = page.locator('#paused-senders');
      await panel.waitFor();
      expect(
        await panel.locator('[data-sender]').evaluateAll((rows) => rows.map((row) => row.getAttribute('data-sender'))),
      ).toEqual(['acme', 'github']);
      expect(await panel.locator('[data-sender="acme"]').textContent()).toContain('shopify migration: hold it');
      expect(await panel.locator('[data-sender="acme"]').textContent()).toContain(
        'paused by ada since 2026-01-01 00:00:00 UTC, until 2026-01-01 02:00:00 UTC',
      );
      await page.screenshot({ path: `${ARTIFACTS}/senders-overview-1280.png`, fullPage: true });
      await page.setViewportSize({ width: 390, height: 844 });
      await page.screenshot({ path: `${ARTIFACTS}/senders-overview-390.png`, fullPage: true });
      expect(
        await page.evaluate(() => (globalThis as unknown as BrowserGlobal).document.documentElement.scrollWidth),
      ).toBeLessThanOrEqual(390);

      await panel.locator('[data-sender="acme"] button', { hasText: 'Resume acme' }).click();
      await page.locator('#notice.ok', { hasText: 'acme: resumed' }).waitFor();
      expect((await pauseRows()).map((row) => row.provider)).toEqual(['github']);
      expect(await page.locator('#paused-senders [data-sender]').count()).toBe(1);
      expect((await auditRows('acme')).map((row) => [row.operator, row.action])).toEqual([
        ['ada', 'pause'],
        ['ada', 'resume'],
      ]);

      await page.goto(`${origin}/admin/senders`);
      await page.locator('[data-sender="github"] .pause-facts').waitFor();
      await page.screenshot({ path: `${ARTIFACTS}/senders-390.png`, fullPage: true });
      expect(
        await page.evaluate(() => (globalThis as unknown as BrowserGlobal).document.documentElement.scrollWidth),
      ).toBeLessThanOrEqual(390);
      expect(await page.locator('header').evaluate((header) => header.getBoundingClientRect().height)).toBeLessThan(
        100,
      );
    } finally {
      await browser.close();
    }
  });
});
