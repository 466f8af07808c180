// The admin API's outbox messages: list them (filters, id search, cursor paging, counts by status on
// the first page, and why a pending one waits), show one with its row for every destination, and
// retry a dead one through the same code as the CLI's (src/ops/actions/retry.ts). Registered on the
// admin API's own app (../api.ts), so the routes share its bearer gate, its 400 for refused fields and
// its OpenAPI document. The schemas are schema.ts.
import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import type { Database, DatabaseEnv } from '../../../db/client.ts';
import type { Clock } from '../../../lib/clock.ts';
import { AppError } from '../../../lib/errors.ts';
import type { Logger } from '../../../lib/logger.ts';
import type { Metrics } from '../../../lib/metrics.ts';
import { retryOutbox } from '../../../ops/actions/retry.ts';
import { readListing } from '../../../ops/reads/cursor.ts';
import { destinationWaits, isConfiguredDestination, waitingOf } from '../../../ops/reads/destinations-view.ts';
import {
  countOutboxByStatus,
  getOutboxMessage,
  listOutbox,
  outboxJson,
  outcomeJson,
  siblingsOf,
} from '../../../ops/reads/outbox-view.ts';
import { isMessageId } from '../../../outbox/operator.ts';
import { actingOperator, logPayloadRead } from '../../operators.ts';
import { configuredDestinations, type DestinationViewDeps } from '../destinations/route.ts';
import { exactJson, invalidRequest, json, notFound, operatorRequest, refused, withCounts } from '../openapi-parts.ts';
import { payloadQuery } from '../schemas.ts';
import { messageAnswer, messageParams, outboxPage, outboxQuery, retryAnswer } from './schema.ts';

const routes = {
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
    request: { params: messageParams, query: payloadQuery },
    responses: { 200: json(messageAnswer, 'the message'), 404: notFound, ...refused },
  }),
  retry: createRoute({
    method: 'post',
    path: '/outbox/{id}/retry',
    summary: 'Send a dead message back to pending (attempts 0, due now); any other status is left alone',
    request: { params: messageParams, body: operatorRequest },
    responses: { 200: json(retryAnswer, 'the state after'), 404: notFound, ...refused },
  }),
};

/** What the outbox routes need; part of the admin API's dependencies (AdminDeps). */
export interface OutboxRoutesDeps extends DestinationViewDeps {
  clock: Clock;
  logger: Logger;
  metrics: Pick<Metrics, 'countRetry'>;
}

/** Registers the outbox routes on the admin API (after its base path and validation hook are set). */
export function registerOutboxRoutes(api: OpenAPIHono<DatabaseEnv>, deps: OutboxRoutesDeps): void {
  const destinations = configuredDestinations(deps);
  const operatorContext = (db: Database) => ({ db, clock: deps.clock, logger: deps.logger, metrics: deps.metrics });

  api.openapi(routes.listOutbox, async (c) => {
    const query = c.req.valid('query');
    // Names come from the configuration only: another is refused rather than answered with nothing.
    if (query.destination !== undefined && !isConfiguredDestination(destinations, query.destination)) {
      throw invalidRequest('destination');
    }
    // Counted on the first page only.
    const count = query.cursor === undefined ? countOutboxByStatus : undefined;
    const { page, counts } = await readListing(c.get('db'), query, deps.clock(), listOutbox, count);
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
}
