// The admin API under /admin/api (mounted behind the bearer gate by routes.ts): list and show
// events and outbox messages, replay and retry (the same code as the CLI's), counts by status, and
// the OpenAPI document. Inputs are zod-validated; every answer, errors included, is JSON.
import { zValidator } from '@hono/zod-validator';
import { Hono } from 'hono';
import type { z } from 'zod';
import type { Database, DatabaseEnv } from '../db/client.ts';
import type { HandlerMap } from '../domain/handlers.ts';
import type { Clock } from '../lib/clock.ts';
import { AppError } from '../lib/errors.ts';
import type { Logger } from '../lib/logger.ts';
import { eventJson, getEvent, listEvents, statusCounts } from '../ops/events.ts';
import { getOutboxMessage, outboxJson } from '../ops/outbox-view.ts';
import { replayEvents } from '../ops/replay.ts';
import { retryOutbox } from '../ops/retry.ts';
import { isMessageId, listOutbox } from '../outbox/operator.ts';
import { adminOpenApi } from './openapi.ts';
import { eventParams, eventQuery, eventsQuery, messageParams, operatorBody, outboxQuery } from './schemas.ts';

/** zValidator with the failure mapped to the one error shape (no zod issue text: it can echo input). */
function valid<Target extends 'json' | 'query' | 'param' | 'form', Schema extends z.ZodType>(
  target: Target,
  schema: Schema,
) {
  return zValidator(target, schema, (result) => {
    if (!result.success) throw new AppError('invalid_request');
  });
}

export interface AdminDeps {
  handlers: HandlerMap;
  clock: Clock;
  logger: Logger;
}

export function adminApiRoutes(deps: AdminDeps) {
  const operatorContext = (db: Database) => ({ db, clock: deps.clock, logger: deps.logger });
  return new Hono<DatabaseEnv>()
    .get('/events', valid('query', eventsQuery), async (c) => {
      const events = await listEvents(c.var.db, c.req.valid('query'));
      return c.json({ events: events.map(eventJson) });
    })
    .get('/events/:provider/:eventId', valid('param', eventParams), valid('query', eventQuery), async (c) => {
      const event = await getEvent(c.var.db, c.req.valid('param'), {
        payload: c.req.valid('query').payload === 'true',
      });
      if (event === undefined) throw new AppError('not_found');
      return c.json({ event: eventJson(event) });
    })
    .post('/events/:provider/:eventId/replay', valid('param', eventParams), valid('json', operatorBody), async (c) => {
      const { provider, eventId } = c.req.valid('param');
      const result = await replayEvents(
        { ...operatorContext(c.var.db), handlers: deps.handlers },
        { provider, eventIds: [eventId], operator: c.req.valid('json').operator },
      );
      const [replayed] = result.kind === 'replayed' ? result.events : [];
      if (replayed === undefined) throw new AppError('not_found');
      return c.json({ before: replayed.before, applied: replayed.applied, event: eventJson(replayed.after) });
    })
    .get('/outbox', valid('query', outboxQuery), async (c) => {
      const messages = await listOutbox(c.var.db, c.req.valid('query'));
      return c.json({ messages: messages.map(outboxJson) });
    })
    .post('/outbox/:id/retry', valid('param', messageParams), valid('json', operatorBody), async (c) => {
      const { id } = c.req.valid('param');
      // Not a uuid cannot name a message: the same 404 as an unknown one.
      if (!isMessageId(id)) throw new AppError('not_found');
      const result = await retryOutbox(operatorContext(c.var.db), {
        ids: [id],
        operator: c.req.valid('json').operator,
      });
      const message = result.kind === 'retried' ? await getOutboxMessage(c.var.db, id) : undefined;
      if (result.kind !== 'retried' || message === undefined) throw new AppError('not_found');
      return c.json({ retried: result.ids.length === 1, message: outboxJson(message) });
    })
    .get('/stats', async (c) => {
      const counts = await statusCounts(c.var.db);
      return c.json({
        events: counts.events,
        outbox: counts.outbox,
        oldest_unprocessed_seconds: counts.oldestUnprocessedSeconds,
        oldest_pending_outbox_seconds: counts.oldestPendingOutboxSeconds,
      });
    })
    .get('/openapi.json', (c) => c.json(adminOpenApi()));
}
