// The backlog gate (src/inbox/accept.ts) on its own: the bound is "more than INBOX_MAX_BACKLOG
// `received` rows", one count is trusted for BACKLOG_CHECK_TTL_MS of the app's clock (and no longer
// once that clock steps back), and a count that fails is a 503 of its own that the next check tries
// again. Real PostgreSQL; time moves through the injected clock.
import { describe, expect, it } from 'vitest';
import { connectDatabase } from '../src/db/client.ts';
import { BACKLOG_CHECK_TTL_MS, backlogGate } from '../src/inbox/accept.ts';
import { AppError } from '../src/lib/errors.ts';
import { TEST_NOW_MS, uniqueId } from './helpers/acme.ts';
import { useTestDatabase } from './helpers/database.ts';

/** Counts every `received` row, so the file has a database of its own. */
const { sql, db } = await useTestDatabase();

async function addReceived(count: number): Promise<void> {
  for (let i = 0; i < count; i++) {
    await sql`insert into webhook_events (provider, event_id, event_type, status, payload)
      values ('acme', ${uniqueId('evt_backlog')}, 'test.event', 'received', '{}'::jsonb)`;
  }
}

/** The reason a check was refused with, or 'passed'. */
async function outcome(check: Promise<void>): Promise<string> {
  try {
    await check;
    return 'passed';
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    expect((error as AppError).code).toBe('unavailable');
    return String((error as AppError).why.reason);
  }
}

describe('backlog gate', () => {
  it('refuses above the bound, not at it, trusting a count for its TTL and not once the clock steps back', async () => {
    await sql`delete from webhook_events`;
    let now = TEST_NOW_MS;
    const gate = backlogGate(2, () => now);
    await addReceived(2);
    expect(await outcome(gate.check(db))).toBe('passed');

    // The count is trusted at the same instant and until the TTL's last millisecond.
    await addReceived(1);
    expect(await outcome(gate.check(db))).toBe('passed');
    now += BACKLOG_CHECK_TTL_MS - 1;
    expect(await outcome(gate.check(db))).toBe('passed');
    now += 1;
    expect(await outcome(gate.check(db))).toBe('backlog_full');

    // A clock that stepped back counts again rather than trust a count from its future.
    await sql`delete from webhook_events`;
    now -= 1;
    expect(await outcome(gate.check(db))).toBe('passed');
  });

  it('answers a failed count with its own 503, and counts again at the next check', async () => {
    await sql`delete from webhook_events`;
    const gate = backlogGate(2, () => TEST_NOW_MS);
    const unreachable = connectDatabase({
      url: 'postgres://nobody@127.0.0.1:1/none',
      maxConnections: 1,
      statementTimeoutMs: 1000,
    });
    try {
      expect(await outcome(gate.check(unreachable.db))).toBe('database_unavailable');
    } finally {
      await unreachable.close();
    }
    await addReceived(3);
    expect(await outcome(gate.check(db))).toBe('backlog_full');
  });
});
