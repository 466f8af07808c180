// What an operator learns from a failure or a refusal: a handler's cause (class, SQLSTATE, message)
// in `last_error`, in its failure log line and in the admin API, never the driver's detail; one
// escaped, bounded line whatever the message holds; and every refusal's log line with its reason.
import { sql as drizzleSql, type SQL } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineHandler, type HandlerMap } from '../src/domain/handlers.ts';
import type { Publisher } from '../src/outbox/publishers/publisher.ts';
import { acmeEvent, signedHeaders, uniqueId } from './helpers/acme.ts';
import { buildTestApp } from './helpers/app.ts';
import { useTestDatabase } from './helpers/database.ts';
import { eventRow } from './helpers/facts.ts';
import { buildTestRelay, insertMessages, outboxRow } from './helpers/outbox.ts';
import { buildTestWorker, deliver } from './helpers/worker.ts';

const { sql, db } = await useTestDatabase();
const TOKEN = 'admin-token-for-tests-0123456789';
/** A value the failing SQL is given: it may reach the driver's detail, hint or query, never `last_error`. */
const ROW_VALUE = 'acct-row-value-7f3a';

// A quota check as a domain might write it: the message says what happened, the detail whose row.
await sql.unsafe(`
  create function charge_quota(account text) returns void language plpgsql as $$
  begin
    raise exception 'quota exceeded'
      using detail = format('Key (account)=(%s) is over its limit', account), hint = 'raise it for ' || account;
  end $$`);

const json = (line: string) => JSON.parse(line) as Record<string, unknown>;
const linesOf = (logs: readonly string[], msg: string) => logs.map(json).filter((line) => line.msg === msg);

/** The acme updated handler replaced by one that runs `statement` (and nothing else) in its transaction. */
function running(statement: () => SQL | Error): HandlerMap {
  return {
    acme: {
      'subscription.updated': defineHandler({
        schema: z.unknown(),
        async apply({ tx }) {
          const made = statement();
          if (made instanceof Error) throw made;
          await tx.execute(made);
        },
      }),
    },
  };
}

const quotaExceeded = running(() => drizzleSql`select charge_quota(${ROW_VALUE})`);

