// The admin API's counts by status (stats/route.ts): events and outbox messages, and the oldest
// backlog's ages.
import { z } from '@hono/zod-openapi';

export const statsAnswer = z.object({
  events: z.record(z.string(), z.number().int()),
  outbox: z.record(z.string(), z.number().int()),
  oldest_unprocessed_seconds: z.number(),
  oldest_pending_outbox_seconds: z.number(),
});
