// `npm start`: the portable app on @hono/node-server. Parses the environment, brings up the database
// (the embedded server when DATABASE_URL is unset), refuses to serve an unmigrated database, runs the
// background steps each on its timer (ops/maintenance/background-steps.ts: the outbox relay, in async mode the
// inbox worker and the lease sweeper, the bulk jobs, the counters' fold, the retention purge, the
// pauses' ends, the writes of refusals and of the delivery log), and shuts down in order on SIGINT/SIGTERM:
// HTTP first, then the background jobs (their passes in progress finish), then connections, then the
// embedded server. Requests, background jobs and the delivery log's writes use separate pools (setup/pools.ts).
import { readFileSync } from 'node:fs';
import { serve } from '@hono/node-server';
import { createProductionApp } from '../app.ts';
import { type Config, ConfigError, type ConfigWarning, checkEmbeddedDatabase, parseConfig } from '../config.ts';
import { connectDatabase } from '../db/client.ts';
import { databaseStartupProblem } from '../db/errors.ts';
import { migrateDatabase } from '../db/migrate.ts';
import { expectedMigration, hasPendingMigrations } from '../db/migrations.ts';
import { defaultHandlers } from '../domain/handlers.ts';
import { createDeliveryLog } from '../inbox/delivery-log.ts';
import { IntakeLoad } from '../inbox/intake-load.ts';
import { createRejectionLog } from '../inbox/rejection-log.ts';
import { newHexId } from '../lib/clock.ts';
import { createLogger } from '../lib/logger.ts';
import { labelBounds, Metrics } from '../lib/metrics.ts';
import { processSteps } from '../ops/maintenance/background-steps.ts';
import { scheduleSteps } from '../ops/maintenance/schedule.ts';
import { checkSenderLimits } from '../ops/sender-setup/sender-limits.ts';
import { configuredRouting } from '../outbox/destinations.ts';
import { nodeDestinationPublishers } from '../outbox/publishers/node.ts';
import { closePublishers } from '../outbox/relays.ts';
import { providerExtras, providerSecrets } from '../sender-variables.ts';
import { configuredSenders, enableSenders } from '../senders/registry.ts';
import { shedAtCapacity } from './setup/connection-shedding.ts';
import { developmentSecret, developmentSecretUse, signedCurlExample } from './setup/dev-secret.ts';
import { type EmbeddedServer, startEmbeddedPostgres } from './setup/embedded-postgres.ts';
import { splitPool } from './setup/pools.ts';
import { processMetrics } from './setup/process-metrics.ts';
import { tracingFromEnv } from './setup/tracing-node.ts';

class StartupError extends Error {}

/** Resolves once `server` listens; rejects with the error that stopped it (EADDRINUSE, EACCES). */
function listening(server: {
  listening: boolean;
  once(event: string, listener: (error?: unknown) => void): unknown;
  off(event: string, listener: (error?: unknown) => void): unknown;
}): Promise<void> {
  if (server.listening) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const failed = (error?: unknown) => reject(error);
    server.once('error', failed);
    server.once('listening', () => {
      server.off('error', failed);
      resolve();
    });
  });
}

/** The one line for a port the service could not listen on. */
function listenProblem(error: unknown, port: number): string {
  const code = (error as { code?: unknown } | undefined)?.code;
  if (code === 'EADDRINUSE') return `port ${port} is in use by another process: stop it, or set PORT to a free port`;
  if (code === 'EACCES') return `port ${port} needs privileges this process does not have: set PORT above 1023`;
  return `could not listen on port ${port}: ${typeof code === 'string' ? code : String(error)}`;
}

/** Whether /admin answers at all: a shared or a named admin token is set. */
const adminOpen = (config: { ADMIN_TOKEN?: string | undefined; ADMIN_TOKENS?: readonly unknown[] | undefined }) =>
  config.ADMIN_TOKEN !== undefined || (config.ADMIN_TOKENS?.length ?? 0) > 0;

/**
 * Explicit bounds on what a client may hold: headers must arrive within HTTP_HEADERS_TIMEOUT_MS and
 * the whole request within HTTP_REQUEST_TIMEOUT_MS (Node's defaults would keep a silent socket for
 * about a minute and an unfinished body for five), an idle keep-alive socket is closed after
 * HTTP_KEEP_ALIVE_TIMEOUT_MS. Node checks the first two on an interval, kept well below them.
 */
function httpLimits(config: Config) {
  return {
    headersTimeout: config.HTTP_HEADERS_TIMEOUT_MS,
    requestTimeout: config.HTTP_REQUEST_TIMEOUT_MS,
    keepAliveTimeout: config.HTTP_KEEP_ALIVE_TIMEOUT_MS,
    connectionsCheckingInterval: Math.max(50, Math.min(1000, Math.floor(config.HTTP_HEADERS_TIMEOUT_MS / 4))),
  };
}

