// The operator CLI as a real process (`bin/webhook-inbox.js`, and once through `npx`): drain, outbox
// list and outbox retry against a real database, with the contract's exit codes (0 done, 1 could not
// run, 2 usage, 3 not found) and the audit row a retry writes in the same transaction.
// Needs a process: `npx webhook-inbox outbox retry` through npx, as an operator types it.
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { runCli } from './helpers/cli.ts';
import { useTestDatabase } from './helpers/database.ts';
import { insertMessages, operatorActionRows, outboxRow } from './helpers/outbox.ts';
import { cleanEnv, run } from './helpers/process.ts';
import { startSink } from './helpers/sink.ts';

const { sql, url } = await useTestDatabase();
const sink = await startSink();

const cli = (args: string[], env: Record<string, string> = { DATABASE_URL: url }) => runCli(args, env);

describe('outbox retry', () => {
  it('sends a dead message back to pending and records who did it (via npx)', async () => {
    const [id] = (await insertMessages(sql, 1, { status: 'dead', attempts: 10 })) as [string];
    await sql`update outbox_messages set last_error = 'http 503', locked_until = now(), locked_by = 'gone'
      where id = ${id}`;
    const before = Date.now();

    const child = run('npx', ['webhook-inbox', 'outbox', 'retry', id, '--operator', 'alice'], {
      ...cleanEnv({ DATABASE_URL: url, LOG_LEVEL: 'silent' }),
    });
    const { code } = await child.exited;
    expect(child.output()).toContain(`retried ${id}`);
    expect(code).toBe(0);

    const row = await outboxRow(sql, id);
    expect(row).toMatchObject({ status: 'pending', attempts: 0, locked_until: null, locked_by: null });
    expect(row?.available_at.getTime()).toBeGreaterThanOrEqual(before - 1000);
    expect(row?.available_at.getTime()).toBeLessThanOrEqual(Date.now());
    const actions = await operatorActionRows(sql, id);
    expect(actions).toHaveLength(1);
    expect(actions[0]).toMatchObject({
      operator: 'alice',
      action: 'retry',
      target_kind: 'outbox',
      before_status: 'dead',
      after_status: 'pending',
    });
  });

  it('retries several at once, one audit row each', async () => {
    const ids = await insertMessages(sql, 2, { status: 'dead', attempts: 3 });
    const result = await cli(['outbox', 'retry', ...ids, '--operator', 'bob']);
    expect(result.code).toBe(0);
    for (const id of ids) {
      expect((await outboxRow(sql, id))?.status).toBe('pending');
      expect(await operatorActionRows(sql, id)).toHaveLength(1);
    }
  });

  it('an unknown id exits 3 and changes nothing, not even the known ones', async () => {
    const [dead] = (await insertMessages(sql, 1, { status: 'dead', attempts: 10 })) as [string];
    const unknown = randomUUID();
    const result = await cli(['outbox', 'retry', dead, unknown, '--operator', 'carol']);
    expect(result.code).toBe(3);
    expect(result.output).toContain(unknown);
    expect(await outboxRow(sql, dead)).toMatchObject({ status: 'dead', attempts: 10 });
    expect(await operatorActionRows(sql, dead)).toEqual([]);
  });

  it('leaves a message that is not dead alone, says so, and exits 0', async () => {
    const [published] = (await insertMessages(sql, 1, { status: 'published' })) as [string];
    const result = await cli(['outbox', 'retry', published, '--operator', 'dave']);
    expect(result.code).toBe(0);
    expect(result.output).toContain(`skipped ${published}: published`);
    expect((await outboxRow(sql, published))?.status).toBe('published');
    expect(await operatorActionRows(sql, published)).toEqual([]);
  });

  it('usage errors exit 2 before touching the database', async () => {
    const [dead] = (await insertMessages(sql, 1, { status: 'dead' })) as [string];
    expect((await cli(['outbox', 'retry', dead])).code).toBe(2);
    expect((await cli(['outbox', 'retry', dead, '--operator', '  '])).code).toBe(2);
    expect((await cli(['outbox', 'retry', 'not-an-id', '--operator', 'erin'])).code).toBe(2);
    expect((await cli(['outbox', 'retry', '--operator', 'erin'])).code).toBe(2);
    expect((await outboxRow(sql, dead))?.status).toBe('dead');
  });
});

