// What the portable app needs from its runtime, passed in once by the entry points (and by tests):
// the union of what each group of routes declares it needs.
import type { AdminRoutesDeps } from './admin/routes.ts';
import type { Database } from './db/client.ts';
import type { MigrationMark } from './db/migrations.ts';
import type { IntakeDeps } from './inbox/intake.ts';
import type { MetricsDeps } from './ops/routes/metrics.ts';

export type AppDeps = IntakeDeps &
  AdminRoutesDeps &
  MetricsDeps & {
    /** Migration the database must have applied for /readyz (the journal's last entry). */
    expectedMigration: MigrationMark;
    /**
     * The database of every request that brings none of its own: the process's pool on Node. A
     * Worker passes each request the client it opened for it instead (`app.fetch(request, { db })`).
     */
    db?: Database;
  };
