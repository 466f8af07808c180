// The outbox table keeps room on each page for the relay's lease (drizzle/0021, decision 0038). A
// lease changes no indexed column, so with room on its page the row's new version is heap-only: no
// index of the table takes an entry for it. Read from the transaction's own statistics
// (pg_stat_xact_user_tables), which count the updates it made and how many were heap-only.
import { sql as raw } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { takeLease } from '../src/db/lease.ts';
import { claimMessagesStatement } from '../src/outbox/message-rows.ts';
import { useTestDatabase } from './helpers/database.ts';
import { insertMessages } from './helpers/outbox.ts';

const { sql, db } = await useTestDatabase();

describe('the outbox table', () => {
  it('keeps room on its pages: a batch of messages is leased in heap-only updates', async () => {
    const BATCH = 400;
    const payload = { note: 'x'.repeat(300) };
    await insertMessages(sql, BATCH, { payload, availableAt: new Date(Date.now() - 60_000) });
    const counted = await db.transaction(async (tx) => {
      const now = Date.now();
      const leased = await claimMessagesStatement(tx, 'default', takeLease('pages', now, 60_000), new Date(now), BATCH);
      const [row] = await tx.execute<{ updated: string; heapOnly: string }>(
        raw`select n_tup_upd as updated, n_tup_hot_upd as "heapOnly" from pg_stat_xact_user_tables where relname = 'outbox_messages'`,
      );
      return { leased: leased.length, updated: Number(row?.updated), heapOnly: Number(row?.heapOnly) };
    });
    expect(counted.leased).toBe(BATCH);
    expect(counted.updated).toBe(BATCH);
    // Every one on its own page; with full pages, nearly none (the last page's room at most).
    expect(counted.heapOnly).toBeGreaterThanOrEqual(BATCH * 0.95);
  });
});
