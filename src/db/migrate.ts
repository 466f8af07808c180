// Applies drizzle/ with Drizzle's programmatic migrator (Node only: it reads the folder from disk),
// then the one-time count of the events stored before the event counters existed. `online` first
// builds the pending migrations' indexes concurrently, so a large database keeps taking writes.
// Answers which migrations it applied, so a run with nothing pending can say so.
import { fileURLToPath } from 'node:url';
import { drizzle } from 'drizzle-orm/postgres-js';
import { migrate } from 'drizzle-orm/postgres-js/migrator';
import postgres from 'postgres';
import journal from '../../drizzle/meta/_journal.json' with { type: 'json' };
import { backfillEventCounts, backfillOutboxCounts } from './event-counts-backfill.ts';
import { buildPendingIndexesConcurrently } from './online-indexes.ts';

export const MIGRATIONS_FOLDER = fileURLToPath(new URL('../../drizzle', import.meta.url));

export interface MigrateOptions {
  /** Build the pending migrations' indexes with CREATE INDEX CONCURRENTLY before migrating. */
  online?: boolean;
  log?: (line: string) => void;
}

/** The newest migration the database had applied (drizzle's `created_at`, the journal's `when`); null: none. */
async function newestAppliedAt(sql: postgres.Sql): Promise<number | null> {
  const [table] = await sql<{ present: boolean }[]>`
    select to_regclass('drizzle.__drizzle_migrations') is not null as present`;
  if (table?.present !== true) return null;
  const [row] = await sql<{ created_at: string | null }[]>`
    select max(created_at)::text as created_at from drizzle.__drizzle_migrations`;
  return row?.created_at == null ? null : Number(row.created_at);
}

/** Applies what is pending; answers the tags of the migrations it applied (none: it was up to date). */
export async function migrateDatabase(url: string, options: MigrateOptions = {}): Promise<string[]> {
  // One connection: the migrator runs its statements in one transaction.
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    const before = await newestAppliedAt(sql);
    if (options.online) await buildPendingIndexesConcurrently(sql, MIGRATIONS_FOLDER, options.log);
    await migrate(drizzle({ client: sql }), { migrationsFolder: MIGRATIONS_FOLDER });
    if (await backfillEventCounts(sql)) options.log?.('event counters: the stored events counted');
    if (await backfillOutboxCounts(sql)) options.log?.('outbox counters: the stored messages counted');
    // The migrator applies, in order, every journal entry newer than the newest it had applied.
    return journal.entries.filter((entry) => before === null || entry.when > before).map((entry) => entry.tag);
  } finally {
    await sql.end({ timeout: 5 });
  }
}

/** What a run did, in words: the migrations it applied, or that there were none to apply. */
export function migrationReport(applied: readonly string[]): string {
  return applied.length === 0
    ? 'nothing to migrate: the database was up to date'
    : `migrations applied: ${applied.join(', ')}`;
}
