// A performance guard, read from pg_prepared_statements: the hot statements run prepared
// (executePrepared in src/db/prepared.ts), so PostgreSQL parses and plans each once per connection,
// and a batch of any size reuses it, because its rows travel as one JSON parameter. A failure here
// means statements are parsed and planned again on every call, not that a row is written wrongly. A
// connection opened with `prepare: false` (a pooler that cannot hold them) runs them unnamed.
import { afterAll, describe, expect, it } from 'vitest';
import { connectDatabase, type Database, type Transaction } from '../src/db/client.ts';
import { type Arrival, insertOrTakeBackAll } from '../src/inbox/event-rows.ts';
import { uniqueId } from './helpers/acme.ts';
import { useTestDatabase } from './helpers/database.ts';

const { db, sql, url } = await useTestDatabase();
const unprepared = connectDatabase({ url, maxConnections: 1, statementTimeoutMs: 10_000, prepare: false });
afterAll(() => unprepared.close());

// Sync and async arrivals mixed, a queued one with a traceparent or without: one statement text for all.
const arrivals: Arrival[] = [
  { status: 'completed' },
  { status: 'received', availableAt: new Date(), traceparent: `00-${'a'.repeat(32)}-${'b'.repeat(16)}-01` },
  { status: 'received', availableAt: new Date() },
];

const arriving = (count: number) =>
  Array.from({ length: count }, (_, index) => {
    const payload = { id: uniqueId('evt') };
    return {
      event: {
        provider: 'acme',
        eventId: payload.id,
        eventType: 'subscription.updated',
        occurredAt: null,
        payload,
        payloadText: JSON.stringify(payload),
        unknownSchemaVersion: false,
      },
      arrival: arrivals[index % arrivals.length] as Arrival,
    };
  });

/** Inserts batches of 1, 5 and 20 in one transaction, then counts the session's prepared inserts. */
async function insertThreeBatches(database: Database): Promise<{ stored: number; preparedInserts: number }> {
  return database.transaction(async (tx: Transaction) => {
    let stored = 0;
    for (const size of [1, 5, 20]) stored += (await insertOrTakeBackAll(tx, arriving(size))).filter(Boolean).length;
    const [row] = await tx.execute<{ n: number }>(
      `select count(*)::int as n from pg_prepared_statements where statement like '%insert into webhook_events%'`,
    );
    return { stored, preparedInserts: Number(row?.n) };
  });
}

describe('prepared hot statements', () => {
  it('inserts batches of any size with one statement prepared on the connection', async () => {
    expect(await insertThreeBatches(db)).toEqual({ stored: 26, preparedInserts: 1 });
  });

  it('runs them unnamed on a connection opened with prepare: false', async () => {
    expect(await insertThreeBatches(unprepared.db)).toEqual({ stored: 26, preparedInserts: 0 });
    const [row] = await sql<{ n: number }[]>`select count(*)::int as n from webhook_events`;
    expect(row?.n).toBe(52);
  });
});
