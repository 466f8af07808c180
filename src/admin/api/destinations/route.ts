// The admin API's destination write routes: POST /admin/api/destinations/{name}/pause and …/resume
// through src/ops/pauses/destination-pauses.ts, which audits them. While paused, a destination's relays claim
// nothing and its messages wait (attempts untouched); resumed, they flow again. A name that is not a
// configured destination is 404; a refused field is 400 naming it.
import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import type { DatabaseEnv } from '../../../db/client.ts';
import { destinationCircuits } from '../../../db/schema.ts';
import { type Clock, isoOrNull } from '../../../lib/clock.ts';
import { AppError } from '../../../lib/errors.ts';
import type { Logger } from '../../../lib/logger.ts';
import {
  type DestinationPauseContext,
  pauseDestination,
  resumeDestination,
} from '../../../ops/pauses/destination-pauses.ts';
import type { DestinationState } from '../../../outbox/destination-state.ts';
import { DEFAULT_ROUTING, type DestinationRouting } from '../../../outbox/destinations.ts';
import { actingOperator } from '../../operators.ts';
import { json, notFound, refused } from '../openapi-parts.ts';
import { operatorBody } from '../schemas.ts';
import { pauseNote } from '../senders/schema.ts';

const destinationParams = z.object({
  name: z
    .string()
    .min(1)
    .max(64)
    .openapi({ param: { name: 'name', in: 'path' }, description: 'a configured outbox destination' }),
});

const destinationPauseBody = z
  .object({
    operator: operatorBody.shape.operator,
    note: pauseNote,
  })
  .strict()
  .openapi('DestinationPauseRequest');

const destinationSchema = z
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

const pauseAnswer = z
  .object({ before: z.enum(['active', 'paused']), destination: destinationSchema })
  .openapi('DestinationPauseAnswer');
const resumeAnswer = z
  .object({
    resumed: z.boolean().openapi({ description: 'false: it was not paused (nothing changed, nothing recorded)' }),
    destination: destinationSchema,
  })
  .openapi('DestinationResumeAnswer');

const routes = {
  pause: createRoute({
    method: 'post',
    path: '/destinations/{name}/pause',
    summary:
      'Pause an outbox destination: its relays claim nothing and its messages wait, attempts untouched, until it is resumed',
    request: {
      params: destinationParams,
      body: { required: true, content: { 'application/json': { schema: destinationPauseBody } } },
    },
    responses: { 200: json(pauseAnswer, 'the destination, paused'), 404: notFound, ...refused },
  }),
  resume: createRoute({
    method: 'post',
    path: '/destinations/{name}/resume',
    summary: "Resume a paused outbox destination: its waiting messages are published at the relays' next drain",
    request: {
      params: destinationParams,
      body: { required: true, content: { 'application/json': { schema: operatorBody } } },
    },
    responses: { 200: json(resumeAnswer, 'the destination, active'), 404: notFound, ...refused },
  }),
};

/** A destination's state as the API answers it. */
export function destinationJson(state: DestinationState) {
  return {
    name: state.name,
    paused_at: isoOrNull(state.pausedAt),
    paused_by: state.pausedBy,
    circuit: state.circuit,
  };
}

/** What the destination routes need; part of the admin API's dependencies (AdminDeps). */
export interface DestinationRoutesDeps {
  clock: Clock;
  logger: Logger;
  /** The configured outbox destinations (the ones an operator may pause); absent: `default` alone. */
  outboxRouting?: DestinationRouting | undefined;
}

/** Registers the destination write routes on the admin API (after its base path and validation hook are set). */
export function registerDestinationRoutes(api: OpenAPIHono<DatabaseEnv>, deps: DestinationRoutesDeps): void {
  const configured = new Set((deps.outboxRouting ?? DEFAULT_ROUTING).destinations.map(({ name }) => name));
  const context = (db: DestinationPauseContext['db']): DestinationPauseContext => ({
    db,
    clock: deps.clock,
    logger: deps.logger,
    configured,
  });

  api.openapi(routes.pause, async (c) => {
    const { name } = c.req.valid('param');
    const body = c.req.valid('json');
    const operator = actingOperator(c, body.operator);
    const result = await pauseDestination(context(c.get('db')), { name, operator, note: body.note });
    if (result.kind === 'not_found') throw new AppError('not_found');
    return c.json({ before: result.before, destination: destinationJson(result.destination) }, 200);
  });

  api.openapi(routes.resume, async (c) => {
    const { name } = c.req.valid('param');
    const operator = actingOperator(c, c.req.valid('json').operator);
    const result = await resumeDestination(context(c.get('db')), { name, operator });
    if (result.kind === 'not_found') throw new AppError('not_found');
    return c.json({ resumed: result.kind === 'resumed', destination: destinationJson(result.destination) }, 200);
  });
}
