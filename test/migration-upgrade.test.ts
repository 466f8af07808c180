// The upgrade an existing installation makes: a database at the schema before the operator indexes
// and event counters (migration 0002), filled with events, outbox messages and content digests,
// then migrated to today's. Every row and every deduplication key is kept, the keys still refuse a
// second insert, and the counters start equal to the rows.
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { drizzle } from 'drizzle-orm/postgres-js';
import { migrate } from 'drizzle-orm/postgres-js/migrator';
import postgres from 'postgres';
import { afterAll, describe, expect, it } from 'vitest';
import { connectDatabase } from '../src/db/client.ts';
import { MIGRATIONS_FOLDER, migrateDatabase } from '../src/db/migrate.ts';
import { countEventsFromCounters } from '../src/ops/reads/event-counts.ts';
import { countOutboxMessages } from '../src/outbox/stats.ts';
import { useEmptyDatabase } from './helpers/database.ts';

const { url } = await useEmptyDatabase();
const sql = postgres(url, { max: 2, onnotice: () => {} });
const online = await useEmptyDatabase();
const onlineSql = postgres(online.url, { max: 3, onnotice: () => {} });
const BEFORE = '0002_event_occurred_at';
const EVENTS = 20_000;

/** drizzle/ as it stood at `tag`: the journal cut after that entry, the same SQL files. */
function migrationsUpTo(tag: string): string {
  const folder = mkdtempSync(join(tmpdir(), 'wi-migrations-'));
  cpSync(MIGRATIONS_FOLDER, folder, { recursive: true });
  const journalPath = join(folder, 'meta', '_journal.json');
  const journal = JSON.parse(readFileSync(journalPath, 'utf8')) as { entries: Array<{ tag: string }> };
  const last = journal.entries.findIndex((entry) => entry.tag === tag);
  expect(last).toBeGreaterThanOrEqual(0);
  journal.entries = journal.entries.slice(0, last + 1);
  writeFileSync(journalPath, JSON.stringify(journal));
  return folder;
}

/** Every key of both tables, in one digest: equal digests, equal keys. */
async function keysDigest() {
  const [row] = await sql<{ events: string; n: number; digests: string; outbox: string }[]>`select
    (select md5(string_agg(provider || '/' || event_id || '/' || status || '/' || coalesce(payload::text, ''), ',' order by provider, event_id)) from webhook_events) as events,
    (select count(*)::int from webhook_events) as n,
    (select md5(string_agg(provider || '/' || content_digest, ',' order by provider, content_digest)) from webhook_events where content_digest is not null) as digests,
    (select md5(string_agg(deduplication_key || '/' || status, ',' order by deduplication_key)) from outbox_messages) as outbox`;
  return row;
}

afterAll(async () => {
  await sql.end();
  await onlineSql.end();
});

/** Migrates `target` as it stood at BEFORE, and fills it with a month of events. */
async function filledAtBefore(target: string, client: postgres.Sql): Promise<void> {
  const before = migrationsUpTo(BEFORE);
  try {
    const migrator = postgres(target, { max: 1, onnotice: () => {} });
    await migrate(drizzle({ client: migrator }), { migrationsFolder: before });
    await migrator.end();
  } finally {
    rmSync(before, { recursive: true, force: true });
  }
  await client`insert into webhook_events (provider, event_id, event_type, status, payload, received_at, completed_at, content_digest)
    select (array['stripe', 'github', 'acme'])[1 + g % 3], 'evt_' || g, 'invoice.paid',
      (array['completed', 'failed', 'received', 'parked', 'dead_letter'])[1 + g % 5]::webhook_event_status,
      case when g % 4 = 0 then null else jsonb_build_object('id', 'evt_' || g, 'n', 9007199254740993) end,
      now() - g * interval '1 minute', case when g % 5 in (0, 4) then now() - g * interval '1 minute' end,
      case when g % 3 = 1 then md5(g::text) end
    from generate_series(1, ${EVENTS}) g`;
}

