// Applies drizzle/ with Drizzle's programmatic migrator (Node only: it reads the folder from disk),
// then the one-time count of the events stored before the event counters existed. `online` first
// builds the pending migrations' indexes concurrently, so a large database keeps taking writes.
import { fileURLToPath } from 'node:url';
import { drizzle } from 'drizzle-orm/postgres-js';
import { migrate } from 'drizzle-orm/postgres-js/migrator';
import postgres from 'postgres';
import { backfillEventCounts, backfillOutboxCounts } from './event-counts-backfill.ts';
import { buildPendingIndexesConcurrently } from './online-indexes.ts';

export const MIGRATIONS_FOLDER = fileURLToPath(new URL('../../drizzle', import.meta.url));

export interface MigrateOptions {
  /** Build the pending migrations' indexes with CREATE INDEX CONCURRENTLY before migrating. */
  online?: boolean;
  log?: (line: string) => void;
}

export async function migrateDatabase(url: string, options: MigrateOptions = {}): Promise<void> {
  // One connection: the migrator runs its statements in one transaction.
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    if (options.online) await buildPendingIndexesConcurrently(sql, MIGRATIONS_FOLDER, options.log);
    await migrate(drizzle({ client: sql }), { migrationsFolder: MIGRATIONS_FOLDER });
    if (await backfillEventCounts(sql)) options.log?.('event counters: the stored events counted');
    if (await backfillOutboxCounts(sql)) options.log?.('outbox counters: the stored messages counted');
  } finally {
    await sql.end({ timeout: 5 });
  }
}
