// The admin API under /admin/api (mounted behind the bearer gate by src/admin/routes.ts): list events
// and outbox messages (filters, id search, cursor paging), show one, replay and retry (the same code
// as the CLI's), counts by status, the refused deliveries (rejections-api.ts), the senders' pauses
// (senders-api.ts), the bulk jobs (jobs-api.ts) and the OpenAPI document. Routes are declared with
// @hono/zod-openapi, so the zod schemas that validate each request also write the document. Every
// answer, errors included, is JSON; a refused input is a 400 naming the field, never echoing a value.

import { createRoute, OpenAPIHono } from '@hono/zod-openapi';
import type { Context } from 'hono';
import { HTTPException } from 'hono/http-exception';
import type { Database, DatabaseEnv } from '../../db/client.ts';
import type { HandlerMap } from '../../domain/handlers.ts';
import { DELIVERY_LOG_CAP, deliveriesOf } from '../../inbox/delivery-log.ts';
import type { Clock } from '../../lib/clock.ts';
import { AppError, refusedField } from '../../lib/errors.ts';
import { exactJsonText } from '../../lib/json-out.ts';
import type { Logger } from '../../lib/logger.ts';
import type { Metrics } from '../../lib/metrics.ts';
import { replayEvents } from '../../ops/actions/replay.ts';
import { retryOutbox } from '../../ops/actions/retry.ts';
import type { CountsByStatus } from '../../ops/reads/counts.ts';
import { destinationWaits, isConfiguredDestination, waitingOf } from '../../ops/reads/destinations-view.ts';
import {
  countEventsByStatus,
  deliveryJson,
  eventJson,
  getEvent,
  listEvents,
  statusCounts,
} from '../../ops/reads/events.ts';
import {
  countOutboxByStatus,
  getOutboxMessage,
  listOutbox,
  messagesOfEvent,
  outboxJson,
  outcomeJson,
  siblingsOf,
} from '../../ops/reads/outbox-view.ts';
import { timeRange } from '../../ops/reads/time-bound.ts';
import { isMessageId } from '../../outbox/operator.ts';
import { actingOperator, logPayloadRead } from '../operators.ts';
import { type DestinationRoutesDeps, registerDestinationRoutes } from './destinations/route.ts';
import {
  configuredDestinations,
  type DestinationViewDeps,
  registerDestinationViewRoutes,
} from './destinations/view-route.ts';
import { registerJobRoutes } from './jobs/route.ts';
import { json, notFound, refused, unauthorized } from './openapi-parts.ts';
import { registerRejectionRoutes } from './rejections/route.ts';
import {
  documentAnswer,
  eventAnswer,
  eventKeyQuery,
  eventParams,
  eventQuery,
  eventsPage,
  eventsQuery,
  messageAnswer,
  messageParams,
  messageQuery,
  operatorBody,
  outboxPage,
  outboxQuery,
  replayAnswer,
  retryAnswer,
  statsAnswer,
} from './schemas.ts';
import { registerSenderRoutes, type SenderRoutesDeps } from './senders/route.ts';

export const ADMIN_API_BASE = '/admin/api';

/** The one 400 of the operator surfaces: which field, never its value (it can be anything a client sent). */
export function invalidRequest(field?: string): AppError {
  return new AppError('invalid_request', field === undefined ? {} : { field });
}

/**
 * A 200 whose body may hold a stored payload: written with every number as stored (lib/json-out.ts),
 * where c.json's JSON.stringify would round an id beyond 2^53 or throw on a bigint. Typed as c.json's
 * answer would be, so the route's declared schema still checks the shape.
 */
function exactJson<Body extends object>(c: Context, body: Body) {
  return c.body(exactJsonText(body), 200, { 'content-type': 'application/json' }) as unknown as ReturnType<
    typeof c.json<Body, 200>
  >;
}

/**
 * A list answer's `counts`, present on the first page only, with `counts_complete: false` when some
 * figure stopped at the cap (the answer stays as it always was when every figure is exact).
 */
const withCounts = (counts: CountsByStatus | undefined) => ({
  ...(counts === undefined ? {} : { counts: counts.byStatus }),
  ...(counts === undefined || counts.atLeast.length === 0 ? {} : { counts_complete: false }),
});
const operatorRequest = { required: true, content: { 'application/json': { schema: operatorBody } } };

