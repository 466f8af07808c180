// Sender-chosen text in the CLI's human output (issue 16, item 9): signed event ids and types holding
// escape sequences, newlines and bidirectional controls are shown escaped, never sent to the terminal
// as they are, while `--json` keeps them exact.
import type postgres from 'postgres';
import { describe, expect, it } from 'vitest';
import { runCli } from '../src/cli/program.ts';
import { acmeEvent } from './helpers/acme.ts';
import { useTestDatabase } from './helpers/database.ts';

const { sql, url } = await useTestDatabase();

async function cli(args: string[]) {
  const lines: string[] = [];
  const code = await runCli(args, {
    env: { DATABASE_URL: url, LOG_LEVEL: 'silent' },
    out: (line) => lines.push(line),
    err: (line) => lines.push(line),
  });
  return { code, output: lines.join('\n') };
}

/** Anything that acts on a terminal: C0, DEL, C1, bidi controls (test output without its line breaks). */
const CONTROL = /[\p{Cc}\u202a-\u202e\u2066-\u2069]/u;
const controlled = (output: string) => CONTROL.test(output.replaceAll('\n', ''));

const run = `term${Date.now().toString(36)}`;
const HOSTILE_ID = `${run}_\u001b[2J\u001b[31mred\u0007`;
const FORGED_ID = `${run}_x\nacme  ${run}_forged  subscription.updated  completed`;
const HOSTILE_TYPE = 'sub\u001b]0;owned\u0007\u202escript';

async function store(eventId: string, status: string, type = 'subscription.updated') {
  const event = acmeEvent({ id: eventId, type, data: { id: `sub_${run}`, status: 'active', note: 'c1\u009b31m' } });
  await sql`insert into webhook_events (provider, event_id, event_type, status, payload, attempt_count, last_error)
    values ('acme', ${eventId}, ${type}, ${status}, ${sql.json(event as unknown as postgres.JSONValue)}, 1,
      ${'handler said \u001b[1mno'})`;
}

describe('human output escapes what senders chose; --json stays exact', () => {
  it('events list, events show and replay print no terminal controls', async () => {
    await store(HOSTILE_ID, 'parked', HOSTILE_TYPE);
    await store(FORGED_ID, 'failed');

    const listed = await cli(['events', 'list', '--id', run]);
    expect(listed.code).toBe(0);
    expect(controlled(listed.output), 'terminal control in output').toBe(false);
    // One header and one line per event: a newline in an id cannot forge a row.
    expect(listed.output.split('\n')).toHaveLength(3);
    expect(listed.output).toContain(`"${run}_\\x1b[2J\\x1b[31mred\\x07"`);
    expect(listed.output).toContain(`"${run}_x\\nacme  ${run}_forged`);
    expect(listed.output).toContain('"sub\\x1b]0;owned\\x07\\u202escript"');

    const json = await cli(['events', 'list', '--id', run, '--json']);
    const events = JSON.parse(json.output) as Array<{ event_id: string; event_type: string }>;
    expect(events.map((event) => event.event_id).sort()).toEqual([FORGED_ID, HOSTILE_ID].sort());
    expect(events.find((event) => event.event_id === HOSTILE_ID)?.event_type).toBe(HOSTILE_TYPE);

    const shown = await cli(['events', 'show', 'acme', HOSTILE_ID, '--payload']);
    expect(shown.code).toBe(0);
    expect(controlled(shown.output), 'terminal control in output').toBe(false);
    expect(shown.output).toContain('"c1\\u009b31m"');
    const shownJson = await cli(['events', 'show', 'acme', HOSTILE_ID, '--payload', '--json']);
    expect((JSON.parse(shownJson.output) as { payload: { data: { note: string } } }).payload.data.note).toBe(
      'c1\u009b31m',
    );

    const missing = await cli(['events', 'show', 'acme', `${run}\u001b[2J`]);
    expect(missing.code).toBe(3);
    expect(controlled(missing.output), 'terminal control in output').toBe(false);

    const replayed = await cli(['replay', 'acme', FORGED_ID, '--operator', 'alice', '--yes']);
    expect(replayed.code).toBe(0);
    expect(controlled(replayed.output), 'terminal control in output').toBe(false);
    expect(replayed.output.split('\n')).toHaveLength(1);
  });

  it('a plain id is printed as it is, so it can be copied into the next command', async () => {
    const plain = `${run}_plain.id-1`;
    await store(plain, 'completed');
    const listed = await cli(['events', 'list', '--id', plain]);
    expect(listed.output.split('\n')[1]).toMatch(new RegExp(`^acme\\s+${plain.replaceAll('.', '\\.')}\\s`));
  });
});
