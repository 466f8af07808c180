// The portable service: a Hono app built from its dependencies, with no runtime imports, so Node,
// Workers and the tests all serve the very same routes.
import { Hono } from 'hono';
import { HTTPException } from 'hono/http-exception';
import { adminRoutes } from './admin/routes.ts';
import { expectedMigration } from './db/migrations.ts';
import type { AppDeps } from './deps.ts';
import { defaultHandlers } from './domain/handlers.ts';
import { intakeRoutes } from './inbox/intake.ts';
import { AppError } from './lib/errors.ts';
import { healthRoutes } from './ops/health.ts';
import { defaultGaugeSources, metricsRoutes } from './ops/metrics-routes.ts';

/** A 32-hex id (trace ids, relay and worker ids), from the Web Crypto both runtimes have. */
export const newHexId = (): string => crypto.randomUUID().replaceAll('-', '');

/** What the entry points supply; the rest of a production app is the same everywhere. */
export type RuntimeDeps = Pick<AppDeps, 'config' | 'db' | 'providers' | 'metrics' | 'clock' | 'logger'> &
  Pick<Partial<AppDeps>, 'intakeLoad'>;

/** The app as `npm start` and the Worker serve it: the shipped handlers, gauges and migration mark. */
export function createProductionApp(runtime: RuntimeDeps): Hono {
  return createApp({
    ...runtime,
    handlers: defaultHandlers,
    gaugeSources: defaultGaugeSources,
    newId: newHexId,
    expectedMigration,
  });
}

export function createApp(deps: AppDeps): Hono {
  const app = new Hono();
  app.route('/', healthRoutes(deps));
  app.route('/', metricsRoutes(deps));
  app.route('/', intakeRoutes(deps));
  app.route('/', adminRoutes(deps));

  app.notFound(() => new AppError('not_found').getResponse());
  app.onError((error) => {
    // Our own errors, and Hono's (bearer auth) which carry a response we built for them.
    if (error instanceof HTTPException) return error.getResponse();
    // Anything unforeseen is ours, not the sender's: log the class only and ask for a retry.
    deps.logger.error('unhandled error', { error: error.name });
    return new AppError('unavailable', { cause: error }).getResponse();
  });
  return app;
}