const routes = {
  listEvents: createRoute({
    method: 'get',
    path: '/events',
    summary: 'List events, newest first (no payloads), filtered and paged',
    request: { query: eventsQuery },
    responses: { 200: json(eventsPage, 'a page of events'), ...refused },
  }),
  showEvent: createRoute({
    method: 'get',
    path: '/events/{provider}/{eventId}',
    summary: 'One event: state, attempts, last error, timestamps, and the outbox messages it produced',
    request: { params: eventParams, query: eventQuery },
    responses: { 200: json(eventAnswer, 'the event'), 404: notFound, ...refused },
  }),
  showEventByQuery: createRoute({
    method: 'get',
    path: '/event',
    summary: 'The same as /events/{provider}/{eventId}, the id in the query: for ids URL parsers rewrite (`.`, `..`)',
    request: { query: eventKeyQuery },
    responses: { 200: json(eventAnswer, 'the event'), 404: notFound, ...refused },
  }),
  replay: createRoute({
    method: 'post',
    path: '/events/{provider}/{eventId}/replay',
    summary: 'Replay one event through the domain path (completed or ignored: recorded, nothing applied)',
    request: { params: eventParams, body: operatorRequest },
    responses: { 200: json(replayAnswer, 'the state after the replay'), 404: notFound, ...refused },
  }),
  replayByQuery: createRoute({
    method: 'post',
    path: '/event/replay',
    summary: 'The same as /events/{provider}/{eventId}/replay, the id in the query (for `.` and `..`)',
    request: { query: eventKeyQuery.omit({ payload: true }), body: operatorRequest },
    responses: { 200: json(replayAnswer, 'the state after the replay'), 404: notFound, ...refused },
  }),
  listOutbox: createRoute({
    method: 'get',
    path: '/outbox',
    summary: 'List outbox messages, newest first (no payloads), filtered and paged',
    request: { query: outboxQuery },
    responses: { 200: json(outboxPage, 'a page of messages'), ...refused },
  }),
  showMessage: createRoute({
    method: 'get',
    path: '/outbox/{id}',
    summary: 'One outbox message',
    request: { params: messageParams, query: messageQuery },
    responses: { 200: json(messageAnswer, 'the message'), 404: notFound, ...refused },
  }),
  retry: createRoute({
    method: 'post',
    path: '/outbox/{id}/retry',
    summary: 'Send a dead message back to pending (attempts 0, due now); any other status is left alone',
    request: { params: messageParams, body: operatorRequest },
    responses: { 200: json(retryAnswer, 'the state after'), 404: notFound, ...refused },
  }),
  stats: createRoute({
    method: 'get',
    path: '/stats',
    summary: 'Counts by status for events and outbox, and the oldest backlog ages',
    responses: { 200: json(statsAnswer, 'counts and ages'), 401: unauthorized },
  }),
  document: createRoute({
    method: 'get',
    path: '/openapi.json',
    summary: 'This document',
    responses: { 200: json(documentAnswer, 'OpenAPI 3.1'), 401: unauthorized },
  }),
};

const DOCUMENT_INFO = {
  openapi: '3.1.0',
  info: {
    title: 'Webhook Inbox admin API',
    version: '1',
    description:
      'Operator access to the inbox, the outbox and the refused deliveries. Replays and retries are recorded in operator_actions.',
  },
  security: [{ bearer: [] }],
};

/** What the admin API and the dashboard need besides each request's database (`c.get('db')`). */
export interface AdminDeps extends SenderRoutesDeps, DestinationViewDeps, DestinationRoutesDeps {
  handlers: HandlerMap;
  clock: Clock;
  logger: Logger;
  /** Counts replays and retries; the dashboard reads its per-minute request times. */
  metrics: Pick<Metrics, 'countReplay' | 'countRetry' | 'latencyQuantiles'>;
}

