// `migrate --online`: the indexes a pending migration would build, built first with CREATE INDEX
// CONCURRENTLY, which lets writers go on while it reads the table (the migrator runs each migration
// in one transaction, where CONCURRENTLY is refused, and a plain CREATE INDEX holds writers off
// for the whole build: minutes on a month of events). The migrations write their indexes as
// `CREATE INDEX IF NOT EXISTS` (docs/decisions/0011-online-migrations-and-event-counters.md), so the migrator then
// finds them built and moves on. Functions an index calls (`CREATE OR REPLACE FUNCTION`) are
// created first; an index on a table or column the migration itself creates is left to the migration.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type postgres from 'postgres';

interface JournalEntry {
  tag: string;
  when: number;
}

const BREAKPOINT = '--> statement-breakpoint';
const INDEX = /^CREATE (UNIQUE )?INDEX IF NOT EXISTS "?([a-z0-9_]+)"?/i;
const FUNCTION = /^CREATE OR REPLACE FUNCTION "?([a-z0-9_]+)"?\s*\(/i;
/** undefined_table, undefined_function, undefined_column: what the migration itself creates first. */
const CREATED_BY_THE_MIGRATION = new Set(['42P01', '42883', '42703']);

/** A migration file's statements, each without the comment lines before it. */
export function statementsOf(text: string): string[] {
  return text
    .split(BREAKPOINT)
    .map((part) =>
      part
        .split('\n')
        .filter((line) => !line.trimStart().startsWith('--'))
        .join('\n')
        .trim(),
    )
    .filter((statement) => statement !== '');
}

/** Migrations the database has not applied (drizzle's journal against its bookkeeping table). */
async function pendingMigrations(sql: postgres.Sql, folder: string): Promise<JournalEntry[]> {
  const journal = JSON.parse(readFileSync(join(folder, 'meta', '_journal.json'), 'utf8')) as {
    entries: JournalEntry[];
  };
  const [table] = await sql<
    { present: boolean }[]
  >`select to_regclass('drizzle.__drizzle_migrations') is not null as present`;
  if (table?.present !== true) return journal.entries;
  const [applied] = await sql<
    { at: string | null }[]
  >`select max(created_at)::text as at from drizzle.__drizzle_migrations`;
  const appliedAt = applied?.at == null ? -1 : Number(applied.at);
  return journal.entries.filter((entry) => entry.when > appliedAt);
}

export interface PrebuiltIndexes {
  built: string[];
  /** Left to the migration: their table or function does not exist yet. */
  left: string[];
}

export async function buildPendingIndexesConcurrently(
  sql: postgres.Sql,
  folder: string,
  log: (line: string) => void = () => {},
): Promise<PrebuiltIndexes> {
  const statements = (await pendingMigrations(sql, folder)).flatMap((entry) =>
    statementsOf(readFileSync(join(folder, `${entry.tag}.sql`), 'utf8')),
  );
  // Only a function one of the indexes calls: any other (a trigger's, say) may depend on what the
  // migration itself creates, or replace one an earlier pending migration has yet to create.
  const indexes = statements.filter((candidate) => INDEX.test(candidate));
  for (const statement of statements.filter((candidate) => FUNCTION.test(candidate))) {
    const name = FUNCTION.exec(statement)?.[1];
    if (name !== undefined && indexes.some((index) => index.includes(`${name}(`))) await sql.unsafe(statement);
  }
  const result: PrebuiltIndexes = { built: [], left: [] };
  for (const statement of statements) {
    const match = INDEX.exec(statement);
    const name = match?.[2];
    if (match === null || name === undefined) continue;
    // A concurrent build that failed leaves an invalid index, which IF NOT EXISTS would keep.
    const [invalid] = await sql<{ n: number }[]>`select count(*)::int as n from pg_index i
      join pg_class c on c.oid = i.indexrelid where c.relname = ${name} and not i.indisvalid`;
    if ((invalid?.n ?? 0) > 0) await sql.unsafe(`drop index concurrently if exists "${name}"`);
    const started = Date.now();
    try {
      await sql.unsafe(
        statement.replace(INDEX, (whole) => whole.replace(/INDEX IF NOT EXISTS/i, 'INDEX CONCURRENTLY IF NOT EXISTS')),
      );
      result.built.push(name);
      log(`index ${name} built concurrently in ${Date.now() - started} ms`);
    } catch (error) {
      if (!CREATED_BY_THE_MIGRATION.has((error as { code?: string }).code ?? '')) throw error;
      result.left.push(name);
    }
  }
  return result;
}
