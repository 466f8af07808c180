import { describe, expect, it } from 'vitest';
import { runCli as runCliInProcess } from '../src/cli/program.ts';
import { acmeEvent, uniqueId } from './helpers/acme.ts';
import { runCli } from './helpers/cli.ts';
import { useEmptyDatabase, useTestDatabase } from './helpers/database.ts';
import { insertEvent } from './helpers/events.ts';
import { EXACT_NUMBERS, insertExactEvent } from './helpers/exact-payload.ts';
import { eventRow, subscriptionRow } from './helpers/facts.ts';
import { operatorActionRows } from './helpers/outbox.ts';

const { sql, url } = await useTestDatabase();
const empty = await useEmptyDatabase();

const cli = (args: string[], env: Record<string, string> = { DATABASE_URL: url }) => runCli(args, env);

const storeEvent = (status: string, options: { lastError?: string; attempts?: number } = {}) =>
  insertEvent(sql, { status, ...options });

describe('replay', () => {
  it('applies a failed event, records who did it, and exits 0', async () => {
    const { eventId, subscription } = await storeEvent('failed', { lastError: 'ledger down', attempts: 2 });
    const result = await cli(['replay', 'acme', eventId, '--operator', 'alice', '--yes']);
    expect(result.code).toBe(0);
    expect(result.output).toBe(`replayed acme/${eventId}: failed -> completed\n`);
    expect(await eventRow(sql, eventId)).toMatchObject({ status: 'completed', last_error: null, attempt_count: 2 });
    expect(await subscriptionRow(sql, subscription)).toMatchObject({ status: 'past_due', provider_version: '4' });
    const actions = await operatorActionRows(sql, `acme/${eventId}`);
    expect(actions).toHaveLength(1);
    expect(actions[0]).toMatchObject({
      operator: 'alice',
      action: 'replay',
      target_kind: 'event',
      before_status: 'failed',
      after_status: 'completed',
    });
  });

  it('replaying a completed event exits 0, is recorded, and applies nothing twice', async () => {
    const { eventId, subscription } = await storeEvent('failed');
    expect((await cli(['replay', 'acme', eventId, '--operator', 'bob', '--yes'])).code).toBe(0);
    const applied = await subscriptionRow(sql, subscription);
    const messages = () => sql`select id from outbox_messages where deduplication_key like ${`acme:${eventId}:%`}`;
    expect(await messages()).toHaveLength(1);

    const again = await cli(['replay', 'acme', eventId, '--operator', 'bob', '--yes']);
    expect(again.code).toBe(0);
    expect(again.output).toContain(`not replayed acme/${eventId}: it was completed`);
    expect(await subscriptionRow(sql, subscription)).toEqual(applied);
    expect(await messages()).toHaveLength(1);
    const actions = await operatorActionRows(sql, `acme/${eventId}`);
    expect(actions.map((action) => [action.before_status, action.after_status])).toEqual([
      ['failed', 'completed'],
      ['completed', 'completed'],
    ]);
  });

  it('a dead-lettered event that fails again stays replayable (failed, not dead), says so and exits 4', async () => {
    const eventId = uniqueId('evt');
    // Valid envelope, but data the handler's schema refuses: applying it cannot succeed.
    const payload = { ...acmeEvent({ id: eventId }), data: { id: 'sub_x', status: 'weird' } };
    await sql`insert into webhook_events (provider, event_id, event_type, status, payload, attempt_count)
      values ('acme', ${eventId}, 'subscription.updated', 'dead_letter', ${sql.json(payload)}, 10)`;
    const result = await cli(['replay', 'acme', eventId, '--operator', 'carol', '--yes']);
    expect(result.code).toBe(4);
    const row = await eventRow(sql, eventId);
    expect(row).toMatchObject({ status: 'failed', attempt_count: 11 });
    expect(result.output).toBe(`replay failed acme/${eventId}: dead_letter -> failed: ${row?.last_error}\n`);
    const json = await cli(['replay', 'acme', eventId, '--operator', 'carol', '--yes', '--json']);
    expect(json.code).toBe(4);
    expect(JSON.parse(json.output)).toEqual([
      expect.objectContaining({ before: 'failed', after: 'failed', applied: false, reason: row?.last_error }),
    ]);
    expect((await operatorActionRows(sql, `acme/${eventId}`))[0]).toMatchObject({
      before_status: 'dead_letter',
      after_status: 'failed',
    });
  });

  it('an unknown id exits 3 and replays none of the known ones', async () => {
    const { eventId } = await storeEvent('failed');
    const result = await cli(['replay', 'acme', eventId, 'evt_nope', '--operator', 'dave', '--yes']);
    expect(result.code).toBe(3);
    expect(result.output).toContain('acme/evt_nope');
    expect((await eventRow(sql, eventId))?.status).toBe('failed');
    expect(await operatorActionRows(sql, `acme/${eventId}`)).toEqual([]);
  });

  it('without a terminal and without --yes it refuses with exit 2 and changes nothing', async () => {
    const { eventId } = await storeEvent('failed');
    const result = await cli(['replay', 'acme', eventId, '--operator', 'erin']);
    expect(result.code).toBe(2);
    expect(result.output).toContain('--yes');
    expect((await eventRow(sql, eventId))?.status).toBe('failed');
    expect((await cli(['replay', 'acme', eventId, '--yes'])).code).toBe(2);
    expect((await cli(['replay', 'nowhere', eventId, '--operator', 'erin', '--yes'])).code).toBe(2);
  });
});

