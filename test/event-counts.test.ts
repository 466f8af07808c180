// The event counters (webhook_event_counts, kept by triggers) against the rows they count: after
// inserts, status changes, deletes and a truncate, from several connections at once and with a
// transaction still open while they are folded, every count the operator surfaces ask for equals
// a GROUP BY over the table, and folding leaves one row per bucket and no empty ones.
import postgres from 'postgres';
import { describe, expect, it } from 'vitest';
import { backfillEventCounts, backfillOutboxCounts } from '../src/db/event-counts-backfill.ts';
import { foldCounterSlots } from '../src/ops/maintenance/counters-fold.ts';
import { countEventsFromCounters, piecesOf } from '../src/ops/reads/event-counts.ts';
import { countOutboxMessages } from '../src/outbox/stats.ts';
import { useTestDatabase } from './helpers/database.ts';
import { WAIT_MS } from './helpers/patience.ts';

const { sql, db, url } = await useTestDatabase();

/** Connections of their own for the writes, ended before the last fold: a fold takes every row of a connection that is gone. */
const writersOf = () =>
  postgres(url, { max: 3, onnotice: () => {}, connection: { application_name: 'counted-writers' } });

/** Ends the writers and waits until the server has let their backends go (it does so just after). */
async function endWriters(writers: postgres.Sql): Promise<void> {
  await writers.end();
  await expect
    .poll(
      async () =>
        (
          await sql<{ n: number }[]>`select count(*)::int as n from pg_stat_activity
            where application_name = 'counted-writers'`
        )[0]?.n,
      { timeout: WAIT_MS, interval: 25, message: 'the writers’ backends did not end' },
    )
    .toBe(0);
}
const T0 = Date.UTC(2026, 10, 20, 9, 0, 0);
const HOUR = 3_600_000;

interface Selection {
  provider?: string;
  type?: string;
  since?: Date;
  until?: Date;
}

/** The same count read from the rows themselves. */
async function counted(selection: Selection): Promise<Record<string, number>> {
  const rows = await sql<{ status: string; n: number }[]>`select status::text as status, count(*)::int as n
    from webhook_events
    where (${selection.provider ?? null}::text is null or provider = ${selection.provider ?? null})
      and (${selection.type ?? null}::text is null or event_type = ${selection.type ?? null})
      and (${selection.since?.toISOString() ?? null}::timestamptz is null or received_at >= ${selection.since?.toISOString() ?? null})
      and (${selection.until?.toISOString() ?? null}::timestamptz is null or received_at < ${selection.until?.toISOString() ?? null})
    group by 1`;
  return Object.fromEntries(rows.map((row) => [row.status, row.n]));
}

/** Selections with ragged ends: seconds and minutes off the counters' buckets, open on either side. */
const selections: Selection[] = [
  {},
  { provider: 'stripe' },
  { type: 'invoice.paid' },
  { provider: 'github', type: 'push' },
  { since: new Date(T0 + 17 * 60_000 + 13_000), until: new Date(T0 + 29 * HOUR + 41 * 60_000 + 7_500) },
  { since: new Date(T0 + 2 * HOUR), until: new Date(T0 + 5 * HOUR) },
  { since: new Date(T0 + 3 * HOUR + 59 * 60_000 + 59_999) },
  { until: new Date(T0 + 47 * HOUR + 30_000) },
  { provider: 'stripe', since: new Date(T0 + 90 * 60_000 + 1), until: new Date(T0 + 50 * HOUR + 17_000) },
  { type: 'push', since: new Date(T0 + 61_000), until: new Date(T0 + 62_000) },
  { since: new Date(T0 + 10 * HOUR), until: new Date(T0 + 10 * HOUR) },
];

async function expectCountersMatchRows(): Promise<void> {
  for (const selection of selections) {
    expect(await countEventsFromCounters(db, selection), JSON.stringify(selection)).toEqual(await counted(selection));
  }
}

/** Inserts `n` events from one connection of its own (so one slot), spread over three days. */
async function insertFrom(connection: typeof sql, prefix: string, n: number): Promise<void> {
  await connection`insert into webhook_events (provider, event_id, event_type, status, payload, received_at)
    select (array['stripe', 'github', 'acme'])[1 + g % 3], ${prefix} || g,
      (array['invoice.paid', 'push'])[1 + (g / 3) % 2], 'received', '{}'::jsonb,
      ${new Date(T0).toISOString()}::timestamptz + (g * 7919 % 259200) * interval '1 second' + (g % 1000) * interval '1 millisecond'
    from generate_series(1, ${n}) g`;
}

