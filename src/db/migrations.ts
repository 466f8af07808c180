// Which migration the code expects (the last entry of drizzle-kit's journal, bundled with the code so
// Workers can check it too) and which one the database has applied.
import { sql } from 'drizzle-orm';
import journal from '../../drizzle/meta/_journal.json' with { type: 'json' };
import type { Database } from './client.ts';

export interface MigrationMark {
  tag: string;
  /** drizzle-kit's `when`, which the migrator stores as `created_at`. */
  createdAt: number;
}

const last = journal.entries[journal.entries.length - 1];
if (last === undefined) throw new Error('drizzle/meta/_journal.json lists no migration');
export const expectedMigration: MigrationMark = { tag: last.tag, createdAt: last.when };

/** created_at of the newest applied migration, or null when the database was never migrated. */
export async function appliedMigrationAt(db: Database): Promise<number | null> {
  const exists = await db.execute<{ present: boolean }>(
    sql`select to_regclass('drizzle.__drizzle_migrations') is not null as present`,
  );
  if (exists[0]?.present !== true) return null;
  const rows = await db.execute<{ created_at: string | null }>(
    sql`select max(created_at)::text as created_at from drizzle.__drizzle_migrations`,
  );
  const createdAt = rows[0]?.created_at;
  return createdAt == null ? null : Number(createdAt);
}

export async function hasPendingMigrations(db: Database, expected: MigrationMark): Promise<boolean> {
  const applied = await appliedMigrationAt(db);
  return applied === null || applied < expected.createdAt;
}
