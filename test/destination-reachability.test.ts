// The operator at 3 a.m. (issue 35, items 2 and 3), against real PostgreSQL and real sockets: a
// destination whose target's port is closed shows as down within 2 probes (the breaker's row open,
// every process holding back), the overview's banner and the API say why, and every pending message
// it holds says why (its own last_error, or its destination's reason); the target coming back closes
// the circuit. A failed answer keeps its status and its first bytes, bounded, escaped, credentials
// redacted, never a header, and a huge answer is not read whole. A bulk retry into an open circuit
// says so before it is confirmed (API dry run, CLI, and the dashboard's confirmation in headless
// chromium at 1280 and 390 px, with the overview's banner).
// Needs a process: headless Chromium renders the overview and the outbox list.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { LAST_ERROR_MAX } from '../src/db/schema.ts';
import { answerExcerpt, fetchPost, type HttpPost } from '../src/outbox/publishers/publisher.ts';
import { DEFAULT_ISOLATION, OUTAGE_PROBE_MAX_MS } from '../src/outbox/relay.ts';
import { undiciPost } from '../src/outbox/undici-post.ts';
import { buildTestApp } from './helpers/app.ts';
import { ARTIFACTS, type BrowserGlobal, hasChromium, useBrowser } from './helpers/browser.ts';
import { runCli } from './helpers/cli.ts';
import { useTestDatabase } from './helpers/database.ts';
import { buildTestRelay, insertMessages, outboxRows } from './helpers/outbox.ts';
import { patience, until } from './helpers/patience.ts';
import { refusingUrl, startSink } from './helpers/sink.ts';

const { sql, db, url } = await useTestDatabase();
const TOKEN = 'reachability-token-for-tests-0123456789';
const bearer = { authorization: `Bearer ${TOKEN}` };
const test = await buildTestApp(db, { config: { ADMIN_TOKEN: TOKEN } });
test.setNow(Date.now());
const sink = await startSink();

afterEach(async () => {
  sink.respond(() => ({ status: 200, body: '{}' }));
  // Each test starts with no message, no destination row (a closed circuit) and no job; deleted, not
  // truncated, so the outbox counters' triggers count them out.
  await Promise.all([
    sql`delete from outbox_messages`,
    sql`delete from outbox_destinations`,
    sql`delete from bulk_jobs`,
  ]);
});

async function destinationRow() {
  const [row] = await sql<
    { circuit: string; consecutive_failures: number; probe_at: Date | null; opened_at: Date | null }[]
  >`select circuit::text as circuit, consecutive_failures, probe_at, opened_at from outbox_destinations
    where name = 'default'`;
  return row;
}

async function getJson(path: string) {
  const response = await test.request(path, { headers: bearer });
  return { status: response.status, text: await response.text() };
}

/** A relay with the default breaker (20 failures, 30 s) and the default outage backoff, on a closed port. */
async function relayOnClosedPort() {
  const target = await refusingUrl();
  const port = Number(new URL(target).port);
  const relay = buildTestRelay(db, { target, post: undiciPost, isolation: DEFAULT_ISOLATION });
  return { target, port, relay };
}