describe('outbox list', () => {
  it('lists by status as one JSON document, newest first, without payloads', async () => {
    const ids = await insertMessages(sql, 2, { status: 'dead', payload: { card: 'pan-4242' } });
    const result = await cli(['outbox', 'list', '--status', 'dead', '--limit', '500', '--json']);
    expect(result.code).toBe(0);
    const listed = JSON.parse(result.output) as Array<Record<string, unknown>>;
    expect(listed.every((message) => message.status === 'dead')).toBe(true);
    const ours = listed.filter((message) => ids.includes(String(message.id)));
    expect(ours.map((message) => message.id)).toEqual([...ids].reverse());
    expect(Object.keys(ours[0] ?? {})).toEqual(
      expect.arrayContaining(['id', 'topic', 'deduplication_key', 'status', 'attempts', 'last_error', 'available_at']),
    );
    expect(result.output).not.toContain('pan-4242');
  });

  it('prints a table, and refuses an unknown status or a bad limit with exit 2', async () => {
    const [id] = (await insertMessages(sql, 1)) as [string];
    const table = await cli(['outbox', 'list', '--status', 'pending', '--limit', '1000']);
    expect(table.code).toBe(0);
    expect(table.output.split('\n')[0]).toMatch(/^id\s+status\s+attempts\s+topic/);
    expect(table.output).toContain(id);
    expect((await cli(['outbox', 'list', '--status', 'lost'])).code).toBe(2);
    expect((await cli(['outbox', 'list', '--limit', 'ten'])).code).toBe(2);
  });
});

describe('drain', () => {
  it('publishes what is due, prints a summary, and exits 0 even when some deliveries failed', async () => {
    await sql`update outbox_messages set status = 'published' where status = 'pending'`;
    const [good, bad] = (await insertMessages(sql, 2)) as [string, string];
    sink.respond((request) => ({ status: request.messageId === bad ? 500 : 200 }));
    const result = await cli(['drain'], { DATABASE_URL: url, OUTBOX_TARGET_URL: sink.url });
    expect(result.code).toBe(0);
    expect(result.output).toMatch(/claimed 2: published 1, retried 1, dead 0, released 0/);
    expect((await outboxRow(sql, good))?.status).toBe('published');
    expect(await outboxRow(sql, bad)).toMatchObject({ status: 'pending', attempts: 1, last_error: 'http 500' });
  });
});

describe('every verb', () => {
  it('answers --help with exit 0, without a database', async () => {
    for (const verb of [['drain'], ['outbox', 'list'], ['outbox', 'retry'], ['outbox'], []]) {
      const result = await cli([...verb, '--help'], {});
      expect(result.code).toBe(0);
      expect(result.output).toContain('Usage: webhook-inbox');
    }
  });

  it('exits 1 with a clear line without a database to work on, or when it is unreachable', async () => {
    // No DATABASE_URL and no embedded server running on DATA_DIR.
    const missing = await cli(['outbox', 'list'], { DATA_DIR: 'test/no-such-data-dir' });
    expect(missing.code).toBe(1);
    expect(missing.output).toContain('DATABASE_URL is not set');
    const unreachable = await cli(['drain'], { DATABASE_URL: 'postgres://nobody:hunter2@127.0.0.1:1/none' });
    expect(unreachable.code).toBe(1);
    expect(unreachable.output).toContain('connection refused');
    expect(unreachable.output).not.toContain('hunter2');
  });

  it('an unknown verb is a usage error', async () => {
    expect((await cli(['frobnicate'], {})).code).toBe(2);
  });
});