describe('a handler whose SQL raises', () => {
  it('keeps class, SQLSTATE and message in last_error, the failure log line and the admin API; never the detail', async () => {
    const test = await buildTestApp(db, { handlers: quotaExceeded, config: { ADMIN_TOKEN: TOKEN } });
    const event = acmeEvent();
    const response = await deliver(test, event);
    expect(response.status).toBe(500);
    expect(await response.text()).toBe('{"error":"processing_failed"}');

    const row = await eventRow(sql, event.id);
    expect(row).toMatchObject({ status: 'failed', attempt_count: 1 });
    expect(row?.last_error).toBe('PostgresError P0001: quota exceeded');

    const [failure] = linesOf(test.logs, 'event not accepted');
    expect(failure).toMatchObject({
      level: 'error',
      provider: 'acme',
      event_id: event.id,
      outcome: 'processing_failed',
      attempt: 1,
      error: row?.last_error,
    });

    const shown = await test.request(`/admin/api/events/acme/${event.id}`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(shown.status).toBe(200);
    expect(((await shown.json()) as { event: Record<string, unknown> }).event).toMatchObject({
      status: 'failed',
      last_error: 'PostgresError P0001: quota exceeded',
    });
    expect(test.logs.join('\n')).not.toContain(ROW_VALUE);
  });

  it('says the same in the async worker: last_error and its failure line', async () => {
    const test = await buildTestApp(db, { config: { PROCESSING_MODE: 'async' } });
    const event = acmeEvent();
    expect((await deliver(test, event)).status).toBe(202);
    const worker = buildTestWorker(db, { handlers: quotaExceeded });
    expect(await worker.worker.work()).toMatchObject({ claimed: 1, failed: 1 });

    const row = await eventRow(sql, event.id);
    expect(row).toMatchObject({
      status: 'failed',
      attempt_count: 1,
      last_error: 'PostgresError P0001: quota exceeded',
    });
    expect(worker.logs.find((line) => line.msg === 'inbox event failed, will retry')).toMatchObject({
      event_id: event.id,
      error: 'PostgresError P0001: quota exceeded',
    });
    expect(JSON.stringify(worker.logs)).not.toContain(ROW_VALUE);
  });

  it('keeps a constraint violation by name without its row, and masks the input a data exception quotes', async () => {
    await sql`create table if not exists quota_accounts (account text primary key)`;
    const cases: Array<[HandlerMap, string]> = [
      [
        running(() => drizzleSql`insert into quota_accounts values (${ROW_VALUE}), (${ROW_VALUE})`),
        'PostgresError 23505: duplicate key value violates unique constraint "quota_accounts_pkey"',
      ],
      [
        running(() => drizzleSql`select ${ROW_VALUE}::uuid`),
        'PostgresError 22P02: invalid input syntax for type uuid: "…"',
      ],
    ];
    for (const [handlers, expected] of cases) {
      const test = await buildTestApp(db, { handlers });
      const event = acmeEvent();
      expect((await deliver(test, event)).status).toBe(500);
      expect((await eventRow(sql, event.id))?.last_error).toBe(expected);
      expect(linesOf(test.logs, 'event not accepted')[0]?.error).toBe(expected);
      expect(test.logs.join('\n')).not.toContain(ROW_VALUE);
    }
  });

  it('escapes control characters and bounds the text to 500 characters, whatever raised it', async () => {
    const long = `line one\nline two\tend\u001b[31m ${'x'.repeat(600)}`;
    const raised = running(() => drizzleSql`select charge_quota_text(${long})`);
    await sql.unsafe(`
      create function charge_quota_text(message text) returns void language plpgsql as $$
      begin raise exception '%', message; end $$`);
    const test = await buildTestApp(db, { handlers: raised });
    const event = acmeEvent();
    expect((await deliver(test, event)).status).toBe(500);
    const stored = (await eventRow(sql, event.id))?.last_error ?? '';
    expect(stored).toHaveLength(500);
    expect(stored.startsWith('PostgresError P0001: line one\\nline two\\tend\\u001b[31m xxx')).toBe(true);
    expect(stored.endsWith('x…')).toBe(true);
    expect(stored).not.toMatch(/\p{Cc}/u);
    expect(linesOf(test.logs, 'event not accepted')[0]?.error).toBe(stored);

    // A JavaScript error with a NUL (which PostgreSQL's text refuses) is still recorded, not a 503.
    const thrown = await buildTestApp(db, { handlers: running(() => new TypeError('bad\u0000state\\here\r\n')) });
    const second = acmeEvent();
    expect((await deliver(thrown, second)).status).toBe(500);
    expect((await eventRow(sql, second.id))?.last_error).toBe('TypeError: bad\\u0000state\\\\here\\r\\n');
  });
});

describe('the relay', () => {
  it("stores and logs a publisher's words as the same escaped line", async () => {
    const [id] = (await insertMessages(sql, 1)) as [string];
    const chatty: Publisher = {
      kind: 'chatty',
      publish: async () => ({ outcome: 'retry', error: 'broker: try later\r\n\u0007please' }),
    };
    const test = buildTestRelay(db, { publisher: chatty });
    await test.relay.drain();
    const expected = 'broker: try later\\r\\n\\u0007please';
    expect(await outboxRow(sql, id)).toMatchObject({ status: 'pending', attempts: 1, last_error: expected });
    expect(linesOf(test.logs, 'outbox publish failed, will retry')[0]).toMatchObject({
      message_id: id,
      error: expected,
    });
  });

  it('keeps only the class of what a publisher threw, and the code under the wrappers of a refused connection', async () => {
    const [thrownId] = (await insertMessages(sql, 1)) as [string];
    const throwing: Publisher = {
      kind: 'throwing',
      publish: async () => {
        throw new RangeError(`cannot serialise ${ROW_VALUE}`);
      },
    };
    await buildTestRelay(db, { publisher: throwing }).relay.drain();
    expect(await outboxRow(sql, thrownId)).toMatchObject({ attempts: 1, last_error: 'publisher RangeError' });

    // As fetch fails when every address of the target refused: the code sits two links down.
    const [refusedId] = (await insertMessages(sql, 1)) as [string];
    const refused = Object.assign(new Error(`connect ECONNREFUSED ${ROW_VALUE}`), { code: 'ECONNREFUSED' });
    const post = async (): Promise<never> => {
      throw new TypeError('fetch failed', { cause: new AggregateError([refused], 'all addresses refused') });
    };
    await buildTestRelay(db, { target: 'http://target.invalid/hook', post }).relay.drain();
    expect(await outboxRow(sql, refusedId)).toMatchObject({
      status: 'pending',
      attempts: 0,
      last_error: 'network ECONNREFUSED',
    });
  });
});

describe('every refusal is logged with its reason', () => {
  const refusals = (logs: readonly string[]) => linesOf(logs, 'event not accepted');

  it('400: the field the schema refused, never its value', async () => {
    const test = await buildTestApp(db);
    // Refused by the sender's envelope, then by the handler's schema.
    const envelope = acmeEvent({ version: -1 });
    const handler = acmeEvent({ data: { id: uniqueId('sub'), status: 'secret-status-value' } });
    for (const event of [envelope, handler]) expect((await deliver(test, event)).status).toBe(400);
    expect(refusals(test.logs)).toEqual([
      expect.objectContaining({ level: 'warn', provider: 'acme', outcome: 'invalid_payload', field: 'version' }),
      expect.objectContaining({ level: 'warn', provider: 'acme', outcome: 'invalid_payload', field: 'data.status' }),
    ]);
    expect(test.logs.join('\n')).not.toContain('secret-status-value');
    expect(await eventRow(sql, handler.id)).toBeUndefined();
  });

  it('413: the limit it hit, whether the length was declared or the body streamed past it', async () => {
    const test = await buildTestApp(db, { config: { MAX_BODY_BYTES: 1024 } });
    const body = JSON.stringify(acmeEvent({ data: { id: 'sub_1', status: 'active', pad: 'x'.repeat(2000) } }));
    const declared = await test.request('/webhooks/acme', { method: 'POST', body, headers: await signedHeaders(body) });
    expect(declared.status).toBe(413);
    const streamed = await test.request('/webhooks/acme', {
      method: 'POST',
      body: new Blob([body]).stream(),
      headers: await signedHeaders(body),
      duplex: 'half',
    } as RequestInit);
    expect(streamed.status).toBe(413);
    const line = { level: 'warn', provider: 'acme', outcome: 'payload_too_large', limit_bytes: 1024 };
    expect(refusals(test.logs)).toEqual([expect.objectContaining(line), expect.objectContaining(line)]);
    expect(test.logs.join('\n')).not.toContain('xxxx');
  });

  it('415: the content type refused, bounded and escaped (null when there was none)', async () => {
    const test = await buildTestApp(db);
    const body = JSON.stringify(acmeEvent());
    const signed = await signedHeaders(body);
    const odd = `text/plain;\tq="\u0085"; ${'p'.repeat(300)}`;
    await test.request('/webhooks/acme', { method: 'POST', body, headers: { ...signed, 'content-type': odd } });
    const { 'content-type': _, ...unlabelled } = signed;
    // Bytes, not a string: a string body would be given a text/plain content type on its way in.
    await test.request('/webhooks/acme', { method: 'POST', body: new TextEncoder().encode(body), headers: unlabelled });
    const [labelled, missing] = refusals(test.logs);
    expect(labelled).toMatchObject({ level: 'warn', provider: 'acme', outcome: 'unsupported_media_type' });
    const logged = String(labelled?.content_type);
    expect(logged).toHaveLength(100);
    expect(logged.startsWith('text/plain;\\tq="\\u0085"; ppp')).toBe(true);
    expect(missing).toMatchObject({ outcome: 'unsupported_media_type', content_type: null });
    expect(test.logs.join('\n')).not.toContain(signed['x-acme-signature']);
  });
});
