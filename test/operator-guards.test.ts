// Operator actions under hostile input (issue 16, items 7 and 8): a replay or retry is audited in its
// own transaction or does not happen; an operator name the audit cannot hold is refused before
// anything is read (API and CLI alike); every stored event, `.` and `..` included, is reachable from
// the API and the dashboard; an id the database cannot hold is a 404, not a 503; admin bodies are
// capped. Each case reads the database facts back: status, attempts, outbox, audit, domain rows.
import { describe, expect, it } from 'vitest';
import { buildTestApp } from './helpers/app.ts';
import { runCli } from './helpers/cli.ts';
import { useTestDatabase } from './helpers/database.ts';
import { insertEvent } from './helpers/events.ts';
import { eventRow, subscriptionRow } from './helpers/facts.ts';
import { insertMessages, operatorActionRows, outboxRow, outboxRowsByKeyPrefix } from './helpers/outbox.ts';

const { sql, db, url } = await useTestDatabase();
const TOKEN = 'admin-token-for-guards-0123456789';
const test = await buildTestApp(db, { config: { ADMIN_TOKEN: TOKEN } });
const bearer = { authorization: `Bearer ${TOKEN}` };
const ORIGIN = 'http://inbox.test';

/** A request as a client sends it: the URL goes through WHATWG parsing (dot segments removed) first. */
async function send(href: string, init: RequestInit = {}) {
  const response = await test.app.request(new URL(href, ORIGIN).href, {
    ...init,
    headers: { ...bearer, ...init.headers },
  });
  return response;
}

