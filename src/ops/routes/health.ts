// Liveness and readiness: /healthz answers while the process runs; /readyz only while the database
// answers and has every migration this code expects.
import { Hono } from 'hono';
import type { DatabaseEnv } from '../../db/client.ts';
import { hasPendingMigrations, type MigrationMark } from '../../db/migrations.ts';

export function healthRoutes(deps: { expectedMigration: MigrationMark }): Hono<DatabaseEnv> {
  const routes = new Hono<DatabaseEnv>();
  routes.get('/healthz', (c) => c.json({ status: 'ok' }));
  routes.get('/readyz', async (c) => {
    try {
      if (await hasPendingMigrations(c.get('db'), deps.expectedMigration)) {
        return c.json({ status: 'unavailable', reason: 'migrations pending' }, 503);
      }
      return c.json({ status: 'ready' });
    } catch {
      return c.json({ status: 'unavailable', reason: 'database unreachable' }, 503);
    }
  });
  return routes;
}
