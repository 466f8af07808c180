// The admin API's inputs as zod schemas: validated by @hono/zod-validator in src/ops/admin-api.ts
// and turned into JSON Schema for the OpenAPI document (src/ops/admin-openapi.ts), so the document
// cannot drift from what the routes accept.
import { z } from 'zod';
import { outboxStatuses, webhookEventStatuses } from '../db/schema.ts';

const limit = z.coerce.number().int().min(1).max(1000).default(50).describe('at most this many, newest first');

export const eventsQuery = z.object({
  status: z.enum(webhookEventStatuses).optional(),
  provider: z.string().min(1).max(64).optional(),
  limit,
});

export const eventParams = z.object({
  provider: z.string().min(1).max(64),
  eventId: z.string().min(1).max(255),
});

export const eventQuery = z.object({
  payload: z.enum(['true', 'false']).optional().describe('include the stored payload (null once purged)'),
});

export const outboxQuery = z.object({
  status: z.enum(outboxStatuses).optional(),
  limit,
});

export const messageParams = z.object({ id: z.string().min(1).max(64) });

export const operatorBody = z.object({
  operator: z.string().trim().min(1).max(200).describe('who is doing this; recorded in operator_actions'),
});
