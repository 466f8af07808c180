// The dashboard overview's figures, read back from rows with known times: events received per
// bucket by status, and the backlog with its oldest age at each bucket's end, rebuilt from
// received_at and completed_at (parked events aside).
import { describe, expect, it } from 'vitest';
import { readOverview, windowEndingAt } from '../src/ops/overview.ts';
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
