// The admin API's destinations: GET /admin/api/destinations (every configured destination with its
// state, backlog, rate, filters and redacted target; src/ops/reads/destinations-view.ts), and
// POST /admin/api/destinations/{name}/pause and …/resume through src/ops/pauses/destination-pauses.ts,
// which audits them. While paused, a destination's relays claim nothing and its messages wait
// (attempts untouched); resumed, they flow again. A name that is not a configured destination is 404;
// a refused field is 400 naming it. Registered on the admin API's own app (../api.ts), so the routes
// share its bearer gate and its OpenAPI document. The schemas are schema.ts.
import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import type { DatabaseEnv } from '../../../db/client.ts';
import { type Clock, isoOrNull } from '../../../lib/clock.ts';
import { AppError } from '../../../lib/errors.ts';
import type { Logger } from '../../../lib/logger.ts';
import {
  type DestinationPauseContext,
  pauseDestination,
  resumeDestination,
} from '../../../ops/pauses/destination-pauses.ts';
import { destinationJson, listDestinations } from '../../../ops/reads/destinations-view.ts';
import type { DestinationState } from '../../../outbox/destination-state.ts';
import { DEFAULT_ROUTING, type DestinationRouting } from '../../../outbox/destinations.ts';
import { actingOperator } from '../../operators.ts';
import { json, notFound, refused } from '../openapi-parts.ts';
import { operatorBody } from '../schemas.ts';
import { destinationParams, destinationPauseBody, destinationsAnswer, pauseAnswer, resumeAnswer } from './schema.ts';

const routes = {
  list: createRoute({
    method: 'get',
    path: '/destinations',
    summary: 'Every configured outbox destination: state (healthy, open, half_open, paused), backlog, rate, filters',
    responses: {
      200: json(destinationsAnswer, 'the configured destinations, in configuration order'),
      401: refused[401],
    },
  }),
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

/** A destination's pause and circuit as the API answers a pause or a resume. */
export function destinationStateJson(state: DestinationState) {
  return {
    name: state.name,
    paused_at: isoOrNull(state.pausedAt),
    paused_by: state.pausedBy,
    circuit: state.circuit,
  };
}

/** What the destination list needs (the outbox and job routes too, for the names they accept). */
export interface DestinationViewDeps {
  clock: Clock;
  /** The configured destinations (createProductionApp: configuredRouting); absent: `default` alone. */
  outboxRouting?: DestinationRouting;
}

/** The destinations the admin surfaces show and accept as a filter: the configured ones only. */
export const configuredDestinations = (deps: DestinationViewDeps): DestinationRouting =>
  deps.outboxRouting ?? DEFAULT_ROUTING;

/** What the destination routes need; part of the admin API's dependencies (AdminDeps). */
export interface DestinationRoutesDeps {
  clock: Clock;
  logger: Logger;
  /** The configured outbox destinations (the ones an operator may pause); absent: `default` alone. */
  outboxRouting?: DestinationRouting | undefined;
}

/** Registers the destination routes on the admin API (after its base path and validation hook are set). */
export function registerDestinationRoutes(api: OpenAPIHono<DatabaseEnv>, deps: DestinationRoutesDeps): void {
  const routing = configuredDestinations(deps);
  const configured = new Set(routing.destinations.map(({ name }) => name));
  api.openapi(routes.list, async (c) => {
    const destinations = await listDestinations(c.get('db'), routing, deps.clock());
    return c.json({ destinations: destinations.map(destinationJson) }, 200);
  });

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
    return c.json({ before: result.before, destination: destinationStateJson(result.destination) }, 200);
  });

  api.openapi(routes.resume, async (c) => {
    const { name } = c.req.valid('param');
    const operator = actingOperator(c, c.req.valid('json').operator);
    const result = await resumeDestination(context(c.get('db')), { name, operator });
    if (result.kind === 'not_found') throw new AppError('not_found');
    return c.json({ resumed: result.kind === 'resumed', destination: destinationStateJson(result.destination) }, 200);
  });
}
