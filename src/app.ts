// The portable service: a Hono app built from its dependencies, with no runtime imports, so Node,
// Workers and the tests all serve the very same routes.
import { Hono } from 'hono';
import { HTTPException } from 'hono/http-exception';
import type { AppDeps } from './deps.ts';
import { AppError } from './errors.ts';
import { intakeRoutes } from './inbox/intake.ts';
import { adminRoutes } from './ops/admin.ts';
import { healthRoutes } from './ops/health.ts';
import { metricsRoutes } from './ops/metrics-routes.ts';

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
