// Everything under /admin: the bearer gate (ADMIN_TOKEN, constant-time), the JSON API at /admin/api
// and the HTML dashboard at /admin. Without ADMIN_TOKEN nothing is mounted, so every /admin path
// falls through to the app's JSON 404.
import { Hono } from 'hono';
import type { Config } from '../config.ts';
import type { DatabaseEnv } from '../db/client.ts';
import { requireBearer } from '../lib/bearer.ts';
import { type AdminDeps, adminApiRoutes } from './api.ts';
import { dashboardRoutes, dashboardSignIn } from './dashboard.tsx';

export interface AdminRoutesDeps extends AdminDeps {
  config: Pick<Config, 'ADMIN_TOKEN'>;
}

export function adminRoutes(deps: AdminRoutesDeps): Hono<DatabaseEnv> {
  const routes = new Hono<DatabaseEnv>();
  const token = deps.config.ADMIN_TOKEN;
  if (token === undefined) return routes;
  const gate = requireBearer(token);
  // A browser's plain navigation to a dashboard page gets the sign-in page (still a 401); see dashboard.tsx.
  const signIn = dashboardSignIn();
  routes.use('/admin', signIn);
  routes.use('/admin/*', signIn);
  routes.use('/admin', gate);
  routes.use('/admin/*', gate);
  routes.route('/', adminApiRoutes(deps));
  routes.route('/admin', dashboardRoutes(deps));
  return routes;
}
