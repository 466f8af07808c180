// `npm run db:migrate [-- --online]`: applies pending migrations to DATABASE_URL (online: their indexes
// built concurrently first, docs/scaling.md); exits non-zero on failure.
import { readFileSync } from 'node:fs';
import { ConfigError, parseConfig } from '../config.ts';
import { migrateDatabase, migrationReport } from '../db/migrate.ts';

try {
  const config = parseConfig(process.env, { readFile: (path) => readFileSync(path, 'utf8') });
  if (config.DATABASE_URL === undefined) throw new ConfigError(['DATABASE_URL: required to migrate']);
  const applied = await migrateDatabase(config.DATABASE_URL, {
    online: process.argv.includes('--online'),
    log: console.log,
  });
  console.log(migrationReport(applied));
} catch (error) {
  console.error(`migration failed: ${error instanceof Error ? error.message : String(error)}`);
  process.exitCode = 1;
}
