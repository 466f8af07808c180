// `npm start`: the portable app on @hono/node-server. Parses the environment, brings up the database
// (the embedded server when DATABASE_URL is unset), refuses to serve an unmigrated database, and
// shuts down in order on SIGINT/SIGTERM: HTTP first, then connections, then the embedded server.
import { randomUUID } from 'node:crypto';
import { serve } from '@hono/node-server';
import { createApp } from '../app.ts';
import { type Config, ConfigError, parseConfig, providerSecrets } from '../config.ts';
import { connectDatabase } from '../db/client.ts';
import { migrateDatabase } from '../db/migrate.ts';
import { expectedMigration, hasPendingMigrations } from '../db/migrations.ts';
import { defaultHandlers } from '../domain/handlers.ts';
import { createLogger } from '../ops/logger.ts';
import { labelBounds, Metrics } from '../ops/metrics.ts';
import { defaultGaugeSources } from '../ops/metrics-routes.ts';
import { enableProviders } from '../providers/registry.ts';
import { developmentSecret, signedCurlExample } from './dev-secret.ts';
import { type EmbeddedServer, startEmbeddedPostgres } from './embedded-postgres.ts';

class StartupError extends Error {}

function loadConfig(): Config {
  try {
    return parseConfig(process.env);
  } catch (error) {
    if (error instanceof ConfigError) throw new StartupError(error.message);
    throw error;
  }
}

async function main(): Promise<void> {
  const config = loadConfig();
  const clock = () => Date.now();
  // Straight to stdout: console.log's formatting machinery showed up in the intake profile.
  const logger = createLogger({
    level: config.LOG_LEVEL,
    now: () => new Date(clock()),
    write: (line) => process.stdout.write(`${line}\n`),
  });

  const secrets = { ...providerSecrets(config) };
  const anySecret = Object.values(secrets).some((list) => list.length > 0);
  const production = config.NODE_ENV === 'production';
  if (!anySecret && production) throw new StartupError('no provider secret is set (e.g. ACME_WEBHOOK_SECRET)');
  const devSecret = anySecret ? undefined : await developmentSecret(config.DATA_DIR);
  if (devSecret !== undefined) secrets.acme = [devSecret];

  let embedded: EmbeddedServer | undefined;
  let url = config.DATABASE_URL;
  if (url === undefined) {
    embedded = await startEmbeddedPostgres(config.DATA_DIR, (line) => logger.debug('embedded postgres', { line }));
    url = embedded.url;
    for (const folder of embedded.madeTraversable) {
      logger.warn('made a folder traversable for the postgres OS user', { folder });
    }
    await migrateDatabase(url);
  }
  const database = connectDatabase({
    url,
    maxConnections: config.DB_POOL_MAX,
    statementTimeoutMs: config.HANDLER_DEADLINE_MS,
  });
  const stopDatabase = async () => {
    await database.close();
    await embedded?.stop();
  };

  try {
    if (await hasPendingMigrations(database.db, expectedMigration)) {
      throw new StartupError('the database has pending migrations: run `npm run db:migrate` first');
    }
  } catch (error) {
    await stopDatabase();
    if (error instanceof StartupError) throw error;
    throw new StartupError('the database is unreachable (check DATABASE_URL)');
  }

  const providers = await enableProviders(secrets);
  const app = createApp({
    config,
    db: database.db,
    providers,
    handlers: defaultHandlers,
    metrics: new Metrics(labelBounds(providers.keys(), defaultHandlers)),
    gaugeSources: defaultGaugeSources,
    clock,
    newId: () => randomUUID().replaceAll('-', ''),
    logger,
    expectedMigration,
  });
  const server = serve({ fetch: app.fetch, port: config.PORT }, (info) => {
    logger.info('listening', { port: info.port, database: embedded === undefined ? 'DATABASE_URL' : 'embedded' });
    if (devSecret === undefined) return;
    void signedCurlExample({ port: info.port, secret: devSecret, nowMs: clock() }).then((curl) => {
      console.log(
        `\nDevelopment secret for acme (kept in ${config.DATA_DIR}): ${devSecret}\n` +
          `Send a signed event (valid for ${config.WEBHOOK_TOLERANCE_SECONDS}s):\n${curl}\n`,
      );
    });
  });

  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info('shutting down', { signal });
    server.close(() => {
      stopDatabase().then(
        () => process.exit(0),
        () => process.exit(1),
      );
    });
    // Keep-alive sockets would hold close() open: end the idle ones now, the rest when they finish.
    if ('closeIdleConnections' in server) server.closeIdleConnections();
  };
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('SIGTERM', () => shutdown('SIGTERM'));
}

main().catch((error: unknown) => {
  console.error(error instanceof StartupError ? error.message : `start-up failed: ${String(error)}`);
  process.exit(1);
});