describe('replay on a terminal', () => {
  /** The program in this process with a scripted terminal: `answer` is typed at the prompt. */
  async function interactive(args: string[], answer: string) {
    const lines: string[] = [];
    const questions: string[] = [];
    const code = await runCliInProcess(args, {
      env: { DATABASE_URL: url, LOG_LEVEL: 'silent' },
      out: (line) => lines.push(line),
      err: (line) => lines.push(line),
      ask: async (question) => {
        questions.push(question);
        return answer;
      },
    });
    return { code, output: lines.join('\n'), questions };
  }

  it('shows the state and asks; anything but yes replays nothing', async () => {
    const { eventId } = await storeEvent('failed', { lastError: 'ledger down', attempts: 1 });
    const declined = await interactive(['replay', 'acme', eventId, '--operator', 'frank'], 'n');
    expect(declined.code).toBe(0);
    expect(declined.questions).toEqual(['Replay 1 event(s) of acme? [y/N] ']);
    expect(declined.output).toMatch(new RegExp(`${eventId}\\s+failed\\s+1\\s+apply again\\s+ledger down`));
    expect(declined.output).toContain('nothing was replayed');
    expect((await eventRow(sql, eventId))?.status).toBe('failed');
    expect(await operatorActionRows(sql, `acme/${eventId}`)).toEqual([]);

    const accepted = await interactive(['replay', 'acme', eventId, '--operator', 'frank'], 'y');
    expect(accepted.code).toBe(0);
    expect((await eventRow(sql, eventId))?.status).toBe('completed');
  });
});

describe('events', () => {
  it('lists by status and provider as one JSON document, without payloads', async () => {
    const { eventId } = await storeEvent('parked');
    const result = await cli(['events', 'list', '--status', 'parked', '--provider', 'acme', '--since', '1h', '--json']);
    expect(result.code).toBe(0);
    const listed = JSON.parse(result.output) as Array<Record<string, unknown>>;
    expect(listed.every((event) => event.status === 'parked')).toBe(true);
    expect(listed.map((event) => event.event_id)).toContain(eventId);
    expect(listed[0]).not.toHaveProperty('payload');
    const table = await cli(['events', 'list', '--limit', '5']);
    expect(table.output.split('\n')[0]).toMatch(/^provider\s+event_id\s+type\s+status/);
    expect((await cli(['events', 'list', '--status', 'lost'])).code).toBe(2);
    expect((await cli(['events', 'list', '--since', 'yesterday'])).code).toBe(2);
  });

  it('shows one event, its payload only with --payload, and exits 3 when unknown', async () => {
    const { eventId, subscription } = await storeEvent('failed', { lastError: 'boom', attempts: 1 });
    const plain = await cli(['events', 'show', 'acme', eventId, '--json']);
    expect(plain.code).toBe(0);
    expect(JSON.parse(plain.output)).toMatchObject({
      event_id: eventId,
      status: 'failed',
      attempts: 1,
      last_error: 'boom',
    });
    expect(plain.output).not.toContain(subscription);
    const withPayload = await cli(['events', 'show', 'acme', eventId, '--payload']);
    expect(withPayload.output).toContain(subscription);
    expect(withPayload.output).toMatch(/last_error\s+boom/);
    expect((await cli(['events', 'show', 'acme', 'evt_nope'])).code).toBe(3);
  });
});

describe('migrate', () => {
  it('prints a payload as JSON, indented, with line breaks and every number as stored', async () => {
    const { eventId } = await insertExactEvent(sql);
    const shown = await cli(['events', 'show', 'acme', eventId, '--payload']);
    expect(shown.code).toBe(0);
    const payload = shown.output.slice(shown.output.indexOf('\npayload\n') + '\npayload\n'.length);
    // A JSON document over several lines, not one line of escapes nor a JSON string of JSON.
    expect(payload).not.toContain('\\u000a');
    expect(payload.split('\n').length).toBeGreaterThan(5);
    expect(payload.trimStart().startsWith('{')).toBe(true);
    expect((JSON.parse(payload) as { id: string }).id).toBe(eventId);
    // The string's own line break stays escaped, as JSON requires.
    expect(payload).toContain('"note": "line one\\nline two"');
    for (const digits of EXACT_NUMBERS) expect(payload).toContain(digits);
    const json = await cli(['events', 'show', 'acme', eventId, '--payload', '--json']);
    for (const digits of EXACT_NUMBERS) expect(json.output).toContain(digits);
    expect((JSON.parse(json.output) as { payload: { id: string } }).payload.id).toBe(eventId);
  });

  it('migrates an empty database, then the other verbs run on it', async () => {
    expect((await cli(['events', 'list'], { DATABASE_URL: empty.url })).code).toBe(1);
    const result = await cli(['migrate'], { DATABASE_URL: empty.url });
    expect(result.output).toContain('migrations applied: 0000_init, 0001_');
    expect(result.code).toBe(0);
    // Again: nothing pending, and it says so rather than claiming to have applied anything.
    const again = await cli(['migrate'], { DATABASE_URL: empty.url });
    expect(again.code).toBe(0);
    expect(again.output).toContain('nothing to migrate: the database was up to date');
    expect(again.output).not.toContain('migrations applied');
    expect(JSON.parse((await cli(['migrate', '--json'], { DATABASE_URL: empty.url })).output)).toEqual({
      migrated: true,
      applied: [],
    });
    expect((await cli(['events', 'list'], { DATABASE_URL: empty.url })).code).toBe(0);
  });

  it('every new verb answers --help with exit 0', async () => {
    for (const verb of [['events'], ['events', 'list'], ['events', 'show'], ['replay'], ['migrate']]) {
      const result = await cli([...verb, '--help'], {});
      expect(result.code).toBe(0);
      expect(result.output).toContain('Usage: webhook-inbox');
    }
  });
});
