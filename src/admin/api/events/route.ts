// The admin API's inbox events: list them (filters, id search, cursor paging, counts by status on the
// first page), show one with its outbox messages and deliveries (its payload only when asked, and that
// read logged), and replay one through the same code as the CLI's (src/ops/actions/replay.ts).
// Registered on the admin API's own app (../api.ts), so the routes share its bearer gate, its 400 for
// refused fields and its OpenAPI document. The schemas are schema.ts.
import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import type { Context } from 'hono';
import type { Database, DatabaseEnv } from '../../../db/client.ts';
import type { HandlerMap } from '../../../domain/handlers.ts';
import { DELIVERY_LOG_CAP, deliveriesOf } from '../../../inbox/delivery-log.ts';
import type { Clock } from '../../../lib/clock.ts';
import { AppError } from '../../../lib/errors.ts';
import type { Logger } from '../../../lib/logger.ts';
import type { Metrics } from '../../../lib/metrics.ts';
import { replayEvents } from '../../../ops/actions/replay.ts';
import { readListing } from '../../../ops/reads/cursor.ts';
import { countEventsByStatus, deliveryJson, eventJson, getEvent, listEvents } from '../../../ops/reads/events.ts';
import { messagesOfEvent, outboxJson } from '../../../ops/reads/outbox-view.ts';
import { actingOperator, logPayloadRead } from '../../operators.ts';
import { exactJson, json, notFound, operatorRequest, refused, withCounts } from '../openapi-parts.ts';
import { payloadQuery } from '../schemas.ts';
import { eventAnswer, eventKeyQuery, eventParams, eventsPage, eventsQuery, replayAnswer } from './schema.ts';

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
    request: { params: eventParams, query: payloadQuery },
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
};

/** What the event routes need; part of the admin API's dependencies (AdminDeps). */
export interface EventRoutesDeps {
  handlers: HandlerMap;
  clock: Clock;
  logger: Logger;
  metrics: Pick<Metrics, 'countReplay'>;
}

/** Registers the event routes on the admin API (after its base path and validation hook are set). */
export function registerEventRoutes(api: OpenAPIHono<DatabaseEnv>, deps: EventRoutesDeps): void {
  const operatorContext = (db: Database) => ({ db, clock: deps.clock, logger: deps.logger, metrics: deps.metrics });

  api.openapi(routes.listEvents, async (c) => {
    const query = c.req.valid('query');
    // Counted on the first page only.
    const count = query.cursor === undefined ? countEventsByStatus : undefined;
    const { page, counts } = await readListing(c.get('db'), query, deps.clock(), listEvents, count);
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
}
