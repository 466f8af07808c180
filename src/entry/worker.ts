// The Cloudflare Workers entry: the same portable app as `npm start`, served by workerd, with
// PostgreSQL through the Hyperdrive binding and the maintenance steps on the cron trigger. Bindings
// arrive with each invocation, so the environment is validated here, by the same parseConfig. With an
// OTLP endpoint among them, spans are exported over `fetch` from each request's and cron run's waitUntil.

import type { Hono } from 'hono';
import { createProductionApp } from '../app.ts';
import { type Config, ConfigError, type ConfigWarning, parseConfig } from '../config.ts';
import { connectDatabase, type DatabaseEnv, type DatabaseHandle } from '../db/client.ts';
import { describeError } from '../db/errors.ts';
import { expectedMigration } from '../db/migrations.ts';
import { defaultHandlers } from '../domain/handlers.ts';
import { createDeliveryLog, type DeliveryLog } from '../inbox/delivery-log.ts';
import { createRejectionLog, type RejectionLog } from '../inbox/rejection-log.ts';
import { newHexId } from '../lib/clock.ts';
import { AppError, errorName } from '../lib/errors.ts';
import { createLogger, type Logger } from '../lib/logger.ts';
import { labelBounds, Metrics } from '../lib/metrics.ts';
import type { Tracer } from '../lib/tracing.ts';
import { cronSteps } from '../ops/maintenance/background-steps.ts';
import { runMaintenance } from '../ops/maintenance/cron.ts';
import { checkSenderLimits } from '../ops/sender-setup/sender-limits.ts';
import { configuredRouting } from '../outbox/destinations.ts';
import { portableDestinationPublishers, queueBindings } from '../outbox/publishers/portable.ts';
import type { QueueProducer } from '../outbox/publishers/queues.ts';
import { providerExtras, providerSecrets } from '../sender-variables.ts';
import { configuredSenders, enableSenders } from '../senders/registry.ts';
import { fetchTraceExporter, tracingWith } from './setup/tracing-sdk.ts';

/**
 * A Worker invocation may hold six simultaneous outgoing connections; Hyperdrive's postgres.js guide
 * asks for at most five, leaving one for other subrequests (the outbox relay's publish calls).
 */
const WORKER_MAX_CONNECTIONS = 5;

/**
 * Cron runs of schedules shorter than an hour may last 30 s (Workers limits); the steps share 25 s
 * and the rest is left for closing the connections.
 */
const SCHEDULED_BUDGET_MS = 25_000;

/**
 * What one set of bindings yields: parsed once, because importing keys per request is forbidden, and
 * the app built once, so what it keeps (the isolate's counters, the backlog gate's count) outlives a
 * request. /metrics here reports this isolate's deliveries only.
 */
interface Runtime {
  config: Config;
  logger: Logger;
  app: Hono<DatabaseEnv>;
  /** Refused deliveries of this isolate, written after the answer of the request that refused them. */
  rejections: RejectionLog;
  /** The isolate's delivery log, written after each request with that request's client (none when off). */
  deliveryLog: DeliveryLog | undefined;
  /** The Queues producer bindings wrangler.toml declares (OUTBOX_QUEUE, and any a destination names). */
  outboxQueues: ReadonlyMap<string, QueueProducer>;
  /**
   * The isolate's tracer (`noTracing` without an OTLP endpoint binding). Its batch processor is
   * flushed at the end of each invocation, inside that invocation's waitUntil: an export started by
   * the processor's own timer could run outside any request.
   */
  tracer: Tracer;
}

const newLogger = (level: Config['LOG_LEVEL']) => createLogger({ level, now: () => new Date() });

/**
 * Keyed by the env object itself: workerd hands the same object to every invocation of an isolate
 * while the bindings stay as they are, and a deployment or secret change brings new bindings in a
 * new object. A WeakMap lets an old one go with its keys.
 */
const runtimes = new WeakMap<Env, Promise<Runtime>>();

async function buildRuntime(env: Env): Promise<Runtime> {
  // Bindings that are not strings (HYPERDRIVE) are not configuration variables.
  const bindings: Readonly<Record<string, unknown>> = { ...env };
  const variables = Object.fromEntries(
    Object.entries(bindings).filter((entry): entry is [string, string] => typeof entry[1] === 'string'),
  );
  // No files here: a `_FILE` variable is refused, naming it; secrets come as `wrangler secret put`.
  const warnings: ConfigWarning[] = [];
  const config = parseConfig(variables, { warn: (warning) => warnings.push(warning) });
  checkSenderLimits(config, { warn: (warning) => warnings.push(warning) });
  // The binding is typed as present, but wrangler.toml is edited by hand: say so instead of a TypeError.
  const hyperdrive: unknown = bindings.HYPERDRIVE;
  if (typeof hyperdrive !== 'object' || hyperdrive === null || !('connectionString' in hyperdrive)) {
    throw new ConfigError(['HYPERDRIVE: no Hyperdrive binding of that name (wrangler.toml [[hyperdrive]])']);
  }
  // A broker URL, or a queue binding wrangler.toml lacks, cannot be published to from a Worker:
  // refused now, with the fix, not at each cron run.
  const outboxQueues = queueBindings(bindings);
  portableDestinationPublishers(configuredRouting(config), {
    clock: () => Date.now(),
    logger: newLogger('silent'),
    queues: outboxQueues,
  });
  // `npm start` makes a development secret when none is set; a Worker has nowhere to keep one.
  if (configuredSenders(config.senderSettings).enablingVariables.length === 0) {
    throw new ConfigError(['no provider secret is set (e.g. ACME_WEBHOOK_SECRET: `wrangler secret put`)']);
  }
  const enabledSenders = await enableSenders(providerSecrets(config), providerExtras(config));
  // The same OTEL_* variables as on Node; a protocol other than http/protobuf or http/json, or a
  // malformed OTEL_BSP_*, makes the configuration unusable, naming the variable.
  const { tracer } = tracingWith(variables, fetchTraceExporter);
  const logger = newLogger(config.LOG_LEVEL);
  for (const warning of warnings) logger.warn(warning.message, { variable: warning.variable });
  const metrics = new Metrics(labelBounds(enabledSenders.keys(), defaultHandlers));
  const rejections = createRejectionLog({ logger, metrics });
  const deliveryLog = config.DELIVERY_LOG_FLUSH_MS === 0 ? undefined : createDeliveryLog({ logger, metrics });
  const app = createProductionApp({
    config,
    enabledSenders,
    metrics,
    clock: () => Date.now(),
    logger,
    rejections,
    deliveryLog,
    tracer,
  });
  return { config, logger, app, rejections, deliveryLog, outboxQueues, tracer };
}

