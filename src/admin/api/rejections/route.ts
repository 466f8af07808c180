// The admin API's refused deliveries: GET /admin/api/rejections (the ring, newest first) and
// GET /admin/api/rejections/counts (per sender and reason over a time range). Registered on the admin
// API's own app (src/admin/api/api.ts), so they share its bearer gate, its 400 shape and its OpenAPI
// document. The schemas are here too, and the dashboard's page parses its address with them.
import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import type { BlankSchema } from 'hono/types';
import type { DatabaseEnv } from '../../../db/client.ts';
import { REJECTION_RING_SIZE } from '../../../inbox/rejection-log.ts';
import { UNKNOWN_SENDER } from '../../../inbox/rejections.ts';
import type { Clock } from '../../../lib/clock.ts';
import { rejectionReasons } from '../../../lib/rejection-reasons.ts';
import {
  countRejections,
  listRejections,
  type RejectionCount,
  type RejectionListing,
} from '../../../ops/reads/rejections.ts';
import { timeRange } from '../../../ops/reads/time-bound.ts';
import { allProviders } from '../../../providers/registry.ts';
import { json, refused } from '../openapi-parts.ts';
import { timeBound } from '../schemas.ts';

/** A sender's name as refusals are recorded under it: a route's name, or the one for routes that name none. */
export const rejectionProviders: [string, ...string[]] = [
  UNKNOWN_SENDER,
  ...allProviders.map((provider) => provider.name),
];

/** Refusals listed unless `limit` says otherwise. */
export const REJECTIONS_DEFAULT_LIMIT = 50;

const filterFields = {
  provider: z
    .enum(rejectionProviders)
    .optional()
    .openapi({ description: `the sender; \`${UNKNOWN_SENDER}\` for routes that named no enabled sender` }),
  reason: z.enum(rejectionReasons).optional(),
};

export const rejectionsQuery = z
  .object({
    ...filterFields,
    since: timeBound('refused at or after'),
    until: timeBound('refused before'),
    limit: z.coerce
      .number()
      .int()
      .min(1)
      .max(REJECTION_RING_SIZE)
      .default(REJECTIONS_DEFAULT_LIMIT)
      .openapi({ description: 'at most this many, newest first' }),
  })
  .strict();

export const rejectionCountsQuery = z
  .object({
    ...filterFields,
    since: timeBound('minutes starting at or after'),
    until: timeBound('minutes starting before'),
  })
  .strict();

const timestamp = z.string().openapi({ format: 'date-time' });

const rejectionSchema = z
  .object({
    at: timestamp,
    provider: z.string(),
    status: z.number().int(),
    reason: z.string(),
    detail: z
      .string()
      .nullable()
      .openapi({ description: 'the field, limit, content type or requested route it failed on' }),
    trace_id: z.string().nullable(),
    headers: z.record(z.string(), z.string()).openapi({
      description:
        'as received, names lower-cased, credentials "[redacted]" (whole values by header name; credential-like query parameters inside URLs and query strings), values cut at 200 characters',
    }),
  })
  .openapi('Rejection');

const rejectionsAnswer = z.object({
  rejections: rejectionSchema.array(),
  ring_size: z.number().int().openapi({ description: 'how many of the most recent refusals are kept' }),
});

const rejectionCountSchema = z
  .object({
    provider: z.string(),
    reason: z.string(),
    status: z.number().int().nullable(),
    n: z.number().int(),
    first_minute: timestamp,
    last_minute: timestamp,
  })
  .openapi('RejectionCount');

const rejectionCountsAnswer = z.object({
  counts: rejectionCountSchema.array().openapi({ description: 'per sender and reason, the most frequent first' }),
  total: z.number().int(),
});

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
