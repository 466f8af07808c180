// The admin API under /admin/api (mounted behind the bearer gate by src/admin/routes.ts): one
// OpenAPIHono that every resource registers its routes on (<resource>/route.ts, its schemas beside it
// in <resource>/schema.ts): the inbox's events (list, show, replay), the outbox's messages (list,
// show, retry), counts by status (stats), the senders' pauses, the destinations, the bulk jobs and
// the refused deliveries (rejections); and the OpenAPI document they write. Routes are declared with
// @hono/zod-openapi, so the zod schemas that validate each request also write the document. Every
// answer, errors included, is JSON; a refused input is a 400 naming the field, never echoing a value.

import { createRoute, OpenAPIHono } from '@hono/zod-openapi';
import { HTTPException } from 'hono/http-exception';
import type { DatabaseEnv } from '../../db/client.ts';
import { AppError, refusedField } from '../../lib/errors.ts';
import type { Metrics } from '../../lib/metrics.ts';
import { type DestinationRoutesDeps, registerDestinationRoutes } from './destinations/route.ts';
import { type EventRoutesDeps, registerEventRoutes } from './events/route.ts';
import { registerJobRoutes } from './jobs/route.ts';
import { invalidRequest, json, unauthorized } from './openapi-parts.ts';
import { type OutboxRoutesDeps, registerOutboxRoutes } from './outbox/route.ts';
import { registerRejectionRoutes } from './rejections/route.ts';
import { documentAnswer } from './schemas.ts';
import { registerSenderRoutes, type SenderRoutesDeps } from './senders/route.ts';
import { registerStatsRoutes } from './stats/route.ts';

export const ADMIN_API_BASE = '/admin/api';

const routes = {
  document: createRoute({
    method: 'get',
    path: '/openapi.json',
    summary: 'This document',
    responses: { 200: json(documentAnswer, 'OpenAPI 3.1'), 401: unauthorized },
  }),
};

const DOCUMENT_INFO = {
  openapi: '3.1.0',
  info: {
    title: 'Webhook Inbox admin API',
    version: '1',
    description:
      'Operator access to the inbox, the outbox and the refused deliveries. Replays and retries are recorded in operator_actions.',
  },
  security: [{ bearer: [] }],
};

/** What the admin API and the dashboard need besides each request's database (`c.get('db')`). */
export interface AdminDeps extends EventRoutesDeps, OutboxRoutesDeps, SenderRoutesDeps, DestinationRoutesDeps {
  /** Counts replays and retries; the dashboard reads its per-minute request times. */
  metrics: Pick<Metrics, 'countReplay' | 'countRetry' | 'latencyQuantiles'>;
}

export function adminApiRoutes(deps: AdminDeps) {
  const api = new OpenAPIHono<DatabaseEnv>({
    defaultHook: (result) => {
      if (!result.success) throw invalidRequest(refusedField(result.error));
    },
  }).basePath(ADMIN_API_BASE);
  api.openAPIRegistry.registerComponent('securitySchemes', 'bearer', {
    type: 'http',
    scheme: 'bearer',
    description:
      'ADMIN_TOKEN (the request names its operator), or a named token of ADMIN_TOKENS (its owner is the operator)',
  });

  registerEventRoutes(api, deps);
  registerOutboxRoutes(api, deps);
  registerStatsRoutes(api);
  registerSenderRoutes(api, deps);
  registerDestinationRoutes(api, deps);
  registerJobRoutes(api, deps);
  registerRejectionRoutes(api, deps);

  let document: Record<string, unknown> | undefined;
  api.openapi(routes.document, (c) => {
    // Generated on first request, not at start-up: a Worker isolate that never serves it never builds it.
    document ??= api.getOpenAPI31Document(DOCUMENT_INFO) as unknown as Record<string, unknown>;
    return c.json(document, 200);
  });

  // The app's onError answers everything else; the body's media-type check (from @hono/zod-openapi)
  // throws a bare 415 that would not be JSON, so it gets the service's shape here.
  api.onError((error) => {
    if (error instanceof HTTPException && !(error instanceof AppError) && error.status === 415) {
      return new AppError('unsupported_media_type').getResponse();
    }
    throw error;
  });
  return api;
}
