// Liveness and readiness: /healthz answers while the process runs; /readyz only while the database
// answers and has every migration this code expects.
import { Hono } from 'hono';
import { hasPendingMigrations } from '../db/migrations.ts';
import type { AppDeps } from '../deps.ts';

export function healthRoutes(deps: AppDeps): Hono {
  const routes = new Hono();
  routes.get('/healthz', (c) => c.json({ status: 'ok' }));
  routes.get('/readyz', async (c) => {
    try {
      if (await hasPendingMigrations(deps.db, deps.expectedMigration)) {
        return c.json({ status: 'unavailable', reason: 'migrations pending' }, 503);
      }
      return c.json({ status: 'ready' });
    } catch {
      return c.json({ status: 'unavailable', reason: 'database unreachable' }, 503);
    }
  });
  return routes;
}
