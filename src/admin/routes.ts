// Everything under /admin: the bearer gate (ADMIN_TOKEN and the named ADMIN_TOKENS, constant-time),
// the JSON API at /admin/api and the HTML dashboard at /admin. Without any token nothing is mounted, so every /admin path
// falls through to the app's JSON 404. Request bodies are capped (ADMIN_MAX_BODY_BYTES): the bodies
// routes take are `{"operator"}`, a pause's (a length and a note) and a bulk job's (a few short filter
// fields: under 4 KiB), and a valid token must not let a client make us read 50 MB.
import { Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import type { DatabaseEnv } from '../db/client.ts';
import { AppError } from '../lib/errors.ts';
import { type AdminDeps, adminApiRoutes } from './api/api.ts';
import { dashboardSignIn } from './dashboard/gate.tsx';
import { dashboardRoutes } from './dashboard/routes.tsx';
import { type AdminTokens, adminGate } from './operators.ts';

/** Bytes an admin request body may have: an operator name of 200 characters needs under 1 KiB. */
export const ADMIN_MAX_BODY_BYTES = 16_384;

export interface AdminRoutesDeps extends AdminDeps {
  config: AdminTokens;
}

export function adminRoutes(deps: AdminRoutesDeps): Hono<DatabaseEnv> {
  const routes = new Hono<DatabaseEnv>();
  const gate = adminGate(deps.config);
  if (gate === undefined) return routes;
  // A browser's plain navigation to a dashboard page gets the sign-in page (still a 401); see dashboard/gate.tsx.
  const signIn = dashboardSignIn();
  routes.use('/admin', signIn);
  routes.use('/admin/*', signIn);
  routes.use('/admin', gate);
  routes.use('/admin/*', gate);
  // After the gate: a refused token costs no read. Counted as it streams, declared length or not.
  routes.use(
    '/admin/*',
    bodyLimit({ maxSize: ADMIN_MAX_BODY_BYTES, onError: () => new AppError('payload_too_large').getResponse() }),
  );
  routes.route('/', adminApiRoutes(deps));
  routes.route('/admin', dashboardRoutes(deps));
  return routes;
}
