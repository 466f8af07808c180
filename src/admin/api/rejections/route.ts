// The admin API's refused deliveries: GET /admin/api/rejections (the ring, newest first) and
// GET /admin/api/rejections/counts (per sender and reason over a time range). Registered on the admin
// API's own app (src/admin/api/api.ts), so they share its bearer gate, its 400 shape and its OpenAPI
// document. The schemas are schema.ts.
import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import type { BlankSchema } from 'hono/types';
import type { DatabaseEnv } from '../../../db/client.ts';
import { REJECTION_RING_SIZE } from '../../../inbox/rejection-log.ts';
import type { Clock } from '../../../lib/clock.ts';
import {
  countRejections,
  listRejections,
  type RejectionCount,
  type RejectionListing,
} from '../../../ops/reads/rejections.ts';
import { timeRange } from '../../../ops/reads/time-bound.ts';
import { json, refused } from '../openapi-parts.ts';
import { rejectionCountsAnswer, rejectionCountsQuery, rejectionsAnswer, rejectionsQuery } from './schema.ts';

export const rejectionJson = (row: RejectionListing) => ({
  at: row.at.toISOString(),
  provider: row.provider,
  status: row.statusCode,
  reason: row.reason,
  detail: row.detail,
  trace_id: row.traceId,
  headers: row.headers,
});

const countJson = (row: RejectionCount) => ({
  provider: row.provider,
  reason: row.reason,
  status: row.statusCode,
  n: row.n,
  first_minute: row.firstMinute.toISOString(),
  last_minute: row.lastMinute.toISOString(),
});

export function registerRejectionRoutes<BasePath extends string>(
  api: OpenAPIHono<DatabaseEnv, BlankSchema, BasePath>,
  deps: { clock: Clock },
): void {
  const list = createRoute({
    method: 'get',
    path: '/rejections',
    summary: 'The most recent refused deliveries (404, 413, 415, 401, 400, 503), newest first: never a body',
    request: { query: rejectionsQuery },
    responses: { 200: json(rejectionsAnswer, 'the kept refusals'), ...refused },
  });
  const counts = createRoute({
    method: 'get',
    path: '/rejections/counts',
    summary: 'Refused deliveries per sender and reason, counted by whole minute, over a time range',
    request: { query: rejectionCountsQuery },
    responses: { 200: json(rejectionCountsAnswer, 'the counts'), ...refused },
  });

  api.openapi(list, async (c) => {
    const query = c.req.valid('query');
    const rows = await listRejections(c.get('db'), { ...query, ...timeRange(query, deps.clock()) });
    return c.json({ rejections: rows.map(rejectionJson), ring_size: REJECTION_RING_SIZE }, 200);
  });
  api.openapi(counts, async (c) => {
    const query = c.req.valid('query');
    const rows = await countRejections(c.get('db'), { ...query, ...timeRange(query, deps.clock()) });
    return c.json({ counts: rows.map(countJson), total: rows.reduce((sum, row) => sum + row.n, 0) }, 200);
  });
}
