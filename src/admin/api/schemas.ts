// The admin API's inputs and answers as zod schemas. The routes validate with the input schemas
// (src/admin/api/api.ts, through @hono/zod-openapi) and the OpenAPI document is generated from the same
// objects, so the document cannot drift from what the routes accept. Queries are strict: a parameter
// the route does not know is refused, not ignored (a misspelt filter would otherwise list everything).
import { z } from '@hono/zod-openapi';
import { outboxStatuses, webhookEventStatuses } from '../../db/schema.ts';
import { OPERATOR_NAME_MAX, operatorNameProblem } from '../../lib/operator-name.ts';
import { isStorableText } from '../../lib/text.ts';
import { decodeCursor } from '../../ops/reads/cursor.ts';
import { parseTimeBound } from '../../ops/reads/time-bound.ts';
import { isMessageId } from '../../outbox/operator.ts';
import { allProviders } from '../../providers/registry.ts';

const providerNames = allProviders.map((provider) => provider.name) as [string, ...string[]];

/** Rows in a page unless `limit` says otherwise (the API's and the dashboard's lists). */
export const DEFAULT_LIMIT = 50;

/** A text filter: refused (400) when the database could not compare it (NUL, a lone surrogate). */
const textFilter = (max: number, description: string) =>
  z
    .string()
    .min(1)
    .max(max)
    .refine(isStorableText, { message: 'not storable text' })
    .optional()
    .openapi({ description });

const limit = z.coerce
  .number()
  .int()
  .min(1)
  .max(1000)
  .default(DEFAULT_LIMIT)
  .openapi({ description: 'at most this many, newest first' });

/** `since`/`until`: an ISO 8601 time with its offset, or a duration back from now (90s, 15m, 6h, 2d). */
export const timeBound = (description: string) =>
  z
    .string()
    .max(64)
    .refine((value) => parseTimeBound(value, 0) !== undefined, { message: 'not a time' })
    .optional()
    .openapi({ description: `${description}: an ISO 8601 time or a duration back from now (90s, 15m, 6h, 2d)` });

const cursor = (keys: number, isKey?: (key: string) => boolean) =>
  z
    .string()
    .max(2048)
    .refine((value) => decodeCursor(value, keys, isKey) !== undefined, { message: 'not a cursor' })
    .optional()
    .openapi({ description: "the previous page's next_cursor" });

export const eventsQuery = z
  .object({
    status: z.enum(webhookEventStatuses).optional(),
    provider: z.enum(providerNames).optional(),
    type: textFilter(255, 'event type, exactly'),
    id: textFilter(255, 'event ids starting with this'),
    subject: textFilter(
      255,
      "the sender's own id of what the event is about, exactly: Stripe data.object.id, GitHub repository.full_name, Shopify's resource id, acme data.id (while the payload is kept)",
    ),
    since: timeBound('received at or after'),
    until: timeBound('received before'),
    cursor: cursor(2),
    limit,
  })
  .strict();

export const eventParams = z.object({
  provider: z
    .string()
    .min(1)
    .max(64)
    .openapi({ param: { name: 'provider', in: 'path' } }),
  eventId: z
    .string()
    .min(1)
    .max(255)
    .openapi({ param: { name: 'eventId', in: 'path' } }),
});

const payloadFlag = z
  .enum(['true', 'false'])
  .optional()
  .openapi({ description: 'include the stored payload (null once purged)' });

export const eventQuery = z.object({ payload: payloadFlag }).strict();

/** An event named in the query rather than the path: the form for ids URL parsers rewrite (`.`, `..`). */
export const eventKeyQuery = z
  .object({
    provider: eventParams.shape.provider.openapi({ param: { name: 'provider', in: 'query' } }),
    event_id: eventParams.shape.eventId.openapi({ param: { name: 'event_id', in: 'query' } }),
    payload: payloadFlag,
  })
  .strict();

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

export const messageParams = z.object({
  id: z
    .string()
    .min(1)
    .max(64)
    .openapi({ param: { name: 'id', in: 'path' } }),
});

export const messageQuery = z.object({ payload: payloadFlag }).strict();

export const operatorBody = z
  .object({
    operator: z
      .string()
      .trim()
      .min(1)
      .max(OPERATOR_NAME_MAX)
      .refine((name) => operatorNameProblem(name) === undefined, { message: 'not an operator name' })
      .openapi({ description: 'who is doing this; recorded in operator_actions (no control characters)' }),
  })
  .openapi('OperatorRequest');

// Answers: documentation and the handlers' types; the handlers build them from src/ops's wire forms.
const timestamp = z.string().openapi({ format: 'date-time' });
const nullableTimestamp = timestamp.nullable();