/** Listens on `port` again, answering 200: the target is back. */
async function listenOn(port: number): Promise<Server> {
  const server = createServer((request, response) => {
    request.resume();
    request.on('end', () => response.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return server;
}

describe('a destination whose target cannot be reached', () => {
  it('is down within 2 probes, says why, holds every process back, and closes once the target is back', async () => {
    const { port, relay } = await relayOnClosedPort();
    const refused = `network ECONNREFUSED 127.0.0.1:${port}`;
    const held = await insertMessages(sql, 3);

    // The first publishes: refused. Fewer than the breaker's 20, so its count alone would not open it.
    expect(await relay.relay.drain()).toMatchObject({ unavailable: 3, stoppedBy: 'unavailable' });
    expect(await destinationRow()).toMatchObject({ circuit: 'closed', consecutive_failures: 3 });

    // The relay's first probe, once its outage backoff has passed: refused again, and the circuit opens.
    relay.advance(OUTAGE_PROBE_MAX_MS);
    const probeMs = relay.now();
    expect(await relay.relay.drain()).toMatchObject({ claimed: 1, unavailable: 1, stoppedBy: 'unavailable' });
    const row = await destinationRow();
    expect(row).toMatchObject({ circuit: 'open', consecutive_failures: 4 });
    // It probes again on the outage's backoff (at most 30 s away), not after the breaker's cool-off.
    expect(row?.probe_at?.getTime()).toBeGreaterThan(probeMs);
    expect(row?.probe_at?.getTime()).toBeLessThanOrEqual(probeMs + OUTAGE_PROBE_MAX_MS);
    expect(row?.opened_at?.getTime()).toBe(probeMs);

    // Every message it tried says why, its attempts untouched; one that arrives now is never claimed.
    for (const message of await outboxRows(sql, held)) {
      expect(message).toMatchObject({ status: 'pending', attempts: 0, last_error: refused });
    }
    const [later] = (await insertMessages(sql, 1, { createdAt: new Date() })) as [string];
    // Another process (a relay of its own, no outage of its own) claims nothing while it is open.
    const other = buildTestRelay(db, { target: `http://127.0.0.1:${port}/outbox`, isolation: DEFAULT_ISOLATION });
    expect(await other.relay.drain()).toMatchObject({ claimed: 0, stoppedBy: 'unavailable' });

    // The API says the destination is down, and why; every pending message says why it waits.
    const destinations = JSON.parse((await getJson('/admin/api/destinations')).text).destinations;
    expect(destinations).toEqual([
      expect.objectContaining({ name: 'default', state: 'open', consecutive_failures: 4, last_error: refused }),
    ]);
    const since = `${new Date(probeMs).toISOString().slice(0, 19).replace('T', ' ')} UTC`;
    expect(destinations[0].waiting).toContain(`circuit open since ${since}`);
    expect(destinations[0].waiting).toContain(`last: ${refused}`);
    const listed = JSON.parse((await getJson('/admin/api/outbox?status=pending')).text).messages;
    expect(listed).toHaveLength(4);
    for (const message of listed) expect(message.waiting).toBe(destinations[0].waiting);
    expect(listed.find((message: { id: string }) => message.id === later)).toMatchObject({ last_error: null });
    const shown = JSON.parse((await getJson(`/admin/api/outbox/${later}`)).text).message;
    expect(shown.waiting).toContain(refused);

    // The overview's banner is on, with the reason; the CLI lists it open, with the reason below.
    const { text } = await getJson('/admin');
    const banner = text.slice(text.indexOf('id="unhealthy-destinations"'));
    expect(banner).toContain('Destinations not healthy: 1');
    expect(banner).toContain(refused);
    const cli = await runCli(['destinations', 'list'], { DATABASE_URL: url });
    expect(cli.output).toMatch(/default\s+open/);
    expect(cli.output).toContain(`default: circuit open since`);
    expect(cli.output).toContain(refused);

    // The target is back: the next probe publishes, the circuit closes and the backlog drains.
    const server = await listenOn(port);
    try {
      relay.advance(OUTAGE_PROBE_MAX_MS);
      expect(await relay.relay.drain()).toMatchObject({ published: 4 });
      expect(await destinationRow()).toMatchObject({ circuit: 'closed', consecutive_failures: 0 });
      const after = (await getJson('/admin')).text;
      expect(after).not.toContain('id="unhealthy-destinations"');
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe('what the target said', () => {
  for (const [name, post] of [
    ['undici', undiciPost],
    ['fetch', fetchPost],
  ] as const satisfies ReadonlyArray<readonly [string, HttpPost]>) {
    it(`keeps the status and the first bytes of a 500's answer (${name})`, async () => {
      const [id] = (await insertMessages(sql, 1)) as [string];
      sink.respond(() => ({ status: 500, body: '{"error":"db down"}' }));
      await buildTestRelay(db, { target: sink.url, post }).relay.drain();
      const [row] = await outboxRows(sql, [id]);
      expect(row).toMatchObject({ status: 'pending', attempts: 1, last_error: 'http 500: {"error":"db down"}' });
    });

    it(`bounds, escapes and redacts it, and never keeps a header (${name})`, async () => {
      const [id] = (await insertMessages(sql, 1)) as [string];
      const body = `{"error":"line one\nline two \u0007 \\ done","access_token":"sekrit-one","next":"https://x.example/?api_key=sekrit-two"} Bearer sekrit-three ${'y'.repeat(300_000)}`;
      sink.respond(() => ({
        status: 503,
        body,
        headers: { 'set-cookie': 'session=sekrit-four', 'www-authenticate': 'Bearer realm="sekrit-five"' },
      }));
      await buildTestRelay(db, { target: sink.url, post }).relay.drain();
      const [row] = await outboxRows(sql, [id]);
      const lastError = row?.last_error ?? '';
      expect(lastError.startsWith('http 503: {"error":"line one line two \\u0007 \\\\ done"')).toBe(true);
      expect(lastError).toContain('"access_token":"[redacted]"');
      expect(lastError).toContain('api_key=[redacted]');
      expect(lastError).toContain('Bearer [redacted]');
      expect(lastError).not.toContain('sekrit');
      expect(lastError.endsWith('…')).toBe(true);
      expect(lastError.length).toBeLessThanOrEqual(LAST_ERROR_MAX);
      expect(lastError.length).toBeLessThan(300);
    });

    it(`stops reading an endless answer after its first bytes (${name})`, async () => {
      const [id] = (await insertMessages(sql, 1)) as [string];
      let closed = false;
      let written = 0;
      const server = createServer((request, response) => {
        request.resume();
        response.writeHead(502, { 'content-type': 'text/plain' });
        const chunk = Buffer.alloc(16 * 1024, 'z');
        const more = () => {
          while (!closed && response.write(chunk)) written += chunk.length;
        };
        response.on('drain', more);
        response.on('close', () => {
          closed = true;
        });
        more();
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      try {
        const target = `http://127.0.0.1:${(server.address() as AddressInfo).port}/outbox`;
        // A timeout far beyond the wait below: only the bounded read can end the call in time.
        const relay = buildTestRelay(db, {
          target,
          post,
          settings: { timeoutMs: patience(120_000), leaseMs: patience(240_000) },
        });
        const drained = relay.relay.drain();
        await until(async () => closed, patience(20_000));
        await drained;
        const [row] = await outboxRows(sql, [id]);
        expect(row?.last_error).toMatch(/^http 502: z{240}…$/);
        expect(written).toBeLessThan(64 * 1024 * 1024);
      } finally {
        closed = true;
        server.closeAllConnections();
        await new Promise((resolve) => server.close(resolve));
      }
    });
  }

  it('an empty or blank answer leaves the status alone', () => {
    expect(answerExcerpt(undefined)).toBeUndefined();
    expect(answerExcerpt(new TextEncoder().encode(' \r\n '))).toBeUndefined();
  });
});

/** Dead messages of `default` and its circuit open, as the relay leaves it after an outage. */
async function deadBehindOpenCircuit(count: number): Promise<string[]> {
  const ids = await insertMessages(sql, count, { status: 'dead', attempts: 10 });
  await sql`insert into outbox_destinations (name, circuit, consecutive_failures, opened_at, probe_at)
    values ('default', 'open', 7, now() - interval '2 minutes', now() + interval '30 seconds')`;
  // Its newest failure, on a message it holds.
  await insertMessages(sql, 1, { availableAt: new Date(Date.now() + 30_000) });
  await sql`update outbox_messages set last_error = 'network ECONNREFUSED 10.0.0.7:8080' where status = 'pending'`;
  return ids;
}

const postJob = (body: Record<string, unknown>) =>
  test.request('/admin/api/jobs', {
    method: 'POST',
    headers: { ...bearer, 'content-type': 'application/json' },
    body: JSON.stringify({ kind: 'retry_outbox', operator: 'ann', ...body }),
  });

describe('a bulk retry into an open circuit', () => {
  it('says so in the dry run and with the job, and says nothing while the circuit is closed', async () => {
    await deadBehindOpenCircuit(3);
    const counted = await postJob({ dry_run: true });
    expect(counted.status).toBe(200);
    const answer = (await counted.json()) as { warnings: Array<{ text: string }> };
    expect(answer).toMatchObject({
      count: 3,
      job: null,
      warnings: [{ destination: 'default', state: 'open', count: 3 }],
    });
    const text = answer.warnings[0]?.text;
    expect(text).toContain('destination default has its circuit open: 3 of these messages');
    expect(text).toContain('until its circuit closes');
    expect(text).toContain('last: network ECONNREFUSED 10.0.0.7:8080');
    expect(await sql`select id from bulk_jobs`).toHaveLength(0);

    const created = await postJob({});
    expect(created.status).toBe(202);
    expect(await created.json()).toMatchObject({ count: 3, warnings: [{ destination: 'default', count: 3 }] });

    await sql`update outbox_destinations set circuit = 'closed', opened_at = null, probe_at = null,
      consecutive_failures = 0`;
    expect(await (await postJob({ dry_run: true })).json()).toMatchObject({ count: 3, warnings: [] });
  });

  it("a single retry's answer says the message only waits", async () => {
    const [id] = (await deadBehindOpenCircuit(1)) as [string];
    const retried = await test.request(`/admin/api/outbox/${id}/retry`, {
      method: 'POST',
      headers: { ...bearer, 'content-type': 'application/json' },
      body: JSON.stringify({ operator: 'ann' }),
    });
    const answer = (await retried.json()) as { retried: boolean; message: { status: string; waiting: string } };
    expect(answer).toMatchObject({ retried: true, message: { status: 'pending' } });
    expect(answer.message.waiting).toContain('circuit open since');
    expect(answer.message.waiting).toContain('last: network ECONNREFUSED 10.0.0.7:8080');
  });

  it('the CLI says so before it asks', async () => {
    await deadBehindOpenCircuit(2);
    const { code, output } = await runCli(['jobs', 'retry', '--operator', 'ann'], { DATABASE_URL: url });
    expect(code).toBe(2);
    expect(output).toContain('warning: destination default has its circuit open: 2 of these messages');
    expect(output.indexOf('warning:')).toBeLessThan(output.indexOf('pass --yes'));
    const json = await runCli(['jobs', 'retry', '--operator', 'ann', '--dry-run', '--json'], { DATABASE_URL: url });
    expect(JSON.parse(json.output)).toMatchObject({ count: 2, warnings: [{ destination: 'default', count: 2 }] });
  });
});

describe.skipIf(!hasChromium)('in headless chromium', () => {
  const browser = useBrowser(test.app);

  it("turns the overview's banner on for a closed port, at 1280 and 390 px", async () => {
    const { port, relay } = await relayOnClosedPort();
    await insertMessages(sql, 2);
    await relay.relay.drain();
    relay.advance(OUTAGE_PROBE_MAX_MS);
    await relay.relay.drain();
    for (const width of [1280, 390]) {
      const page = await browser.signedIn(TOKEN, width, width === 390 ? 844 : 900);
      await page.goto(`${await browser.origin}/admin`);
      const banner = page.locator('#unhealthy-destinations');
      await banner.waitFor();
      expect(await banner.locator('h2').textContent()).toContain('Destinations not healthy: 1');
      expect(await banner.locator('[data-destination="default"] .status').textContent()).toBe('open');
      expect(await banner.locator('.waiting').textContent()).toContain(`ECONNREFUSED 127.0.0.1:${port}`);
      expect(
        await page.evaluate(() => (globalThis as unknown as BrowserGlobal).document.documentElement.scrollWidth),
      ).toBeLessThanOrEqual(width);
      await page.screenshot({ path: `${ARTIFACTS}/reachability-overview-${width}.png` });
      await page.close();
    }
  });

  it('warns before a Retry all into an open circuit is confirmed, at 1280 and 390 px', async () => {
    await deadBehindOpenCircuit(4);
    for (const width of [1280, 390]) {
      const page = await browser.signedIn(TOKEN, width, width === 390 ? 844 : 900);
      await page.fill('#operator', 'ada');
      await page.goto(`${await browser.origin}/admin/outbox?status=dead`);
      const button = page.locator('form[data-bulk="retry_outbox"] button');
      await button.waitFor();
      // Declined: the question is the test's, nothing is created.
      const asked = new Promise<string>((resolve) =>
        page.once('dialog', (dialog) => void dialog.dismiss().then(() => resolve(dialog.message()))),
      );
      await button.click();
      await page.locator('#notice', { hasText: 'Nothing was done.' }).waitFor();
      const question = await asked;
      expect(question).toContain('Warning: destination default has its circuit open: 4 of these messages');
      expect(question).toContain('Retry all 4 matching messages as a job?');
      expect(await sql`select id from bulk_jobs`).toHaveLength(0);
      await page.screenshot({ path: `${ARTIFACTS}/reachability-retry-${width}.png` });
      await page.close();
    }
  });
});