async function postJson(href: string, body: unknown) {
  const response = await send(href, {
    method: 'POST',
    body: typeof body === 'string' ? body : JSON.stringify(body),
    headers: { 'content-type': 'application/json' },
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

/** Everything a replay of `eventId` could have left behind. */
async function eventFacts(eventId: string, subscription: string) {
  const row = await eventRow(sql, eventId);
  return {
    status: row?.status,
    attempts: row?.attempt_count,
    outbox: (await outboxRowsByKeyPrefix(sql, `acme:${eventId}:`)).length,
    audit: (await operatorActionRows(sql, `acme/${eventId}`)).length,
    subscription: (await subscriptionRow(sql, subscription)) !== undefined,
  };
}

/** Makes every audit insert fail, as a database that cannot store the row would, while `body` runs. */
async function withAuditRefused(body: () => Promise<void>): Promise<void> {
  await sql.unsafe(`create function refuse_audit() returns trigger language plpgsql as
    $$ begin raise exception 'audit refused by the test'; end $$`);
  await sql.unsafe(`create trigger refuse_audit before insert on operator_actions
    for each row execute function refuse_audit()`);
  try {
    await body();
  } finally {
    await sql.unsafe('drop trigger refuse_audit on operator_actions');
    await sql.unsafe('drop function refuse_audit()');
  }
}

/** The facts of a stored `failed` event (attempts 1) that nothing has touched. */
const UNTOUCHED = { status: 'failed', attempts: 1, outbox: 0, audit: 0, subscription: false };

const UNSTORABLE_NAMES = ['rt\u0000x', 'a'.repeat(201), 'eve\nmallory', 'x\u001b[2Jy', 'lone\ud800'];

describe('a replay is audited in its own transaction, or nothing happens', () => {
  it('refuses operator names the audit cannot hold with a 400, before anything changes', async () => {
    const { eventId, subscription } = await insertEvent(sql, { status: 'failed', attempts: 1 });
    const before = await eventFacts(eventId, subscription);
    expect(before).toEqual(UNTOUCHED);
    for (const operator of UNSTORABLE_NAMES) {
      expect(await postJson(`/admin/api/events/acme/${eventId}/replay`, { operator })).toEqual({
        status: 400,
        body: { error: 'invalid_request', field: 'operator' },
      });
      expect(await eventFacts(eventId, subscription)).toEqual(before);
    }
    // The bound itself is a name.
    const atBound = await postJson(`/admin/api/events/acme/${eventId}/replay`, { operator: 'b'.repeat(200) });
    expect(atBound.status).toBe(200);
    expect(await eventFacts(eventId, subscription)).toEqual({
      status: 'completed',
      attempts: 1,
      outbox: 1,
      audit: 1,
      subscription: true,
    });
  });

  it('applies nothing when the audit row cannot be written: success and failure paths alike', async () => {
    const applies = await insertEvent(sql, { status: 'failed', attempts: 1 });
    const fails = await insertEvent(sql, { status: 'dead_letter', attempts: 3 });
    // A purged payload makes the replay fail: the failure is recorded with the audit, or neither.
    await sql`update webhook_events set payload = null where event_id = ${fails.eventId}`;
    const appliesBefore = await eventFacts(applies.eventId, applies.subscription);
    const failsBefore = await eventFacts(fails.eventId, fails.subscription);
    await withAuditRefused(async () => {
      for (const { eventId } of [applies, fails]) {
        const answer = await postJson(`/admin/api/events/acme/${eventId}/replay`, { operator: 'alice' });
        expect(answer).toEqual({ status: 503, body: { error: 'unavailable' } });
      }
    });
    expect(await eventFacts(applies.eventId, applies.subscription)).toEqual(appliesBefore);
    expect(await eventFacts(fails.eventId, fails.subscription)).toEqual(failsBefore);

    // With the audit writable again, both go through and are recorded once each.
    expect((await postJson(`/admin/api/events/acme/${applies.eventId}/replay`, { operator: 'alice' })).status).toBe(
      200,
    );
    expect((await postJson(`/admin/api/events/acme/${fails.eventId}/replay`, { operator: 'alice' })).status).toBe(200);
    expect(await eventFacts(applies.eventId, applies.subscription)).toMatchObject({ status: 'completed', audit: 1 });
    expect(await eventFacts(fails.eventId, fails.subscription)).toMatchObject({
      status: 'failed',
      attempts: 4,
      audit: 1,
    });
    expect(await operatorActionRows(sql, `acme/${fails.eventId}`)).toEqual([
      expect.objectContaining({ before_status: 'dead_letter', after_status: 'failed' }),
    ]);
  });

  it('retries nothing for a refused operator name, nor when the audit cannot be written', async () => {
    const [id] = await insertMessages(sql, 1, { status: 'dead', attempts: 10 });
    if (id === undefined) throw new Error('no message');
    for (const operator of UNSTORABLE_NAMES) {
      expect(await postJson(`/admin/api/outbox/${id}/retry`, { operator })).toEqual({
        status: 400,
        body: { error: 'invalid_request', field: 'operator' },
      });
    }
    await withAuditRefused(async () => {
      expect((await postJson(`/admin/api/outbox/${id}/retry`, { operator: 'alice' })).status).toBe(503);
    });
    expect(await outboxRow(sql, id)).toMatchObject({ status: 'dead', attempts: 10 });
    expect(await operatorActionRows(sql, id)).toEqual([]);
  });

  it('the CLI refuses the same names as a usage error (exit 2), database untouched', async () => {
    const { eventId, subscription } = await insertEvent(sql, { status: 'failed', attempts: 1 });
    const [id] = await insertMessages(sql, 1, { status: 'dead', attempts: 10 });
    if (id === undefined) throw new Error('no message');
    const env = { DATABASE_URL: url };
    for (const operator of ['a'.repeat(201), 'eve\nmallory', 'x\u001b[2Jy']) {
      const replay = await runCli(['replay', 'acme', eventId, '--operator', operator, '--yes'], env);
      expect(replay.code).toBe(2);
      const retry = await runCli(['outbox', 'retry', id, '--operator', operator], env);
      expect(retry.code).toBe(2);
    }
    expect(await eventFacts(eventId, subscription)).toEqual(UNTOUCHED);
    expect(await outboxRow(sql, id)).toMatchObject({ status: 'dead', attempts: 10 });
    expect(await operatorActionRows(sql, id)).toEqual([]);
  });
});

/** The href of the first link whose text is exactly `text`, HTML entities decoded. */
function linkTo(html: string, text: string): string {
  const escaped = text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const match = new RegExp(`<a href="([^"]*)"[^>]*>${escaped}</a>`).exec(html);
  if (match?.[1] === undefined) throw new Error(`no link to ${text}`);
  return match[1].replaceAll('&amp;', '&');
}

describe('every stored event is reachable over HTTP', () => {
  it('events `.` and `..` are shown and replayed from the dashboard links and the API', async () => {
    const dot = await insertEvent(sql, { status: 'failed', attempts: 1, eventId: '.' });
    const dots = await insertEvent(sql, { status: 'dead_letter', attempts: 2, eventId: '..' });

    const list = await send('/admin/events?status=failed&provider=acme');
    expect(list.status).toBe(200);
    const listed = await list.text();
    const page = await send(linkTo(listed, '.'));
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain('<title>acme/. · Webhook Inbox</title>');
    // The page's replay button posts where its data-action says, as the dashboard's script does.
    const action = /data-action="([^"]*)"/.exec(html)?.[1]?.replaceAll('&amp;', '&');
    if (action === undefined) throw new Error('no replay action');
    const replayed = await postJson(action, { operator: 'alice' });
    expect(replayed).toMatchObject({ status: 200, body: { before: 'failed', event: { event_id: '.' } } });
    expect(await eventFacts('.', dot.subscription)).toMatchObject({ status: 'completed', outbox: 1, audit: 1 });

    const shown = await send('/admin/api/event?provider=acme&event_id=..&payload=true');
    expect(shown.status).toBe(200);
    const body = (await shown.json()) as { event: { event_id: string; status: string; payload: unknown } };
    expect(body.event).toMatchObject({ event_id: '..', status: 'dead_letter' });
    expect(JSON.stringify(body.event.payload)).toContain(dots.subscription);
    const viaQuery = await postJson('/admin/api/event/replay?provider=acme&event_id=..', { operator: 'bob' });
    expect(viaQuery).toMatchObject({ status: 200, body: { before: 'dead_letter', event: { status: 'completed' } } });
    expect(await operatorActionRows(sql, 'acme/..')).toEqual([
      expect.objectContaining({ operator: 'bob', before_status: 'dead_letter', after_status: 'completed' }),
    ]);
    const dashboardPage = await send('/admin/event?provider=acme&event_id=..');
    expect(dashboardPage.status).toBe(200);
    expect(await dashboardPage.text()).toContain('<title>acme/.. · Webhook Inbox</title>');
  });

  it('ids with slashes, percent signs, query and fragment marks, backslashes and dots are reached by their links', async () => {
    const ids = [
      'tab\there',
      'new\nline',
      'a/b',
      'a%2Fb',
      '%',
      '%25',
      '%2e',
      '%2e%2e',
      '.%2e',
      'a?b=1',
      'a#b',
      'a\\b',
      ' lead',
      'ü',
      '...',
      '.a',
    ];
    const run = `r${Date.now().toString(36)}`;
    for (const suffix of ids) await insertEvent(sql, { status: 'parked', eventId: `${run}${suffix}` });
    for (const suffix of ids) await insertEvent(sql, { status: 'parked', eventId: suffix });
    const listed = await (await send(`/admin/events?status=parked&limit=1000`)).text();
    for (const eventId of [...ids, ...ids.map((suffix) => `${run}${suffix}`)]) {
      const escaped = eventId.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
      const page = await send(linkTo(listed, escaped));
      expect(page.status, eventId).toBe(200);
      expect(await page.text(), eventId).toContain(`<title>acme/${escaped} · Webhook Inbox</title>`);
      const api = await send(`/admin/api/events/acme/${encodeURIComponent(eventId)}`);
      expect(((await api.json()) as { event?: { event_id: string } }).event?.event_id, eventId).toBe(eventId);
    }
  });

  it('an id the database cannot hold is a 404 (API and dashboard), a text filter holding one a 400', async () => {
    const logged = test.logs.length;
    for (const path of ['/admin/api/events/acme/%00', '/admin/api/event?provider=acme&event_id=%00']) {
      const response = await send(path);
      expect(response.status).toBe(404);
      expect(await response.json()).toEqual({ error: 'not_found' });
    }
    expect(await postJson('/admin/api/events/acme/%00/replay', { operator: 'alice' })).toEqual({
      status: 404,
      body: { error: 'not_found' },
    });
    expect((await send('/admin/events/acme/a%00b')).status).toBe(404);
    for (const query of ['id=%00', 'type=a%00']) {
      const response = await send(`/admin/api/events?${query}`);
      expect(response.status).toBe(400);
    }
    expect((await send('/admin/api/outbox?topic=%00')).status).toBe(400);
    expect(test.logs.slice(logged).join('\n')).not.toContain('unhandled error');
  });

  it('caps admin request bodies: 413 beyond 16 KiB, declared or streamed, nothing changed', async () => {
    const { eventId, subscription } = await insertEvent(sql, { status: 'failed', attempts: 1 });
    const big = JSON.stringify({ operator: 'alice', pad: 'x'.repeat(1_000_000) });
    expect(await postJson(`/admin/api/events/acme/${eventId}/replay`, big)).toEqual({
      status: 413,
      body: { error: 'payload_too_large' },
    });
    // No Content-Length: 4 MB of spaces offered in 4 KiB chunks, counted as they are pulled.
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        sent += 1;
        if (sent > 1000) controller.close();
        else controller.enqueue(new TextEncoder().encode(' '.repeat(4096)));
      },
    });
    const replayPath = `/admin/api/events/acme/${eventId}/replay`;
    const streamed = await send(replayPath, { method: 'POST', body: stream, duplex: 'half' } as RequestInit);
    expect(streamed.status).toBe(413);
    expect(sent).toBeLessThan(1000);
    expect(await eventFacts(eventId, subscription)).toEqual(UNTOUCHED);
    // A body under the cap is served as before.
    const small = await postJson(`/admin/api/events/acme/${eventId}/replay`, { operator: 'alice' });
    expect(small.status).toBe(200);
  });
});
