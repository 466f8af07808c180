// The async inbox's operator verbs as real processes: `work` (one worker pass), `sweep` (expired
// leases back to received) and `purge` (retention), with their summaries and the contract's exit
// codes (0 done, also when events failed; 1 could not run; 2 usage).
import { describe, expect, it } from 'vitest';
import { acmeEvent } from './helpers/acme.ts';
import { runCli } from './helpers/cli.ts';
import { useTestDatabase } from './helpers/database.ts';
import { eventRow } from './helpers/facts.ts';

const { sql, url } = await useTestDatabase();

// An empty DATA_DIR unless given (runCli): "without a database" must hold while a developer's
// `npm start` serves the checkout's own .data.
const cli = (args: string[], env: Record<string, string> = { DATABASE_URL: url }) => runCli(args, env);

/** An event stored as the async intake stores it, due now by the database's clock. */
async function storeReceived(event = acmeEvent(), status = 'received'): Promise<string> {
  await sql`insert into webhook_events (provider, event_id, event_type, status, payload, available_at)
    values ('acme', ${event.id}, ${event.type}, ${status}::webhook_event_status, ${JSON.stringify(event)}::text::jsonb, now() - interval '1 second')`;
  return event.id;
}

describe('inbox verbs', () => {
  it('work applies what is due, dead-letters what can never apply, prints a summary and exits 0', async () => {
    const good = await storeReceived();
    // Fails its handler's schema: a permanent failure, dead-lettered at once.
    const bad = await storeReceived(acmeEvent({ data: { id: 'sub_x', status: 'sideways' } }));
    const result = await cli(['work']);
    expect(result.code).toBe(0);
    expect(result.output).toMatch(/claimed 2: completed 1, .*dead-lettered 1/);
    expect((await eventRow(sql, good))?.status).toBe('completed');
    expect(await eventRow(sql, bad)).toMatchObject({ status: 'dead_letter', attempt_count: 1 });

    const json = await cli(['work', '--json']);
    expect(JSON.parse(json.output)).toMatchObject({ claimed: 0, stoppedBy: 'drained' });
  });

  it('sweep returns expired leases to received and says how many', async () => {
    const id = await storeReceived(acmeEvent(), 'processing');
    await sql`update webhook_events set locked_by = 'gone', locked_until = now() - interval '1 minute' where event_id = ${id}`;
    const result = await cli(['sweep']);
    expect(result.code).toBe(0);
    expect(result.output).toMatch(/swept 1 expired lease/);
    expect(await eventRow(sql, id)).toMatchObject({ status: 'received', attempt_count: 0 });
    await cli(['work']);
  });

  it('purge reports what it nulled and deleted', async () => {
    const id = await storeReceived();
    await sql`update webhook_events set status = 'completed', completed_at = now() - interval '8 days' where event_id = ${id}`;
    const result = await cli(['purge', '--json']);
    expect(result.code).toBe(0);
    expect(JSON.parse(result.output)).toMatchObject({ payloadsNulled: 1, rowsDeleted: 0 });
    expect(await eventRow(sql, id)).toMatchObject({ status: 'completed', payload: null });
  });

  it('exits 2 on a bad option and 1 without a database', async () => {
    expect((await cli(['work', '--budget-ms', 'soon'])).code).toBe(2);
    expect((await cli(['purge'], {})).code).toBe(1);
  });
});
