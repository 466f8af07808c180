// Running a hot statement prepared. Kept out of client.ts, which imports the driver: the portable app
// reaches this module, and the Worker bundle must not reach the Node driver through it.
import type { SQL } from 'drizzle-orm';
import { PgDialect } from 'drizzle-orm/pg-core';
import type { Executor } from './client.ts';

/** Renders SQL templates as the database handle does (the same casing), for executePrepared. */
const dialect = new PgDialect({ casing: 'snake_case' });

/**
 * Runs `query` as a prepared statement: Drizzle's `execute` sends every statement unnamed, so
 * PostgreSQL parses and plans it again on each call. For a hot statement whose text is the same on
 * every call (parameters only; a batch passed as one JSON parameter rather than a VALUES list of its
 * length), postgres.js prepares it once per connection and later calls only bind and run it. A
 * connection opened with `prepare: false` (a pooler that cannot hold them) runs it unnamed as before.
 */
export function executePrepared<Row>(db: Executor, query: SQL): Promise<Row[]> {
  // Drizzle prepares a query when it has a name; postgres.js names it itself, by its text.
  return db._.session
    .prepareQuery<{ execute: Row[]; all: Row[]; values: unknown[][] }>(
      dialect.sqlToQuery(query),
      undefined,
      'hot',
      false,
    )
    .execute();
}