export function adminApiRoutes(deps: AdminDeps) {
  const destinations = configuredDestinations(deps);
  const operatorContext = (db: Database) => ({ db, clock: deps.clock, logger: deps.logger, metrics: deps.metrics });
  const api = new OpenAPIHono<DatabaseEnv>({
    defaultHook: (result) => {
      if (!result.success) throw invalidRequest(refusedField(result.error));
    },
  }).basePath(ADMIN_API_BASE);
  api.openAPIRegistry.registerComponent('securitySchemes', 'bearer', {
    type: 'http',
    scheme: 'bearer',
    description:
      'ADMIN_TOKEN (the request names its operator), or a named token of ADMIN_TOKENS (its owner is the operator)',
  });

  api.openapi(routes.listEvents, async (c) => {
    const query = c.req.valid('query');
    const filter = { ...query, ...timeRange(query, deps.clock()) };
    const [page, counts] = await Promise.all([
      listEvents(c.get('db'), filter),
      query.cursor === undefined ? countEventsByStatus(c.get('db'), filter) : undefined,
    ]);
    return c.json({ events: page.rows.map(eventJson), next_cursor: page.nextCursor, ...withCounts(counts) }, 200);
  });

  const showEvent = async (c: Context<DatabaseEnv>, key: { provider: string; eventId: string }, payload: boolean) => {
    const db = c.get('db');
    const [event, messages, deliveries] = await Promise.all([
      getEvent(db, key, { payload }),
      messagesOfEvent(db, key),
      deliveriesOf(db, key),
    ]);
    if (event === undefined) throw new AppError('not_found');
    if (payload) logPayloadRead(c, deps.logger, { kind: 'event', ...key });
    return {
      event: eventJson(event),
      messages: messages.map(outboxJson),
      deliveries: deliveries.map(deliveryJson),
      deliveries_cap: DELIVERY_LOG_CAP,
    };
  };
  api.openapi(routes.showEvent, async (c) =>
    exactJson(c, await showEvent(c, c.req.valid('param'), c.req.valid('query').payload === 'true')),
  );
  api.openapi(routes.showEventByQuery, async (c) => {
    const { provider, event_id: eventId, payload } = c.req.valid('query');
    return exactJson(c, await showEvent(c, { provider, eventId }, payload === 'true'));
  });

  const replayOne = async (db: Database, key: { provider: string; eventId: string }, operator: string) => {
    const result = await replayEvents(
      { ...operatorContext(db), handlers: deps.handlers },
      { provider: key.provider, eventIds: [key.eventId], operator },
    );
    const [replayed] = result.kind === 'replayed' ? result.events : [];
    if (replayed === undefined) throw new AppError('not_found');
    return {
      before: replayed.before,
      applied: replayed.applied,
      reason: replayed.reason ?? null,
      event: eventJson(replayed.after),
    };
  };
  api.openapi(routes.replay, async (c) =>
    c.json(await replayOne(c.get('db'), c.req.valid('param'), actingOperator(c, c.req.valid('json').operator)), 200),
  );
  api.openapi(routes.replayByQuery, async (c) => {
    const { provider, event_id: eventId } = c.req.valid('query');
    const operator = actingOperator(c, c.req.valid('json').operator);
    return c.json(await replayOne(c.get('db'), { provider, eventId }, operator), 200);
  });

  api.openapi(routes.listOutbox, async (c) => {
    const query = c.req.valid('query');
    // Names come from the configuration only: another is refused rather than answered with nothing.
    if (query.destination !== undefined && !isConfiguredDestination(destinations, query.destination)) {
      throw invalidRequest('destination');
    }
    const filter = { ...query, ...timeRange(query, deps.clock()) };
    const [page, counts] = await Promise.all([
      listOutbox(c.get('db'), filter),
      query.cursor === undefined ? countOutboxByStatus(c.get('db'), filter) : undefined,
    ]);
    // A pending message of a destination that is not publishing says why it waits.
    const waits = await destinationWaits(c.get('db'), page.rows);
    const messages = page.rows.map((row) => ({ ...outboxJson(row), waiting: waitingOf(row, waits) }));
    return c.json({ messages, next_cursor: page.nextCursor, ...withCounts(counts) }, 200);
  });

  api.openapi(routes.showMessage, async (c) => {
    const { id } = c.req.valid('param');
    // Not a uuid cannot name a message: the same 404 as an unknown one.
    const payload = c.req.valid('query').payload === 'true';
    const message = isMessageId(id) ? await getOutboxMessage(c.get('db'), id, { payload }) : undefined;
    if (message === undefined) throw new AppError('not_found');
    if (payload) logPayloadRead(c, deps.logger, { kind: 'outbox', id });
    const [siblings, waits] = await Promise.all([
      siblingsOf(c.get('db'), message),
      destinationWaits(c.get('db'), [message]),
    ]);
    return exactJson(c, {
      message: { ...outboxJson(message), waiting: waitingOf(message, waits) },
      destinations: siblings.map(outcomeJson),
    });
  });

  api.openapi(routes.retry, async (c) => {
    const { id } = c.req.valid('param');
    if (!isMessageId(id)) throw new AppError('not_found');
    const operator = actingOperator(c, c.req.valid('json').operator);
    const result = await retryOutbox(operatorContext(c.get('db')), { ids: [id], operator });
    const message = result.kind === 'retried' ? await getOutboxMessage(c.get('db'), id) : undefined;
    if (result.kind !== 'retried' || message === undefined) throw new AppError('not_found');
    const waits = await destinationWaits(c.get('db'), [message]);
    return c.json(
      { retried: result.ids.length === 1, message: { ...outboxJson(message), waiting: waitingOf(message, waits) } },
      200,
    );
  });

  api.openapi(routes.stats, async (c) => {
    const counts = await statusCounts(c.get('db'));
    return c.json(
      {
        events: counts.events,
        outbox: counts.outbox,
        oldest_unprocessed_seconds: counts.oldestUnprocessedSeconds,
        oldest_pending_outbox_seconds: counts.oldestPendingOutboxSeconds,
      },
      200,
    );
  });

  registerSenderRoutes(api, deps);
  registerDestinationViewRoutes(api, deps);
  registerDestinationRoutes(api, deps);
  registerJobRoutes(api, deps);
  registerRejectionRoutes(api, deps);

  let document: Record<string, unknown> | undefined;
  api.openapi(routes.document, (c) => {
    // Generated on first request, not at start-up: a Worker isolate that never serves it never builds it.
    document ??= api.getOpenAPI31Document(DOCUMENT_INFO) as unknown as Record<string, unknown>;
    return c.json(document, 200);
  });

  // The app's onError answers everything else; the body's media-type check (from @hono/zod-openapi)
  // throws a bare 415 that would not be JSON, so it gets the service's shape here.
  api.onError((error) => {
    if (error instanceof HTTPException && !(error instanceof AppError) && error.status === 415) {
      return new AppError('unsupported_media_type').getResponse();
    }
    throw error;
  });
  return api;
}
