// The admin API's counts by status: GET /admin/api/stats, events and outbox messages by status and
// the oldest backlog's ages (src/ops/reads/events.ts). Registered on the admin API's own app (../api.ts),
// so it shares its bearer gate and its OpenAPI document. The schema is schema.ts.
import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import type { DatabaseEnv } from '../../../db/client.ts';
import { statusCounts } from '../../../ops/reads/events.ts';
import { json, unauthorized } from '../openapi-parts.ts';
import { statsAnswer } from './schema.ts';

const routes = {
  stats: createRoute({
    method: 'get',
    path: '/stats',
    summary: 'Counts by status for events and outbox, and the oldest backlog ages',
    responses: { 200: json(statsAnswer, 'counts and ages'), 401: unauthorized },
  }),
};

/** Registers the stats route on the admin API (after its base path and validation hook are set). */
export function registerStatsRoutes(api: OpenAPIHono<DatabaseEnv>): void {
  api.openapi(routes.stats, async (c) => {
    const counts = await statusCounts(c.get('db'));
    return c.json(
      {
        events: counts.events,
        outbox: counts.outbox,
        oldest_unprocessed_seconds: counts.oldestUnprocessedSeconds,
        oldest_pending_outbox_seconds: counts.oldestPendingOutboxSeconds,
      },
      200,
    );
  });
}
