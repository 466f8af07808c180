// A fresh database per test file, copied from the migrated template, so files run in parallel and
// in any order; dropped when the file is done.
import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { afterAll, inject } from 'vitest';
import { connectDatabase, type DatabaseHandle } from '../../src/db/client.ts';
import { databaseUrl } from './database-url.ts';
import { WAIT_MS } from './patience.ts';

export interface TestDatabase {
  /** The product's handle (Drizzle over postgres.js), as an entry point would build it. */
  db: DatabaseHandle['db'];
  /** A separate plain postgres.js client for reading facts back (Drizzle rewires its own client's parsers). */
  sql: postgres.Sql;
  url: string;
  name: string;
}

export async function createDatabase(admin: postgres.Sql, name: string, template: string): Promise<void> {
  // Two files copying the template at the same instant can collide (55006); try again shortly. Bounded
  // by time, not by a count of attempts: with many files starting at once on a busy machine, the
  // template can stay in use for longer than a fixed number of short retries.
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    try {
      await admin.unsafe(`create database ${name} template ${template}`);
      return;
    } catch (error) {
      if (Date.now() > deadline || (error as { code?: string }).code !== '55006') throw error;
      await new Promise((resolve) => setTimeout(resolve, 50 + Math.random() * 100));
    }
  }
}

/** An empty, migrated database of this file's own; also registers its removal (call at file level). */
export async function useTestDatabase(options: { statementTimeoutMs?: number } = {}): Promise<TestDatabase> {
  const adminUrl = inject('adminDatabaseUrl');
  const name = `wi_test_${randomBytes(6).toString('hex')}`;
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  await createDatabase(admin, name, inject('templateDatabase'));
  const url = databaseUrl(adminUrl, name);
  const handle = connectDatabase({ url, maxConnections: 30, statementTimeoutMs: options.statementTimeoutMs ?? 10_000 });
  const facts = postgres(url, { max: 5, onnotice: () => {} });
  afterAll(async () => {
    await handle.close();
    await facts.end();
    await admin.unsafe(`drop database if exists ${name} with (force)`);
    await admin.end();
  });
  return { db: handle.db, sql: facts, url, name };
}

/** A database that exists but was never migrated, for start-up and readiness checks (call at file level). */
export async function useEmptyDatabase(): Promise<{ url: string }> {
  const adminUrl = inject('adminDatabaseUrl');
  const name = `wi_empty_${randomBytes(6).toString('hex')}`;
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database ${name}`);
  afterAll(async () => {
    await admin.unsafe(`drop database if exists ${name} with (force)`);
    await admin.end();
  });
  return { url: databaseUrl(adminUrl, name) };
}
