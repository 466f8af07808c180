// `npm run db:start`: the embedded PostgreSQL that `npm start` runs, on its own and in the foreground,
// with its data in DATA_DIR, migrated. It prints its DATABASE_URL and the line that points
// `npm run dev:worker` (Hyperdrive's local connection string) at it, and stops on Ctrl-C.
import { readFileSync } from 'node:fs';
import { ConfigError, parseConfig } from '../config.ts';
import { migrateDatabase } from '../db/migrate.ts';
import { developmentSecret, developmentSecretUse } from './setup/dev-secret.ts';
import { startEmbeddedPostgres } from './setup/embedded-postgres.ts';

async function main(): Promise<void> {
  const config = parseConfig(process.env, { readFile: (path) => readFileSync(path, 'utf8') });
  if (config.DATABASE_URL !== undefined) {
    throw new ConfigError(['DATABASE_URL: set, so that server is the database; db:start runs the embedded one']);
  }
  const embedded = await startEmbeddedPostgres(config.DATA_DIR);
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    console.log(`${signal}: stopping PostgreSQL`);
    embedded.stop().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
  try {
    await migrateDatabase(embedded.url);
  } catch (error) {
    await embedded.stop();
    throw error;
  }

  // The Worker gets the acme secret `npm start` would make, exactly when it would make one.
  const devSecret = developmentSecretUse(config).inUse ? await developmentSecret(config.DATA_DIR) : undefined;
  const secretFlag = devSecret === undefined ? '' : ` -- --var ACME_WEBHOOK_SECRET:${devSecret}`;
  console.log(
    [
      `PostgreSQL is running with its data in ${config.DATA_DIR} (Ctrl-C stops it).`,
      `DATABASE_URL=${embedded.url}`,
      '',
      'The service in Node against it:',
      `  DATABASE_URL='${embedded.url}' npm start`,
      'The Worker against it (Hyperdrive reaches it through its local connection string):',
      `  CLOUDFLARE_HYPERDRIVE_LOCAL_CONNECTION_STRING_HYPERDRIVE='${embedded.url}' npm run dev:worker${secretFlag}`,
    ].join('\n'),
  );
}

main().catch((error: unknown) => {
  console.error(error instanceof ConfigError ? error.message : `db:start failed: ${String(error)}`);
  process.exit(1);
});
