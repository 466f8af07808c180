// The answers before and around the signature check: unknown provider, size, content type, the
// request deadline and an unreachable database. Each leaves nothing behind.
import { sql as drizzleSql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { connectDatabase } from '../src/db/client.ts';
import { defineHandler } from '../src/domain/handlers.ts';
import { enableSenders } from '../src/senders/registry.ts';
import { acmeEvent, signedHeaders, uniqueId } from './helpers/acme.ts';
import { buildTestApp } from './helpers/app.ts';
import { useEmptyDatabase, useTestDatabase } from './helpers/database.ts';
import { countEvents, subscriptionRow } from './helpers/facts.ts';
import { WAIT_MS } from './helpers/patience.ts';

const { sql, db } = await useTestDatabase();
/** The advisory lock the slow handler below waits on while the test holds it. */
const LOCK_KEY = 3_303_303;
const test = await buildTestApp(db, { config: { MAX_BODY_BYTES: 1024 } });
const empty = await useEmptyDatabase();

/** A body of 1,000 chunks of 512 blanks, streamed as the app reads it: how many chunks it pulled. */
async function postStreamed(headers: Record<string, string>) {
  let pulled = 0;
  const endless = new ReadableStream<Uint8Array>({
    pull(controller) {
      pulled += 1;
      controller.enqueue(new Uint8Array(512).fill(0x20));
      if (pulled > 1000) controller.close();
    },
  });
  const response = await test.request('/webhooks/acme', {
    method: 'POST',
    body: endless,
    headers,
    duplex: 'half',
  } as RequestInit);
  return { response, pulled };
}

describe('answers before the signature check', () => {
  it('404 for a sender that does not exist or is not enabled', async () => {
    const disabled = await buildTestApp(db, { enabledSenders: await enableSenders({}) });
    const body = JSON.stringify(acmeEvent());
    for (const [app, path] of [
      [disabled, '/webhooks/acme'],
      [test, '/webhooks/nosuchprovider'],
      [test, '/webhooks/stripe'],
    ] as const) {
      const response = await app.request(path, { method: 'POST', body, headers: await signedHeaders(body) });
      expect(response.status).toBe(404);
      expect(await response.text()).toBe('{"error":"not_found"}');
    }
    expect((await test.request('/nowhere', { method: 'GET' })).status).toBe(404);
  });

  it('413 from the declared length, before content type or signature are looked at', async () => {
    const body = JSON.stringify(acmeEvent({ data: { id: 'sub_1', status: 'active', pad: 'x'.repeat(2000) } }));
    const response = await test.request('/webhooks/acme', {
      method: 'POST',
      body,
      headers: { 'content-type': 'text/plain', 'content-length': String(body.length) },
    });
    expect(response.status).toBe(413);
    expect(await response.text()).toBe('{"error":"payload_too_large"}');
  });

  it('413 for a body without a length as soon as the stream passes the cap', async () => {
    const { response, pulled } = await postStreamed({ 'content-type': 'application/json' });
    expect(response.status).toBe(413);
    expect(pulled).toBeLessThan(10);
    expect(await countEvents(sql)).toBe(0);
  });

  it('415 unless the content type is application/json (parameters allowed)', async () => {
    const body = JSON.stringify(acmeEvent());
    const signed = await signedHeaders(body);
    for (const contentType of ['text/plain', 'application/x-www-form-urlencoded', 'application/jsonx', undefined]) {
      const headers: Record<string, string> = { ...signed };
      if (contentType === undefined) delete headers['content-type'];
      else headers['content-type'] = contentType;
      const response = await test.request('/webhooks/acme', { method: 'POST', body, headers });
      expect(response.status, String(contentType)).toBe(415);
      expect(await response.text()).toBe('{"error":"unsupported_media_type"}');
    }
    expect(await countEvents(sql)).toBe(0);
    const charset = await test.request('/webhooks/acme', {
      method: 'POST',
      body,
      headers: { ...signed, 'content-type': 'Application/JSON; charset=utf-8' },
    });
    expect(charset.status).toBe(200);
    // Blanks around the media type, before its parameters, are not part of it.
    const spaced = JSON.stringify(acmeEvent());
    const blanks = await test.request('/webhooks/acme', {
      method: 'POST',
      body: spaced,
      headers: { ...(await signedHeaders(spaced)), 'content-type': 'application/json ; charset=utf-8' },
    });
    expect(blanks.status).toBe(200);
  });

  it('takes a declared length of exactly MAX_BODY_BYTES, and refuses one byte more', async () => {
    const event = acmeEvent();
    const unpadded = JSON.stringify({ ...event, pad: '' }).length;
    for (const [size, status] of [
      [1024, 200],
      [1025, 413],
    ] as const) {
      const body = JSON.stringify({ ...event, id: uniqueId('evt'), pad: 'x'.repeat(size - unpadded) });
      expect(body.length).toBe(size);
      const response = await test.request('/webhooks/acme', {
        method: 'POST',
        body,
        headers: { ...(await signedHeaders(body)), 'content-length': String(body.length) },
      });
      expect(response.status, String(size)).toBe(status);
    }
  });

  it('logs the limit a 413 hit', async () => {
    const body = JSON.stringify(acmeEvent({ data: { id: 'sub_1', status: 'active', pad: 'x'.repeat(2000) } }));
    const response = await test.request('/webhooks/acme', {
      method: 'POST',
      body,
      headers: { ...(await signedHeaders(body)), 'content-length': String(body.length) },
    });
    expect(response.status).toBe(413);
    const refused = test.logs.map((line) => JSON.parse(line)).filter((line) => line.outcome === 'payload_too_large');
    expect(refused.at(-1)).toMatchObject({ msg: 'event not accepted', provider: 'acme', limit_bytes: 1024 });
  });

  it('counts a body that declares a length and is chunked all the same, and refuses it past the cap', async () => {
    const { response, pulled } = await postStreamed({
      'content-type': 'application/json',
      'content-length': '10',
      'transfer-encoding': 'chunked',
    });
    expect(response.status).toBe(413);
    expect(pulled).toBeLessThan(10);
  });

  it('415 for a body sent without a content type, and the log line says which content type was refused', async () => {
    const fresh = await buildTestApp(db);
    const body = new TextEncoder().encode(JSON.stringify(acmeEvent()));
    const headers: Record<string, string> = { ...(await signedHeaders(body)) };
    delete headers['content-type'];
    const response = await fresh.request('/webhooks/acme', { method: 'POST', body, headers });
    expect(response.status).toBe(415);
    expect(await response.text()).toBe('{"error":"unsupported_media_type"}');
    const text = await fresh.request('/webhooks/acme', {
      method: 'POST',
      body,
      headers: { ...headers, 'content-type': 'text/plain' },
    });
    expect(text.status).toBe(415);
    const refused = fresh.logs.map((line) => JSON.parse(line)).filter((line) => line.msg === 'event not accepted');
    expect(refused.map((line) => line.content_type)).toEqual([null, 'text/plain']);
  });

  it('answers 400 to an upload that breaks before its body arrived, and logs it as abandoned', async () => {
    const broken = new ReadableStream<Uint8Array>({
      pull(controller) {
        controller.error(new Error('connection reset by the sender'));
      },
    });
    const response = await test.request('/webhooks/acme', {
      method: 'POST',
      body: broken,
      headers: { 'content-type': 'application/json', 'content-length': '100' },
      duplex: 'half',
    } as RequestInit);
    expect(response.status).toBe(400);
    expect(await response.text()).toBe('{"error":"invalid_payload"}');
    const abandoned = test.logs.map((line) => JSON.parse(line)).filter((line) => line.reason === 'body_unreadable');
    expect(abandoned.at(-1)).toMatchObject({ msg: 'delivery abandoned before its body arrived', provider: 'acme' });
  });
});

describe('503 when the event cannot be committed in time', () => {
  it('answers 503 with Retry-After at the deadline and commits nothing', async () => {
    const subscription = uniqueId('sub');
    const slow = await buildTestApp(db, {
      config: { HANDLER_DEADLINE_MS: 300 },
      handlers: {
        acme: {
          'subscription.updated': defineHandler({
            schema: z.unknown(),
            async apply({ tx }) {
              await tx.execute(drizzleSql`insert into subscriptions (external_id, status, provider_version, updated_at)
                values (${subscription}, 'active', 1, now())`);
              // Blocked for as long as the test holds this lock: past the deadline on any machine.
              await tx.execute(drizzleSql`select pg_advisory_xact_lock(${LOCK_KEY})`);
            },
          }),
        },
      },
    });
    const event = acmeEvent();
    const body = JSON.stringify(event);
    // Held on a connection of its own, outside any transaction, until the answer is in: the 503 came
    // at the deadline, not when the handler's work ended (it cannot end while the lock is held).
    const holder = await sql.reserve();
    await holder`select pg_advisory_lock(${LOCK_KEY})`;
    let response: Response;
    try {
      response = await slow.request('/webhooks/acme', { method: 'POST', body, headers: await signedHeaders(body) });
    } finally {
      await holder`select pg_advisory_unlock(${LOCK_KEY})`;
      holder.release();
    }
    expect(response.status).toBe(503);
    expect(response.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(await response.text()).toBe('{"error":"unavailable"}');

    // The transaction was still blocked when we answered; once it wakes it must roll back. Woken: no
    // other connection of this database is still inside a statement or a transaction.
    await expect
      .poll(
        async () =>
          (
            await sql<{ n: number }[]>`select count(*)::int as n from pg_stat_activity
              where datname = current_database() and backend_type = 'client backend' and pid <> pg_backend_pid()
                and (state = 'active' or state like 'idle in transaction%')`
          )[0]?.n,
        { timeout: WAIT_MS },
      )
      .toBe(0);
    expect(await countEvents(sql, event.id)).toBe(0);
    expect(await subscriptionRow(sql, subscription)).toBeUndefined();
    const idle = await sql<{ n: number }[]>`select count(*)::int as n from pg_stat_activity
      where datname = current_database() and state like 'idle in transaction%'`;
    expect(idle[0]?.n).toBe(0);
  });

  it('answers 503 with Retry-After when the database is unreachable', async () => {
    const unreachable = connectDatabase({
      url: 'postgres://nobody@127.0.0.1:9/none',
      maxConnections: 1,
      statementTimeoutMs: 1000,
    });
    try {
      const app = await buildTestApp(unreachable.db, { config: { HANDLER_DEADLINE_MS: 2000 } });
      const body = JSON.stringify(acmeEvent());
      const response = await app.request('/webhooks/acme', {
        method: 'POST',
        body,
        headers: await signedHeaders(body),
      });
      expect(response.status).toBe(503);
      expect(response.headers.get('retry-after')).toMatch(/^\d+$/);
      expect(await response.text()).toBe('{"error":"unavailable"}');
      expect(app.logs.join('\n')).not.toContain('nobody@');
    } finally {
      await unreachable.close();
    }
  });
});

describe('health', () => {
  it('healthz answers while the process runs; readyz needs a reachable, migrated database', async () => {
    // Built inside the test, so that its routes are the ones under test (a mutant is active only here).
    const app = await buildTestApp(db);
    const healthz = await app.request('/healthz', { method: 'GET' });
    expect([healthz.status, await healthz.json()]).toEqual([200, { status: 'ok' }]);
    const readyz = await app.request('/readyz', { method: 'GET' });
    expect([readyz.status, await readyz.json()]).toEqual([200, { status: 'ready' }]);

    const unmigrated = connectDatabase({ url: empty.url, maxConnections: 1, statementTimeoutMs: 1000 });
    const down = connectDatabase({
      url: 'postgres://nobody@127.0.0.1:9/none',
      maxConnections: 1,
      statementTimeoutMs: 1000,
    });
    try {
      const notMigrated = await (await buildTestApp(unmigrated.db)).request('/readyz', { method: 'GET' });
      expect([notMigrated.status, await notMigrated.json()]).toEqual([
        503,
        { status: 'unavailable', reason: 'migrations pending' },
      ]);
      const unreachable = await (await buildTestApp(down.db)).request('/readyz', { method: 'GET' });
      expect([unreachable.status, await unreachable.json()]).toEqual([
        503,
        { status: 'unavailable', reason: 'database unreachable' },
      ]);
    } finally {
      await unmigrated.close();
      await down.close();
    }
  });
});
