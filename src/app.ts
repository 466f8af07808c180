// The portable service: a Hono app built once from its dependencies, with no runtime imports, so
// Node, Workers and the tests all serve the very same routes. Each request's database is bound to
// its context here (`c.get('db')`), so state the routes keep (the backlog gate's count) outlives it.
import { Hono } from 'hono';
import { HTTPException } from 'hono/http-exception';
import { adminRoutes } from './admin/routes.ts';
import type { Config } from './config.ts';
import type { DatabaseEnv } from './db/client.ts';
import { expectedMigration } from './db/migrations.ts';
import type { AppDeps } from './deps.ts';
import { configuredHandlers } from './domain/handlers.ts';
import { intakeRoutes } from './inbox/intake.ts';
import { newHexId } from './lib/clock.ts';
import { AppError } from './lib/errors.ts';
import { destinationGauges } from './ops/reads/destinations-view.ts';
import { healthRoutes } from './ops/routes/health.ts';
import { defaultGaugeSources, metricsRoutes } from './ops/routes/metrics.ts';
import { configuredRouting } from './outbox/destinations.ts';

/** What the entry points supply; the rest of a production app is the same everywhere. */
export type RuntimeDeps = Pick<AppDeps, 'enabledSenders' | 'metrics' | 'clock' | 'logger'> &
  Pick<
    Partial<AppDeps>,
    'intakeLoad' | 'db' | 'groupCommit' | 'rejections' | 'deliveryLog' | 'tracer' | 'bodyReader'
  > & {
    /** The app's settings, and the outbox destinations its handlers route messages to. */
    config: AppDeps['config'] & Pick<Config, 'OUTBOX_TARGET_URL' | 'OUTBOX_DESTINATIONS'>;
  };

/**
 * The app as `npm start` and the Worker serve it: the shipped handlers (routed to the configured
 * outbox destinations), gauges and migration mark.
 */
export function createProductionApp(runtime: RuntimeDeps): Hono<DatabaseEnv> {
  const outboxRouting = configuredRouting(runtime.config);
  return createApp({
    ...runtime,
    handlers: configuredHandlers(runtime.config, runtime.logger),
    outboxRouting,
    gaugeSources: [...defaultGaugeSources, destinationGauges(outboxRouting)],
    newId: newHexId,
    expectedMigration,
  });
}

export function createApp(deps: AppDeps): Hono<DatabaseEnv> {
  const app = new Hono<DatabaseEnv>();
  app.use(async (c, next) => {
    const db = c.env?.db ?? deps.db;
    // A wiring mistake of ours, not the sender's: onError answers 503 and the sender retries.
    if (db === undefined) throw new Error('no database bound to this request');
    c.set('db', db);
    await next();
  });
  app.route('/', healthRoutes(deps));
  app.route('/', metricsRoutes(deps));
  app.route('/', intakeRoutes(deps));
  app.route('/', adminRoutes(deps));

  app.notFound(() => new AppError('not_found').getResponse());
  app.onError((error) => {
    if (error instanceof AppError) return error.getResponse();
    // Hono's own 400 (a malformed JSON body for a validator) in the service's error shape.
    if (error instanceof HTTPException && error.status === 400) return new AppError('invalid_request').getResponse();
    // The bearer gate's 401, which carries a response we built for it.
    if (error instanceof HTTPException) return error.getResponse();
    // Anything unforeseen is ours, not the sender's: log the class only and ask for a retry.
    deps.logger.error('unhandled error', { error: error.name });
    return new AppError('unavailable', { cause: error }).getResponse();
  });
  return app;
}
