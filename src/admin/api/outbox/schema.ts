// The admin API's outbox messages' inputs and answers (outbox/route.ts): the list's query and page,
// one message with its row for every destination, and a retry's answer.
import { z } from '@hono/zod-openapi';
import { outboxStatuses } from '../../../db/schema.ts';
import { isMessageId } from '../../../outbox/operator.ts';
import { cursor, limit, listPage, nullableTimestamp, pathParam, textFilter, timeBound } from '../schemas.ts';

export const outboxQuery = z
  .object({
    status: z.enum(outboxStatuses).optional(),
    topic: textFilter(255, 'topic, exactly'),
    destination: textFilter(40, 'a configured destination, exactly (any other name is refused)'),
    id: textFilter(36, 'message ids starting with this'),
    since: timeBound('created at or after'),
    until: timeBound('created before'),
    cursor: cursor(1, isMessageId),
    limit,
  })
  .strict();

export const messageParams = z.object({ id: pathParam('id', 64) });

export const outboxMessageSchema = z
  .object({
    id: z.string().openapi({ format: 'uuid' }),
    topic: z.string(),
    deduplication_key: z.string(),
    status: z.enum(outboxStatuses),
    attempts: z.number().int(),
    last_error: z.string().nullable(),
    created_at: nullableTimestamp,
    available_at: nullableTimestamp,
    published_at: nullableTimestamp,
    locked_until: nullableTimestamp,
    destination: z.string().openapi({ description: 'the destination this row goes to (one row per destination)' }),
    waiting: z.string().nullable().optional().openapi({
      description:
        "in the outbox list, a message's own answer and a retry's: while it is pending and its destination is paused or its circuit is not closed, why it waits (the destination's `waiting`); else null",
    }),
    payload: z.unknown().optional().openapi({ description: 'only with ?payload=true' }),
  })
  .openapi('OutboxMessage');

export const outboxPage = listPage('messages', outboxMessageSchema).openapi('OutboxPage');

export const messageAnswer = z.object({
  message: outboxMessageSchema,
  destinations: z
    .object({
      destination: z.string(),
      id: z.string().openapi({ format: 'uuid' }),
      status: z.enum(outboxStatuses),
      attempts: z.number().int(),
      last_error: z.string().nullable(),
      published_at: nullableTimestamp,
    })
    .array()
    .openapi({
      description: "the same message's row for every destination it goes to (this one included): each one's outcome",
    }),
});

export const retryAnswer = z.object({
  retried: z.boolean().openapi({ description: 'false when the message was not dead (left as it was)' }),
  message: outboxMessageSchema,
});