describe('upgrading a filled database', () => {
  it('keeps every row and key, and counts what was there', async () => {
    await filledAtBefore(url, sql);
    await sql`insert into outbox_messages (topic, deduplication_key, payload)
      select 'subscription.changed', 'stripe:evt_' || g || ':subscription.changed', '{}'::jsonb
      from generate_series(1, ${EVENTS / 10}) g`;
    const kept = await keysDigest();

    await migrateDatabase(url);

    expect(await keysDigest()).toEqual(kept);
    expect(kept?.n).toBe(EVENTS);
    // The keys still gate: a second insert of a stored event or digest inserts nothing.
    const again = await sql`insert into webhook_events (provider, event_id, event_type, status)
      select provider, event_id, 'x', 'received' from webhook_events where event_id = 'evt_3'
      on conflict do nothing returning 1`;
    expect(again.length).toBe(0);
    const [digest] = await sql<
      { d: string }[]
    >`select content_digest as d from webhook_events where content_digest is not null limit 1`;
    const twin = await sql`insert into webhook_events (provider, event_id, event_type, status, content_digest)
      select provider, 'other-id', 'x', 'received', content_digest from webhook_events where content_digest = ${digest?.d ?? ''}
      on conflict do nothing returning 1`;
    expect(twin.length).toBe(0);

    const handle = connectDatabase({ url, maxConnections: 2, statementTimeoutMs: 10_000 });
    try {
      const [truth] = await sql<{ counts: Record<string, number> }[]>`select jsonb_object_agg(status, n) as counts
        from (select status::text, count(*)::int as n from webhook_events group by 1) s`;
      expect(await countEventsFromCounters(handle.db, {})).toEqual(truth?.counts);
      expect(await countOutboxMessages(handle.db)).toEqual({ pending: EVENTS / 10 });
      const [stripe] = await sql<{ counts: Record<string, number> }[]>`select jsonb_object_agg(status, n) as counts
        from (select status::text, count(*)::int as n from webhook_events
          where provider = 'stripe' and received_at >= now() - interval '5 hours' group by 1) s`;
      const [now] = await sql<{ at: Date }[]>`select now() as at`;
      const since = new Date((now?.at ?? new Date()).getTime() - 5 * 3_600_000);
      expect(await countEventsFromCounters(handle.db, { provider: 'stripe', since })).toEqual(stripe?.counts);
    } finally {
      await handle.close();
    }
  });

  it('online: builds the indexes concurrently while writes go on, and counts every write exactly', async () => {
    await filledAtBefore(online.url, onlineSql);
    let writing = true;
    let written = 0;
    const writer = (async () => {
      while (writing) {
        await onlineSql`insert into webhook_events (provider, event_id, event_type, status, payload, completed_at)
          values ('acme', ${`during_${written}`}, 'subscription.updated', 'completed', '{}'::jsonb, now())`;
        written++;
      }
    })();
    const lines: string[] = [];
    await migrateDatabase(online.url, { online: true, log: (line) => lines.push(line) });
    writing = false;
    await writer;
    expect(written).toBeGreaterThan(0);
    // Every index of the migration was built before it ran, and all are valid.
    expect(lines.filter((line) => line.includes('built concurrently')).length).toBeGreaterThanOrEqual(9);
    const [indexes] = await onlineSql<{ invalid: number; waited: number }[]>`select
      count(*) filter (where not i.indisvalid)::int as invalid,
      count(*) filter (where c.relname = 'webhook_events_done_minutes_later_idx')::int as waited
      from pg_index i join pg_class c on c.oid = i.indexrelid`;
    expect(indexes).toEqual({ invalid: 0, waited: 1 });
    const [rows] = await onlineSql<{ n: number }[]>`select count(*)::int as n from webhook_events`;
    expect(rows?.n).toBe(EVENTS + written);

    const handle = connectDatabase({ url: online.url, maxConnections: 2, statementTimeoutMs: 10_000 });
    try {
      const [truth] = await onlineSql<{ counts: Record<string, number> }[]>`select jsonb_object_agg(status, n) as counts
        from (select status::text, count(*)::int as n from webhook_events group by 1) s`;
      expect(await countEventsFromCounters(handle.db, {})).toEqual(truth?.counts);
    } finally {
      await handle.close();
    }
  });
});