export const errorSchema = z
  .object({
    error: z.string(),
    field: z.string().optional().openapi({ description: 'on a 400: the parameter or field that was refused' }),
  })
  .openapi('Error');

export const eventSchema = z
  .object({
    provider: z.string(),
    event_id: z.string(),
    event_type: z.string(),
    status: z.enum(webhookEventStatuses),
    attempts: z.number().int().openapi({ description: 'failed applications only: 0 for an event done at once' }),
    last_error: z.string().nullable().openapi({
      description:
        'why the event is not done: the last failure of a failed or dead-lettered event; for a parked one the rule that parked it and the value it met (unknown api_version 2099-01-01 (known: 2024-06-01)); null once done',
    }),
    received_at: timestamp.nullable(),
    completed_at: nullableTimestamp,
    available_at: nullableTimestamp,
    occurred_at: nullableTimestamp.optional(),
    locked_until: nullableTimestamp.optional(),
    payload: z.unknown().optional().openapi({ description: 'only with ?payload=true; null once purged' }),
  })
  .openapi('Event');

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

export const nextCursor = z
  .string()
  .nullable()
  .openapi({ description: 'pass as ?cursor= for the next page; null on the last page' });

/** A list's counts by status under its other filters: on the first page only (a cursor's pages would repeat them). */
const listCounts = z.record(z.string(), z.number().int()).optional().openapi({
  description:
    'rows by status under every other filter of this request (status aside: each count is what that status would list); on the first page only, absent when a cursor is given',
});

/** Whether every figure of `counts` is exact; false when some status passed the count's cap. */
const countsComplete = z.boolean().optional().openapi({
  description:
    'present and false when counting stopped at 10,000 rows (with an id or subject filter: all matching rows; in the outbox, under a filter: per status): the figures then mean "at least"',
});

export const eventsPage = z
  .object({ events: eventSchema.array(), next_cursor: nextCursor, counts: listCounts, counts_complete: countsComplete })
  .openapi('EventsPage');

export const deliverySchema = z
  .object({
    delivered_at: timestamp.openapi({ description: 'when the delivery arrived' }),
    status_code: z.number().int().openapi({ description: 'the HTTP status it was answered with' }),
    outcome: z.string().openapi({
      description:
        'the answer in words: completed, ignored, queued, parked, duplicate, failed (500), unavailable (503)',
    }),
    duration_ms: z.number().openapi({ description: 'from the body arriving to the answer' }),
    trace_id: z.string().openapi({
      description: "the sender's traceparent trace id, else one of ours (of the first delivery when repeats > 0)",
    }),
    repeats: z.number().int().openapi({
      description:
        "further identical deliveries folded into this one: duplicates answered with the same status code, with nothing else logged for the event in between (0: none); delivered_at, duration_ms and trace_id are the first one's",
    }),
    last_delivered_at: timestamp.nullable().openapi({
      description: 'when the newest of the repeats arrived; null when repeats is 0',
    }),
  })
  .openapi('Delivery');

export const eventAnswer = z.object({
  event: eventSchema,
  messages: outboxMessageSchema.array().openapi({ description: 'the outbox messages this event produced' }),
  deliveries: deliverySchema.array().openapi({
    description:
      'each delivery of this event that passed its checks (first, duplicates, retries), newest first, a run of identical duplicates as one entry with `repeats`; at most `deliveries_cap` entries, older ones dropped',
  }),
  deliveries_cap: z.number().int().openapi({ description: 'deliveries kept per event' }),
});

export const replayAnswer = z.object({
  before: z.enum(webhookEventStatuses),
  applied: z.boolean().openapi({
    description:
      'whether the replay applied the event: true only when it went through the domain path and is now completed or ignored; false when it failed or parked again, or was not replayable',
  }),
  reason: z
    .string()
    .nullable()
    .openapi({ description: 'why the event is not done after the replay (its error, parked again, ...)' }),
  event: eventSchema,
});

export const outboxPage = z
  .object({
    messages: outboxMessageSchema.array(),
    next_cursor: nextCursor,
    counts: listCounts,
    counts_complete: countsComplete,
  })
  .openapi('OutboxPage');

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

export const statsAnswer = z.object({
  events: z.record(z.string(), z.number().int()),
  outbox: z.record(z.string(), z.number().int()),
  oldest_unprocessed_seconds: z.number(),
  oldest_pending_outbox_seconds: z.number(),
});

export const documentAnswer = z.record(z.string(), z.unknown()).openapi({ description: 'OpenAPI 3.1' });