function loadRuntime(env: Env): Promise<Runtime> {
  let runtime = runtimes.get(env);
  if (runtime === undefined) {
    runtime = buildRuntime(env);
    runtimes.set(env, runtime);
    // Not kept when it failed: the next invocation reports the problem again, or gets past it.
    runtime.catch(() => runtimes.delete(env));
  }
  return runtime;
}

function reportUnusable(error: unknown): void {
  newLogger('error').error('configuration unusable', {
    error: error instanceof ConfigError ? error.message : describeError(error),
  });
}

/**
 * The spans that ended in this isolate, sent within the invocation that waits on this. A collector
 * that is down or refuses costs those spans and one log line (the errors' class names: a message may
 * quote the endpoint), never the invocation.
 */
function exportSpans({ tracer, logger }: Runtime): Promise<void> {
  return tracer.flush().catch((error: unknown) => {
    // The provider rejects with one error per span processor.
    logger.warn('trace export failed', { errors: (Array.isArray(error) ? error : [error]).map(errorName) });
  });
}

/** A postgres.js client for this invocation only: sockets cannot outlive the request that opened them. */
function openDatabase(env: Env, config: Config): DatabaseHandle {
  return connectDatabase({
    url: env.HYPERDRIVE.connectionString,
    maxConnections: Math.min(config.DB_POOL_MAX, WORKER_MAX_CONNECTIONS),
    statementTimeoutMs: config.HANDLER_DEADLINE_MS,
    // Hyperdrive's postgres.js guide: no array types here, so skip the type-fetch round trip.
    fetchTypes: false,
    // Hyperdrive supports postgres.js's named prepared statements (its pooling docs) and caches them;
    // with `prepare: false` every query would pay extra round trips (its postgres.js guide).
    prepare: true,
  });
}

async function serve(request: Request, env: Env, ctx: ExecutionContext): Promise<Response> {
  let runtime: Runtime;
  try {
    runtime = await loadRuntime(env);
  } catch (error) {
    // Misconfigured: 503 asks senders to retry, so nothing is lost while the bindings are fixed.
    reportUnusable(error);
    return new AppError('unavailable').getResponse();
  }
  const database = openDatabase(env, runtime.config);
  try {
    return await runtime.app.fetch(request, { db: database.db }, ctx);
  } finally {
    // After the answer: what it refused and the delivery log are written (nothing to do when there is
    // nothing), then ending the client waits for its last statement and closes the sockets.
    const written = runtime.rejections.flush(database.db).then(() => runtime.deliveryLog?.flush(database.db));
    ctx.waitUntil(written.finally(() => database.close()));
    // The request's spans have ended with its answer (those of the writes above are not traced).
    ctx.waitUntil(exportSpans(runtime));
  }
}

async function maintain(controller: ScheduledController, env: Env): Promise<void> {
  let runtime: Runtime;
  try {
    runtime = await loadRuntime(env);
  } catch (error) {
    reportUnusable(error);
    return;
  }
  const { config, logger, outboxQueues, tracer } = runtime;
  const database = openDatabase(env, config);
  try {
    const clock = () => Date.now();
    // Every destination drains in each run, each through its own publisher (outbox/publishers/portable.ts).
    const publishers = portableDestinationPublishers(configuredRouting(config), {
      clock,
      logger,
      queues: outboxQueues,
    });
    await runMaintenance(
      cronSteps,
      {
        config,
        db: database.db,
        clock,
        logger,
        expectedMigration,
        runtime: 'cron',
        publishers,
        // Random, as every runner's: the run's isolate shares no counter with the others.
        newId: newHexId,
        random: Math.random,
        tracer,
      },
      { budgetMs: SCHEDULED_BUDGET_MS, fields: { cron: controller.cron } },
    );
  } finally {
    // The run's spans (publishes, applications), sent while the cron invocation is still waited on.
    await Promise.all([database.close(), exportSpans(runtime)]);
  }
}

export default {
  fetch: serve,
  scheduled(controller, env, ctx) {
    ctx.waitUntil(maintain(controller, env));
  },
} satisfies ExportedHandler<Env>;
