// The dashboard overview's figures, read back from rows with known times: events received per
// bucket by status, and the backlog with its oldest age at each bucket's end, rebuilt from
// received_at and completed_at (parked events aside).
import { describe, expect, it } from 'vitest';
import { readOverview, windowEndingAt } from '../src/ops/reads/overview.ts';
import { useTestDatabase } from './helpers/database.ts';

const { sql, db } = await useTestDatabase();
const T0 = Date.UTC(2026, 0, 1, 12, 0, 0);
const at = (seconds: number) => new Date(T0 + seconds * 1000);

async function row(id: string, status: string, receivedS: number, completedS: number | null) {
  await sql`insert into webhook_events (provider, event_id, event_type, status, payload, received_at, completed_at)
    values ('acme', ${id}, 'subscription.updated', ${status}, '{}'::jsonb, ${at(receivedS)},
      ${completedS === null ? null : at(completedS)})`;
}

describe('overview', () => {
  it('counts arrivals per bucket and rebuilds the backlog and its oldest age at each bucket end', async () => {
    await row('a', 'completed', 10, 70);
    await row('b', 'failed', 30, null);
    await row('c', 'completed', -120, 150);
    await row('d', 'completed', 100, 100);
    await row('e', 'parked', 20, null);
    await row('f', 'received', 200, null);
    await row('old', 'completed', -600, -500);

    const nowMs = T0 + 270_000;
    const window = windowEndingAt(nowMs, 60_000, 5);
    expect(window).toEqual({ fromMs: T0, bucketMs: 60_000, buckets: 5 });
    const overview = await readOverview(db, window, nowMs);

    expect(overview.received[0]).toMatchObject({ completed: 1, failed: 1, parked: 1, pending: 0 });
    expect(overview.received[1]).toMatchObject({ completed: 1 });
    expect(overview.received[3]).toMatchObject({ pending: 1 });
    expect(overview.received.reduce((sum, bucket) => sum + bucket.completed, 0)).toBe(2);

    // Ends at 60, 120, 180, 240 s and now (270 s).
    expect(overview.backlog).toEqual([
      { events: 3, oldestSeconds: 180 },
      { events: 2, oldestSeconds: 240 },
      { events: 1, oldestSeconds: 150 },
      { events: 2, oldestSeconds: 210 },
      { events: 2, oldestSeconds: 240 },
    ]);
  });
});

/** The same figures read straight from the rows, bucket by bucket: what the overview must equal. */
async function fromRows(window: { fromMs: number; bucketMs: number; buckets: number }, nowMs: number) {
  const rows = await sql<
    { provider: string; status: string; received: Date; completed: Date | null }[]
  >`select provider, status::text as status, received_at as received, completed_at as completed from webhook_events`;
  const unfinished = new Set(['received', 'processing', 'failed']);
  const minute = (ms: number) => Math.floor(ms / 60_000);
  const received = Array.from({ length: window.buckets }, () => ({}) as Record<string, number>);
  for (const row of rows) {
    const i = Math.floor((row.received.getTime() - window.fromMs) / window.bucketMs);
    const outcome = row.status === 'received' || row.status === 'processing' ? 'pending' : row.status;
    const bucket = received[i];
    if (bucket !== undefined) bucket[outcome] = (bucket[outcome] ?? 0) + 1;
  }
  const oldestNotDone = Math.min(
    ...rows.filter((row) => unfinished.has(row.status)).map((row) => row.received.getTime()),
  );
  const backlog = received.map((_, i) => {
    const at = Math.min(window.fromMs + (i + 1) * window.bucketMs, nowMs);
    const notDone = rows.filter((row) => unfinished.has(row.status) && row.received.getTime() < at);
    // Done later: finished in a later minute than it arrived in, after the window began, and waiting at `at`.
    const waiting = rows.filter(
      (row) =>
        row.completed !== null &&
        minute(row.completed.getTime()) !== minute(row.received.getTime()) &&
        row.completed.getTime() > window.fromMs &&
        row.received.getTime() <= at &&
        row.completed.getTime() > at,
    );
    const ages = [
      ...waiting.map((row) => (at - row.received.getTime()) / 1000),
      notDone.length > 0 ? (at - oldestNotDone) / 1000 : 0,
    ];
    return { events: notDone.length + waiting.length, oldestSeconds: Math.max(0, ...ages) };
  });
  return { received, backlog };
}

describe('overview against the rows', () => {
  it('equals a reading of the rows, bucket by bucket, for the hour and the day windows', async () => {
    await sql`delete from webhook_events`;
    // Three days of events ending now, every status, some done seconds or hours after they arrived
    // (across minutes, buckets and the window's start), some in the current, unfinished minute.
    const nowMs = T0 + 2 * 86_400_000 + 37 * 60_000 + 41_500;
    await sql`insert into webhook_events (provider, event_id, event_type, status, payload, received_at, completed_at)
      select (array['stripe', 'github', 'acme'])[1 + g % 3], 'ev' || g, 'push', s.status::webhook_event_status, '{}'::jsonb,
        r.at,
        case when s.status in ('completed', 'ignored', 'dead_letter')
          then least(${new Date(nowMs)}::timestamptz,
            r.at + (array[0.02, 5, 59, 61, 700, 5400, 30000])[1 + g % 7] * interval '1 second') end
      from generate_series(1, 6000) g,
        lateral (select ${new Date(nowMs)}::timestamptz - ((g * 7919) % 259200) * interval '1 second'
          - (g % 997) * interval '1 millisecond' as at) r,
        lateral (select (array['completed', 'completed', 'completed', 'ignored', 'received', 'processing',
          'failed', 'parked', 'dead_letter'])[1 + (g / 7) % 9] as status) s`;
    // A clock ahead of this one (another replica's) can store arrivals after the window: never drawn.
    await sql`insert into webhook_events (provider, event_id, event_type, status, payload, received_at)
      select 'acme', 'ahead' || g, 'push', 'failed', '{}'::jsonb, ${new Date(nowMs)}::timestamptz + g * interval '1 hour'
      from generate_series(1, 3) g`;
    for (const [bucketMs, buckets] of [
      [60_000, 60],
      [15 * 60_000, 96],
    ] as const) {
      const window = windowEndingAt(nowMs, bucketMs, buckets);
      const overview = await readOverview(db, window, nowMs);
      const expected = await fromRows(window, nowMs);
      expect(
        overview.received.map((bucket) => Object.fromEntries(Object.entries(bucket).filter(([, n]) => n !== 0))),
        `received per ${bucketMs} ms`,
      ).toEqual(expected.received);
      expect(
        overview.backlog.map((point) => ({
          events: point.events,
          oldestSeconds: Math.round(point.oldestSeconds * 1000),
        })),
        `backlog per ${bucketMs} ms`,
      ).toEqual(
        expected.backlog.map((point) => ({
          events: point.events,
          oldestSeconds: Math.round(point.oldestSeconds * 1000),
        })),
      );
    }
  });
});
