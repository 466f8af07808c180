// The admin API's destinations' inputs and answers (destinations/route.ts): the list of configured
// destinations with their state, and a pause's and a resume's request and answer.
import { z } from '@hono/zod-openapi';
import { destinationCircuits } from '../../../db/schema.ts';
import { destinationStates } from '../../../ops/reads/destinations-view.ts';
import { operatorBody, pathParam } from '../schemas.ts';
import { pauseNote } from '../senders/schema.ts';

const timestamp = z.string().nullable().openapi({ format: 'date-time' });
const patterns = z.string().array().nullable().openapi({ description: 'names or `*` globs; null: every value' });

export const destinationSchema = z
  .object({
    name: z.string(),
    kind: z.string().openapi({ description: 'the publisher: log, http, nats, amqp, redis or queue' }),
    target: z
      .object({
        scheme: z.string(),
        host: z.string().nullable(),
        stream: z.string().optional(),
        exchange: z.string().optional(),
        binding: z.string().optional(),
      })
      .openapi({
        description:
          "where it publishes, redacted: scheme, host and the broker's stream, exchange or Queues binding; never credentials, a path or a query",
      }),
    filters: z.object({ topics: patterns, senders: patterns, types: patterns }),
    settings: z.record(z.string(), z.unknown()),
    state: z.enum(destinationStates).openapi({
      description: 'paused when an operator paused it; else open or half_open per its circuit; else healthy',
    }),
    circuit: z.enum(destinationCircuits),
    consecutive_failures: z.number().int(),
    opened_at: timestamp,
    probe_at: timestamp,
    paused_at: timestamp,
    paused_by: z.string().nullable(),
    backlog: z.object({ pending: z.number().int(), dead: z.number().int() }),
    published_per_minute: z.number().openapi({
      description:
        'messages published per minute over the last 5 minutes (of those created in the last hour, the newest 50,000 read at most)',
    }),
    last_error: z.string().nullable().openapi({
      description:
        'while its circuit is not closed or it has failures in a row: the newest failure among its pending messages (`http 503: …`, `network ECONNREFUSED 10.0.0.7:8080`); else null',
    }),
    waiting: z.string().nullable().openapi({
      description:
        'why its pending messages wait, one sentence (paused by whom, or the circuit: since when, failures in a row, the last failure, the next probe); null when healthy',
    }),
  })
  .openapi('Destination');

export const destinationsAnswer = z.object({ destinations: destinationSchema.array() });

export const destinationParams = z.object({ name: pathParam('name', 64, 'a configured outbox destination') });

export const destinationPauseBody = z
  .object({
    operator: operatorBody.shape.operator,
    note: pauseNote,
  })
  .strict()
  .openapi('DestinationPauseRequest');

export const destinationStateSchema = z
  .object({
    name: z.string(),
    paused_at: z.string().nullable().openapi({ format: 'date-time', description: 'null: not paused' }),
    paused_by: z.string().nullable(),
    circuit: z.enum(destinationCircuits).openapi({
      description:
        'the circuit breaker shared by every relay: closed (sending), open (held), half_open (one probe out)',
    }),
  })
  .openapi('DestinationState');

export const pauseAnswer = z
  .object({ before: z.enum(['active', 'paused']), destination: destinationStateSchema })
  .openapi('DestinationPauseAnswer');
export const resumeAnswer = z
  .object({
    resumed: z.boolean().openapi({ description: 'false: it was not paused (nothing changed, nothing recorded)' }),
    destination: destinationStateSchema,
  })
  .openapi('DestinationResumeAnswer');
