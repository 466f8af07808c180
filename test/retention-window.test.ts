// Retention in small batches at the edge of the window: a row is the deduplication key of its
// event, so one finished a minute inside EVENT_RETENTION_DAYS must survive every batch, while
// redeliveries of it arrive during the purge. Rows finished a minute outside go, rows with work
// ahead or a content digest stay, payloads go after PAYLOAD_RETENTION_DAYS, and the event
// counters follow every deletion.
import { describe, expect, it } from 'vitest';
import { purgeByRetention } from '../src/inbox/retention.ts';
import { countEventsFromCounters } from '../src/ops/reads/event-counts.ts';
import { useTestDatabase } from './helpers/database.ts';

const { sql, db } = await useTestDatabase();
const DAY_MS = 86_400_000;
const config = { EVENT_RETENTION_DAYS: 30, PAYLOAD_RETENTION_DAYS: 7 };

interface Row {
  id: string;
  status: string;
  receivedAgoMs: number;
  completedAgoMs: number | null;
  digest?: boolean;
}

describe('retention at the edge of the window', () => {
  it('never deletes a key inside the window, whatever the batches and the redeliveries meanwhile', async () => {
    const nowMs = Date.now();
    const minute = 60_000;
    const rows: Row[] = [
      ...Array.from({ length: 60 }, (_, i) => ({
        id: `expired_${i}`,
        status: i % 2 === 0 ? 'completed' : 'ignored',
        receivedAgoMs: 30 * DAY_MS + minute + i * 1000,
        completedAgoMs: 30 * DAY_MS + minute + i * 1000,
      })),
      ...Array.from({ length: 60 }, (_, i) => ({
        id: `inside_${i}`,
        status: 'completed',
        receivedAgoMs: 30 * DAY_MS - minute - i * 1000,
        completedAgoMs: 30 * DAY_MS - minute - i * 1000,
      })),
      // Received long ago, finished inside the window (it was retried for days): kept.
      { id: 'late_finish', status: 'completed', receivedAgoMs: 45 * DAY_MS, completedAgoMs: 10 * DAY_MS },
      { id: 'dead_old', status: 'dead_letter', receivedAgoMs: 31 * DAY_MS, completedAgoMs: 31 * DAY_MS },
      // Work ahead of them, or only a digest keeps them from applying twice: kept whatever their age.
      { id: 'failed_old', status: 'failed', receivedAgoMs: 90 * DAY_MS, completedAgoMs: null },
      { id: 'parked_old', status: 'parked', receivedAgoMs: 90 * DAY_MS, completedAgoMs: null },
      { id: 'received_old', status: 'received', receivedAgoMs: 90 * DAY_MS, completedAgoMs: null },
      { id: 'digest_old', status: 'completed', receivedAgoMs: 90 * DAY_MS, completedAgoMs: 90 * DAY_MS, digest: true },
      { id: 'fresh', status: 'completed', receivedAgoMs: 6 * DAY_MS, completedAgoMs: 6 * DAY_MS },
    ];
    for (const row of rows) {
      await sql`insert into webhook_events (provider, event_id, event_type, status, payload, received_at, completed_at, content_digest)
        values ('stripe', ${row.id}, 'invoice.paid', ${row.status}, '{"id":"x"}'::jsonb,
          ${new Date(nowMs - row.receivedAgoMs).toISOString()},
          ${row.completedAgoMs === null ? null : new Date(nowMs - row.completedAgoMs).toISOString()},
          ${row.digest ? `digest_${row.id}` : null})`;
    }

    // Redeliveries of every key inside the window while the purge runs: each must find its key.
    let purging = true;
    let redeliveries = 0;
    const redeliver = async () => {
      while (purging) {
        for (const row of rows.filter((candidate) => candidate.id.startsWith('inside_'))) {
          const inserted = await sql`insert into webhook_events (provider, event_id, event_type, status)
            values ('stripe', ${row.id}, 'invoice.paid', 'received') on conflict do nothing returning 1`;
          expect(inserted.length, row.id).toBe(0);
          redeliveries++;
        }
      }
    };
    const redelivering = redeliver();
    const summary = await purgeByRetention(db, config, { nowMs: () => nowMs, budgetMs: 60_000, batchSize: 7 });
    purging = false;
    await redelivering;
    expect(redeliveries).toBeGreaterThan(0);
    expect(summary.rowsDeleted).toBe(61);
    expect(summary.batches).toBeGreaterThan(9);

    const left = await sql<{ id: string; payload: unknown }[]>`select event_id as id, payload from webhook_events`;
    const kept = new Map(left.map((row) => [row.id, row.payload]));
    for (const row of rows) {
      const expired = row.id.startsWith('expired_') || row.id === 'dead_old';
      expect(kept.has(row.id), row.id).toBe(!expired);
    }
    // Payloads of finished rows older than a week are gone; the key stays.
    expect(kept.get('inside_0')).toBeNull();
    expect(kept.get('digest_old')).toBeNull();
    expect(kept.get('late_finish')).toBeNull();
    expect(kept.get('fresh')).toEqual({ id: 'x' });
    expect(kept.get('failed_old')).toEqual({ id: 'x' });

    const [truth] = await sql<{ counts: Record<string, number> }[]>`select jsonb_object_agg(status, n) as counts
      from (select status::text, count(*)::int as n from webhook_events group by 1) s`;
    expect(await countEventsFromCounters(db, {})).toEqual(truth?.counts);
  });
});