function loadConfig(warnings: ConfigWarning[]): Config {
  const warn = (warning: ConfigWarning) => warnings.push(warning);
  const config = parseConfig(process.env, { readFile: (path) => readFileSync(path, 'utf8'), warn });
  // Before anything touches DATA_DIR: a refused embedded server leaves no data folder behind.
  checkEmbeddedDatabase(config, { warn });
  checkSenderLimits(config, { warn });
  return config;
}

async function main(): Promise<void> {
  const warnings: ConfigWarning[] = [];
  const config = loadConfig(warnings);
  const clock = () => Date.now();
  // Straight to stdout: console.log's formatting machinery showed up in the intake profile.
  const logger = createLogger({
    level: config.LOG_LEVEL,
    now: () => new Date(clock()),
    write: (line) => process.stdout.write(`${line}\n`),
  });
  for (const warning of warnings) logger.warn(warning.message, { variable: warning.variable });

  // Before anything starts: a malformed OUTBOX_TARGET_URL or OUTBOX_DESTINATIONS is a configuration
  // error (a publisher connects on first publish).
  const publishers = nodeDestinationPublishers(configuredRouting(config), {
    clock,
    logger,
    timeoutMs: config.OUTBOX_TIMEOUT_MS,
  });
  // OTEL_* (setup/tracing-sdk.ts): no endpoint, no SDK. A malformed protocol or OTEL_BSP_* stops start-up.
  const tracing = tracingFromEnv(process.env);

  const secrets = { ...providerSecrets(config) };
  const production = config.NODE_ENV === 'production';
  // Only variables that name a sender count: a misspelt one alone would enable nothing.
  const senders = configuredSenders(config.senderSettings);
  if (senders.enablingVariables.length === 0 && production) {
    throw new StartupError('no provider secret is set (e.g. ACME_WEBHOOK_SECRET)');
  }
  for (const variable of senders.unknownVariables) {
    logger.warn('names no sender: it configures nothing', { variable });
  }
  const devSecretUse = developmentSecretUse(config);
  const devSecret = devSecretUse.inUse ? await developmentSecret(config.DATA_DIR) : undefined;
  if (devSecret !== undefined) secrets.acme = [devSecret];
  // Before the database: a sender that cannot be enabled as configured stops start-up, naming it.
  const enabledSenders = await enableSenders(secrets, providerExtras(config)).catch((error: unknown) => {
    throw new StartupError(`start-up failed: ${(error as Error).message}`);
  });

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
  // DELIVERY_LOG_FLUSH_MS=0: no log at all (the intake appends nothing), and no connection for it.
  const deliveryLogOn = config.DELIVERY_LOG_FLUSH_MS > 0;
  const pools = splitPool(config.DB_POOL_MAX, config.PROCESSING_MODE, { deliveryLog: deliveryLogOn });
  const database = connectDatabase({
    url,
    maxConnections: pools.requests,
    statementTimeoutMs: config.HANDLER_DEADLINE_MS,
  });
  const background = connectDatabase({
    url,
    maxConnections: pools.background,
    statementTimeoutMs: config.HANDLER_DEADLINE_MS,
  });
  // Its writes never queue behind a worker batch or a publish: the log's promise is a bound in time.
  const deliveryLogConnection =
    pools.deliveryLog > 0
      ? connectDatabase({ url, maxConnections: pools.deliveryLog, statementTimeoutMs: config.HANDLER_DEADLINE_MS })
      : undefined;
  const stopDatabase = async () => {
    await Promise.all([database.close(), background.close(), deliveryLogConnection?.close()]);
    await embedded?.stop();
  };

  try {
    if (await hasPendingMigrations(database.db, expectedMigration)) {
      throw new StartupError('the database has pending migrations: run `npm run db:migrate` first');
    }
    // Opened now, not by the first write: connecting would spend part of the log's bound.
    if (deliveryLogConnection !== undefined) await deliveryLogConnection.sql`select 1`;
  } catch (error) {
    await stopDatabase();
    if (error instanceof StartupError) throw error;
    throw new StartupError(databaseStartupProblem(error));
  }

  // Which routes answer, by name only, and why acme's development secret is or is not among them: any
  // real secret turns it off, and that route's 404 would otherwise come as a surprise. Once the
  // database checks passed, so that a refusal stays one line.
  logger.info('senders', {
    enabled: [...enabledSenders.keys()],
    acme_development_secret: devSecretUse.inUse ? 'in use' : 'not in use',
    reason: devSecretUse.reason,
    ...('variables' in devSecretUse ? { variables: devSecretUse.variables } : {}),
  });

  const newId = newHexId;
  const metrics = new Metrics(labelBounds(enabledSenders.keys(), defaultHandlers), clock);
  metrics.attach(processMetrics());
  const intakeLoad = IntakeLoad.forRequestPool(pools.requests);
  const rejections = createRejectionLog({ logger, metrics });
  const deliveryLog = deliveryLogOn ? createDeliveryLog({ logger, metrics }) : undefined;
  const flushDeliveryLog = async () => {
    await deliveryLog?.flush((deliveryLogConnection ?? background).db);
  };
  const app = createProductionApp({
    config,
    db: database.db,
    enabledSenders,
    metrics,
    clock,
    logger,
    intakeLoad,
    rejections,
    // One batch in flight per request connection: each holds its connection for one transaction.
    groupCommit: { maxBatch: config.INTAKE_BATCH_MAX, lanes: pools.requests },
    deliveryLog,
    tracer: tracing.tracer,
  });
  // Every background step of the process (ops/maintenance/background-steps.ts, the cron's list too), each on its
  // own timer, jittered, one run at a time, stopped before the pools close. The worker applies on one
  // background connection each, so the relay's writes wait at most for one of them; the bulk jobs, the
  // worker and the relay defer to a saturated intake; refusals are written off the request pool, so a flood of
  // them never takes a connection a delivery needs.
  const backgroundJobs = scheduleSteps(
    processSteps,
    {
      config,
      runtime: 'process',
      db: background.db,
      clock,
      logger,
      newId,
      random: Math.random,
      metrics,
      tracer: tracing.tracer,
      expectedMigration,
      publishers,
      intakeLoad,
      backgroundLanes: pools.background,
      spooled: { flushRefusals: () => rejections.flush(background.db), flushDeliveryLog },
    },
    { random: Math.random, logger },
  );
  const server = serve({ fetch: app.fetch, port: config.PORT, serverOptions: httpLimits(config) }, (info) => {
    logger.info('listening', {
      port: info.port,
      database: embedded === undefined ? 'DATABASE_URL' : 'embedded',
      // Where the operator's pages are, or why there are none: /admin answers 404 without a token.
      dashboard: adminOpen(config) ? `http://localhost:${info.port}/admin` : 'off: set ADMIN_TOKEN to open /admin',
    });
    if (devSecret === undefined) return;
    void signedCurlExample({ port: info.port, secret: devSecret, nowMs: clock() }).then((curl) => {
      console.log(
        `\nDevelopment secret for acme (kept in ${config.DATA_DIR}): ${devSecret}\n` +
          `Send a signed event (valid for ${config.WEBHOOK_TOLERANCE_SECONDS}s):\n${curl}\n`,
      );
    });
  });

  // A port already taken or not ours to take is a start-up mistake like the others: one line and
  // exit 1 (the database stopped first), not the stack trace of an unhandled 'error' event.
  try {
    await listening(server);
  } catch (error) {
    await Promise.all(backgroundJobs.map((job) => job.stop()));
    await stopDatabase();
    throw new StartupError(listenProblem(error, config.PORT));
  }

  // Memory stays bounded whatever a client opens, and a full pool first closes a connection
  // overdue with its request: slow uploads cannot lock genuine senders out.
  shedAtCapacity(server, config.HTTP_MAX_CONNECTIONS);

  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info('shutting down', { signal });
    // The background jobs stop claiming now; publishes and applications in flight end within their
    // timeouts, and only then are the pools closed under them.
    const jobsStopped = Promise.all(backgroundJobs.map((job) => job.stop()));
    server.close(() => {
      jobsStopped
        // Every request has been answered: what they refused and the last deliveries are written
        // before the pools close.
        .then(() => rejections.flush(background.db))
        .then(flushDeliveryLog)
        // The relay is done publishing: its broker connection goes before the database.
        .then(() => closePublishers(publishers))
        // The last spans (the final publishes) are sent before the process goes.
        .then(() => tracing.shutdown())
        .then(stopDatabase)
        .then(
          () => process.exit(0),
          () => process.exit(1),
        );
    });
    // Keep-alive sockets would hold close() open: end the idle ones now, the rest when they finish.
    if ('closeIdleConnections' in server) server.closeIdleConnections();
    // close() also stops Node's checks of the headers and request timeouts: a client stalled in its
    // upload would hold the drain open until the platform's SIGKILL. Past the longest a request may
    // still take (all of it received, then its deadline), whatever is left is closed.
    const straggling = setTimeout(() => {
      if ('closeAllConnections' in server) server.closeAllConnections();
    }, config.HTTP_REQUEST_TIMEOUT_MS + config.HANDLER_DEADLINE_MS);
    straggling.unref();
  };
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('SIGTERM', () => shutdown('SIGTERM'));
}

main().catch((error: unknown) => {
  // A start-up mistake, in the environment (ConfigError) or found later, is one line; anything else
  // is a fault of ours and says so.
  const mistake = error instanceof StartupError || error instanceof ConfigError;
  console.error(mistake ? error.message : `start-up failed: ${String(error)}`);
  process.exit(1);
});
