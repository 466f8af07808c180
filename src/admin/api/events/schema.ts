// The admin API's inbox events' inputs and answers (events/route.ts): the list's query and page, one
// event with its messages and deliveries, and a replay's answer.
import { z } from '@hono/zod-openapi';
import { webhookEventStatuses } from '../../../db/schema.ts';
import { outboxMessageSchema } from '../outbox/schema.ts';
import {
  cursor,
  limit,
  listPage,
  nullableTimestamp,
  pathParam,
  payloadFlag,
  providerNames,
  textFilter,
  timeBound,
  timestamp,
} from '../schemas.ts';

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

export const eventParams = z.object({ provider: pathParam('provider', 64), eventId: pathParam('eventId', 255) });

/** An event named in the query rather than the path: the form for ids URL parsers rewrite (`.`, `..`). */
export const eventKeyQuery = z
  .object({
    provider: eventParams.shape.provider.openapi({ param: { name: 'provider', in: 'query' } }),
    event_id: eventParams.shape.eventId.openapi({ param: { name: 'event_id', in: 'query' } }),
    payload: payloadFlag,
  })
  .strict();

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

export const eventsPage = listPage('events', eventSchema).openapi('EventsPage');

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