describe('event counters', () => {
  it('cut a range into the coarsest buckets that fit and ragged ends counted from the table', () => {
    const at = (minutes: number, seconds = 0) => T0 + minutes * 60_000 + seconds * 1000;
    expect(piecesOf(at(-1, 30), at(121, 10), [3600, 60])).toEqual([
      { from: at(-1, 30), to: at(-1, 60) },
      { from: at(0), to: at(120), seconds: 3600 },
      { from: at(120), to: at(121), seconds: 60 },
      { from: at(121), to: at(121, 10) },
    ]);
    expect(piecesOf(undefined, undefined, [3600])).toEqual([{ from: undefined, to: undefined, seconds: 3600 }]);
    expect(piecesOf(at(5), at(5), [3600, 60])).toEqual([]);
    expect(piecesOf(at(5, 1), at(5, 2), [3600, 60])).toEqual([{ from: at(5, 1), to: at(5, 2) }]);
  });

  it('equal the rows after concurrent inserts, changes and deletes, before and after folding', async () => {
    const writers = writersOf();
    const [first, second, third] = await Promise.all([writers.reserve(), writers.reserve(), writers.reserve()]);
    const connections = [first, second, third];
    try {
      await Promise.all(connections.map((connection, i) => insertFrom(connection, `c${i}_`, 1500)));
      // Status changes from other connections than the inserts: a row's -1 and +1 land in other slots.
      await second`update webhook_events set status = 'completed', completed_at = received_at
        where event_id like 'c0\\_%' and right(event_id, 1) in ('1', '2', '3', '4', '5', '6')`;
      await third`update webhook_events set status = 'failed', attempt_count = 1
        where event_id like 'c1\\_%' and right(event_id, 1) = '7'`;
      // An update that keeps every status (a lease) changes no counter.
      await first`update webhook_events set locked_by = 'w' where event_id like 'c2\\_%'`;
      await first`delete from webhook_events where event_id like 'c2\\_%' and right(event_id, 1) = '9'`;
      await expectCountersMatchRows();

      // A transaction still open holds its counter rows: the fold leaves them and merges the rest.
      const open = third;
      await open`begin`;
      await open`update webhook_events set status = 'dead_letter', completed_at = now()
        where status = 'failed' and provider = 'stripe'`;
      const merged = await foldCounterSlots(db);
      expect(merged).toBeGreaterThan(0);
      const [held] = await sql<{ n: number }[]>`select count(*)::int as n from webhook_event_counts
        where slot <> 0 and slot = ${await backendPid(open)}`;
      expect(held?.n).toBeGreaterThan(0);
      await expectCountersMatchRows();
      await open`commit`;
      await expectCountersMatchRows();

      // A live connection's all-time counters stay in its slot: its next statement adds to them.
      await foldCounterSlots(db);
      const [live] = await sql<{ n: number }[]>`select count(*)::int as n from webhook_event_counts
        where slot <> 0 and bucket_seconds <> 0`;
      expect(live?.n).toBe(0);
      await expectCountersMatchRows();
    } finally {
      for (const connection of connections) connection.release();
      await endWriters(writers);
    }
    await foldCounterSlots(db);
    const [left] = await sql<{ slots: number; empty: number }[]>`select
      count(*) filter (where slot <> 0)::int as slots, count(*) filter (where n = 0)::int as empty
      from webhook_event_counts`;
    expect(left).toEqual({ slots: 0, empty: 0 });
    await expectCountersMatchRows();
  });

  it('count what was stored before them once, whatever commits while they are counted', async () => {
    // Rows stored before the counters existed: written with the triggers off, then the marker.
    await sql`alter table webhook_events disable trigger user`;
    await insertFrom(sql, 'before_', 2000);
    await sql`alter table webhook_events enable trigger user`;
    await sql`insert into webhook_event_counts (bucket_seconds, bucket_start, provider, event_type, status, slot, n)
      values (-1, 'epoch', '*', '*', 'received', 0, 0)`;
    // Changes committed before the count's snapshot, and others committed after it.
    await sql`update webhook_events set status = 'completed' where event_id like 'before\_%' and right(event_id, 1) = '1'`;
    let during = 0;
    const counted = await backfillEventCounts(sql, {
      afterSnapshot: async () => {
        await insertFrom(sql, 'during_', 300);
        await sql`update webhook_events set status = 'failed' where event_id like 'before\_%' and right(event_id, 1) = '2'`;
        await sql`delete from webhook_events where event_id like 'before\_%' and right(event_id, 1) = '3'`;
        during++;
      },
    });
    expect(counted).toBe(true);
    expect(during).toBe(1);
    await expectCountersMatchRows();
    // Once only: the marker is gone, a second run does nothing.
    expect(await backfillEventCounts(sql)).toBe(false);
    await foldCounterSlots(db);
    await expectCountersMatchRows();
  });

  it('count outbox messages by status as the relay and operators change them, folded or not', async () => {
    const writers = writersOf();
    const [first, second] = await Promise.all([writers.reserve(), writers.reserve()]);
    const truth = async () =>
      Object.fromEntries(
        (
          await sql<{ status: string; n: number }[]>`select status::text as status, count(*)::int as n
          from outbox_messages group by 1`
        ).map((row) => [row.status, row.n]),
      );
    try {
      await first`insert into outbox_messages (topic, deduplication_key, payload)
        select 't', 'count:' || g, '{}'::jsonb from generate_series(1, 500) g`;
      await second`update outbox_messages set status = 'published', published_at = now()
        where deduplication_key like 'count:%' and right(deduplication_key, 1) in ('1', '2', '3', '4', '5', '6', '7')`;
      await first`update outbox_messages set status = 'dead' where deduplication_key like 'count:%9'`;
      await second`update outbox_messages set locked_by = 'relay' where status = 'pending'`;
      await first`delete from outbox_messages where deduplication_key like 'count:%5'`;
      expect(await countOutboxMessages(db)).toEqual(await truth());
      await foldCounterSlots(db);
      expect(await countOutboxMessages(db)).toEqual(await truth());
    } finally {
      first.release();
      second.release();
      await endWriters(writers);
    }
    await foldCounterSlots(db);
    const [slots] = await sql<{ n: number }[]>`select count(*)::int as n from outbox_message_counts where slot <> 0`;
    expect(slots?.n).toBe(0);
    expect(await countOutboxMessages(db)).toEqual(await truth());
  });

  it('count the outbox messages stored before them once, whatever commits meanwhile', async () => {
    await sql`alter table outbox_messages disable trigger user`;
    await sql`insert into outbox_messages (topic, deduplication_key, payload, status)
      select 't', 'before:' || g, '{}'::jsonb, (case when g % 3 = 0 then 'dead' else 'published' end)::outbox_status
      from generate_series(1, 300) g`;
    await sql`alter table outbox_messages enable trigger user`;
    await sql`insert into outbox_message_counts (status, slot, n) values ('pending', -2, 0)`;
    const counted = await backfillOutboxCounts(sql, {
      afterSnapshot: async () => {
        await sql`insert into outbox_messages (topic, deduplication_key, payload)
          select 't', 'during:' || g, '{}'::jsonb from generate_series(1, 40) g`;
        await sql`update outbox_messages set status = 'pending' where deduplication_key like 'before:%7'`;
      },
    });
    expect(counted).toBe(true);
    const rows = await sql<{ status: string; n: number }[]>`select status::text as status, count(*)::int as n
      from outbox_messages group by 1`;
    expect(await countOutboxMessages(db)).toEqual(Object.fromEntries(rows.map((row) => [row.status, row.n])));
    expect(await backfillOutboxCounts(sql)).toBe(false);
  });

  it('empty with the table it counts', async () => {
    await sql`truncate webhook_events`;
    const [row] = await sql<{ n: number }[]>`select count(*)::int as n from webhook_event_counts`;
    expect(row?.n).toBe(0);
    expect(await countEventsFromCounters(db, {})).toEqual({});
  });
});

async function backendPid(connection: typeof sql): Promise<number> {
  const [row] = await connection<{ pid: number }[]>`select pg_backend_pid() as pid`;
  return row?.pid ?? -1;
}
