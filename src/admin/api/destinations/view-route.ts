// The admin API's read of the outbox's destinations: GET /admin/api/destinations (every configured
// destination with its state, backlog, rate, filters and redacted target; src/ops/reads/destinations-view.ts).
// Registered on the admin API's own app (src/admin/api/api.ts), so it shares its bearer gate and its
// OpenAPI document. Pausing and resuming a destination are other routes (POST …/pause, …/resume).
import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import type { DatabaseEnv } from '../../../db/client.ts';
import { destinationCircuits } from '../../../db/schema.ts';
import type { Clock } from '../../../lib/clock.ts';
import { destinationJson, destinationStates, listDestinations } from '../../../ops/reads/destinations-view.ts';
import { DEFAULT_ROUTING, type DestinationRouting } from '../../../outbox/destinations.ts';
import { json, refused } from '../openapi-parts.ts';

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

const destinationsAnswer = z.object({ destinations: destinationSchema.array() });

const listRoute = createRoute({
  method: 'get',
  path: '/destinations',
  summary: 'Every configured outbox destination: state (healthy, open, half_open, paused), backlog, rate, filters',
  responses: {
    200: json(destinationsAnswer, 'the configured destinations, in configuration order'),
    401: refused[401],
  },
});

/** What the destination routes need; part of the admin API's dependencies (AdminDeps). */
export interface DestinationViewDeps {
  clock: Clock;
  /** The configured destinations (createProductionApp: configuredRouting); absent: `default` alone. */
  outboxRouting?: DestinationRouting;
}

/** The destinations the admin surfaces show and accept as a filter: the configured ones only. */
export const configuredDestinations = (deps: DestinationViewDeps): DestinationRouting =>
  deps.outboxRouting ?? DEFAULT_ROUTING;

export function registerDestinationViewRoutes(api: OpenAPIHono<DatabaseEnv>, deps: DestinationViewDeps): void {
  const routing = configuredDestinations(deps);
  api.openapi(listRoute, async (c) => {
    const destinations = await listDestinations(c.get('db'), routing, deps.clock());
    return c.json({ destinations: destinations.map(destinationJson) }, 200);
  });
}
