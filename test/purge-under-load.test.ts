// Retention while the intake runs flat out: a purge of thousands of old rows beside a real service
// taking deliveries. Every delivery still gets its 200 and its row, the purge removes only old
// finished rows, and the deduplication keys it keeps still answer duplicates.
// Needs a process: the built service takes deliveries while a purge runs beside it.
import { describe, expect, it } from 'vitest';
import { purgeByRetention } from '../src/inbox/retention.ts';
import { acmeEvent, signedHeaders, TEST_SECRET, uniqueId } from './helpers/acme.ts';
import { useTestDatabase } from './helpers/database.ts';
import { patience } from './helpers/patience.ts';
import { startListeningService } from './helpers/process.ts';

const { sql, db, url } = await useTestDatabase();

describe('purge during full intake load', () => {
  it('never delays or loses a delivery, and removes only old finished rows', async () => {
    // 6,000 finished rows 40 days old (deleted), 500 finished 10 days old (payload nulled), and old
    // rows that are not finished (kept whole).
    await sql`insert into webhook_events (provider, event_id, event_type, status, payload, received_at, completed_at)
      select 'acme', 'old_' || i, 'subscription.updated', 'completed', '{"id":"x"}',
        now() - interval '40 days', now() - interval '40 days' from generate_series(1, 6000) as i`;
    await sql`insert into webhook_events (provider, event_id, event_type, status, payload, received_at, completed_at)
      select 'acme', 'recent_' || i, 'subscription.updated', 'completed', '{"id":"x"}',
        now() - interval '10 days', now() - interval '10 days' from generate_series(1, 500) as i`;
    for (const status of ['received', 'failed', 'parked'] as const) {
      await sql`insert into webhook_events (provider, event_id, event_type, status, payload, received_at)
        values ('acme', ${`waiting_${status}`}, 'subscription.updated', ${status}, '{"id":"x"}', now() - interval '90 days')`;
    }

    const service = await startListeningService({
      DATABASE_URL: url,
      ACME_WEBHOOK_SECRET: TEST_SECRET,
      // A delivery slowed by a busy CPU must not be answered 503: whether the purge delayed one is
      // read from the lock waits below, not from the clock.
      HANDLER_DEADLINE_MS: String(patience(30_000)),
    });
    try {
      const events = Array.from({ length: 600 }, () =>
        acmeEvent({ created: Math.floor(Date.now() / 1000), data: { id: uniqueId('sub'), status: 'active' } }),
      );
      let next = 0;
      const statuses: number[] = [];
      const deliver = async () => {
        for (let index = next++; index < events.length; index = next++) {
          const body = JSON.stringify(events[index]);
          const response = await fetch(`${service.origin}/webhooks/acme`, {
            method: 'POST',
            body,
            headers: await signedHeaders(body, { timestamp: Math.floor(Date.now() / 1000) }),
          });
          await response.text();
          statuses.push(response.status);
        }
      };
      // What "never delays" stands for, whatever the machine's speed: no statement of this database is
      // ever seen waiting for a lock (the purge's rows and the deliveries' never meet). A relation
      // extension wait is inserts growing the table, not the purge.
      const lockWaits: string[] = [];
      let sampling = true;
      const sampler = (async () => {
        while (sampling) {
          const rows = await sql<{ wait: string; query: string }[]>`select wait_event as wait, query
            from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'
              and wait_event <> 'extend'`;
          lockWaits.push(...rows.map((row) => `${row.wait}: ${row.query}`));
          await new Promise((resolve) => setTimeout(resolve, 5));
        }
      })();
      const purging = purgeByRetention(
        db,
        { PAYLOAD_RETENTION_DAYS: 7, EVENT_RETENTION_DAYS: 30 },
        { nowMs: () => Date.now(), budgetMs: 60_000, batchSize: 500 },
      );
      const [summary] = await Promise.all([purging, ...Array.from({ length: 16 }, deliver)]).finally(() => {
        sampling = false;
      });
      await sampler;

      // Every one answered 200 within the service's request deadline, and none waited on the purge.
      expect(statuses.filter((status) => status !== 200)).toEqual([]);
      expect(lockWaits).toEqual([]);
      expect(summary).toMatchObject({ rowsDeleted: 6000, payloadsNulled: 500, stoppedBy: 'drained' });

      const [facts] = await sql<{ fresh: number; old: number; nulled: number; waiting: number }[]>`
        select count(*) filter (where event_id like 'evt_%')::int as fresh,
               count(*) filter (where event_id like 'old_%')::int as old,
               count(*) filter (where event_id like 'recent_%' and payload is null)::int as nulled,
               count(*) filter (where event_id like 'waiting_%' and payload is not null)::int as waiting
        from webhook_events`;
      expect(facts).toEqual({ fresh: 600, old: 0, nulled: 500, waiting: 3 });

      // A purged payload keeps its key: a redelivery is still a duplicate.
      const redelivered = JSON.stringify({ ...acmeEvent({ created: Math.floor(Date.now() / 1000) }), id: 'recent_1' });
      const again = await fetch(`${service.origin}/webhooks/acme`, {
        method: 'POST',
        body: redelivered,
        headers: await signedHeaders(redelivered, { timestamp: Math.floor(Date.now() / 1000) }),
      });
      expect(await again.text()).toBe('{"received":true,"duplicate":true}');
    } finally {
      service.child.kill('SIGTERM');
      await service.exited;
    }
  });
});
