// Prepares the run: builds dist/ from the sources under test (the tests start the service and the
// CLI as `npm start` and `npx webhook-inbox` run them: from the build), and brings up PostgreSQL:
// the server named by DATABASE_URL, or a throwaway embedded one started here and removed at the end.
// One migrated template database is made; each test file copies it into a database of its own
// (test/helpers/database.ts).
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import type { TestProject } from 'vitest/node';
import { migrateDatabase } from '../src/db/migrate.ts';
import { type EmbeddedServer, startEmbeddedPostgres } from '../src/entry/setup/embedded-postgres.ts';
import { databaseUrl } from './helpers/database-url.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    adminDatabaseUrl: string;
    templateDatabase: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  execFileSync(process.execPath, ['bin/build.js'], { stdio: ['ignore', 'ignore', 'inherit'] });

  let embedded: EmbeddedServer | undefined;
  let dataDir: string | undefined;
  let adminUrl = process.env.DATABASE_URL;
  if (adminUrl === undefined || adminUrl === '') {
    dataDir = await mkdtemp(join(tmpdir(), 'webhook-inbox-test-'));
    embedded = await startEmbeddedPostgres(dataDir);
    adminUrl = embedded.url;
  }

  const template = `wi_template_${randomBytes(6).toString('hex')}`;
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database ${template}`);
  await migrateDatabase(databaseUrl(adminUrl, template));

  project.provide('adminDatabaseUrl', adminUrl);
  project.provide('templateDatabase', template);

  return async () => {
    await admin.unsafe(`drop database if exists ${template} with (force)`);
    await admin.end();
    await embedded?.stop();
    if (dataDir !== undefined) await rm(dataDir, { recursive: true, force: true });
  };
}
