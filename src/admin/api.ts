// The admin API under /admin/api (mounted behind the bearer gate by src/admin/routes.ts): list events
// and outbox messages (filters, id search, cursor paging), show one, replay and retry (the same code
// as the CLI's), counts by status, and the OpenAPI document. Routes are declared with
// @hono/zod-openapi, so the zod schemas that validate each request also write the document. Every
// answer, errors included, is JSON; a refused input is a 400 naming the field, never echoing a value.
import { createRoute, OpenAPIHono, type z } from '@hono/zod-openapi';
import { HTTPException } from 'hono/http-exception';
import type { AppDeps } from '../deps.ts';
import { AppError } from '../lib/errors.ts';
import { eventJson, getEvent, listEvents, statusCounts } from '../ops/events.ts';
import { getOutboxMessage, listOutbox, messagesOfEvent, outboxJson } from '../ops/outbox-view.ts';
import { replayEvents } from '../ops/replay.ts';
import { retryOutbox } from '../ops/retry.ts';
import { timeRange } from '../ops/time-bound.ts';
import { isMessageId } from '../outbox/operator.ts';
import {
  documentAnswer,
  errorSchema,
  eventAnswer,
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

export const ADMIN_API_BASE = '/admin/api';

const jsonError = (status: number, body: Record<string, string>) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });

/** The one 400 of the operator surfaces: which field, never its value (it can be anything a client sent). */
export function invalidRequest(field?: string): HTTPException {
  return new HTTPException(400, {
    res: jsonError(400, field === undefined ? { error: 'invalid_request' } : { error: 'invalid_request', field }),
  });
}

/** The field a zod failure is about: the first unknown key of a strict object, else the first issue's path. */
function refusedField(error: z.ZodError): string | undefined {
  const issue = error.issues.find((candidate) => candidate.code === 'unrecognized_keys') ?? error.issues[0];
  if (issue === undefined) return undefined;
  if (issue.code === 'unrecognized_keys') return issue.keys[0];
  const [first] = issue.path;
  return first === undefined ? undefined : String(first);
}

const json = <Schema extends z.ZodType>(schema: Schema, description: string) => ({
  description,
  content: { 'application/json': { schema } },
});
const unauthorized = json(errorSchema, 'missing or wrong bearer token');
const refused = { 400: json(errorSchema, 'a parameter or field was refused (named in `field`)'), 401: unauthorized };
const notFound = json(errorSchema, 'unknown id');
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
  replay: createRoute({
    method: 'post',
    path: '/events/{provider}/{eventId}/replay',
    summary: 'Replay one event through the domain path (completed or ignored: recorded, nothing applied)',
    request: { params: eventParams, body: operatorRequest },
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
    description: 'Operator access to the inbox and the outbox. Replays and retries are recorded in operator_actions.',
  },
  security: [{ bearer: [] }],
};

export function adminApiRoutes(deps: AppDeps) {
  const operatorContext = { db: deps.db, clock: deps.clock, logger: deps.logger, metrics: deps.metrics };
  const api = new OpenAPIHono({
    defaultHook: (result) => {
      if (!result.success) throw invalidRequest(refusedField(result.error));
    },
  }).basePath(ADMIN_API_BASE);
  api.openAPIRegistry.registerComponent('securitySchemes', 'bearer', {
    type: 'http',
    scheme: 'bearer',
    description: 'ADMIN_TOKEN',
  });

  api.openapi(routes.listEvents, async (c) => {
    const query = c.req.valid('query');
    const page = await listEvents(deps.db, { ...query, ...timeRange(query, deps.clock()) });
    return c.json({ events: page.rows.map(eventJson), next_cursor: page.nextCursor }, 200);
  });

  api.openapi(routes.showEvent, async (c) => {
    const key = c.req.valid('param');
    const [event, messages] = await Promise.all([
      getEvent(deps.db, key, { payload: c.req.valid('query').payload === 'true' }),
      messagesOfEvent(deps.db, key),
    ]);
    if (event === undefined) throw new AppError('not_found');
    return c.json({ event: eventJson(event), messages: messages.map(outboxJson) }, 200);
  });

  api.openapi(routes.replay, async (c) => {
    const { provider, eventId } = c.req.valid('param');
    const result = await replayEvents(
      { ...operatorContext, handlers: deps.handlers },
      { provider, eventIds: [eventId], operator: c.req.valid('json').operator },
    );
    const [replayed] = result.kind === 'replayed' ? result.events : [];
    if (replayed === undefined) throw new AppError('not_found');
    return c.json(
      {
        before: replayed.before,
        applied: replayed.applied,
        reason: replayed.reason ?? null,
        event: eventJson(replayed.after),
      },
      200,
    );
  });

  api.openapi(routes.listOutbox, async (c) => {
    const query = c.req.valid('query');
    const page = await listOutbox(deps.db, { ...query, ...timeRange(query, deps.clock()) });
    return c.json({ messages: page.rows.map(outboxJson), next_cursor: page.nextCursor }, 200);
  });

  api.openapi(routes.showMessage, async (c) => {
    const { id } = c.req.valid('param');
    // Not a uuid cannot name a message: the same 404 as an unknown one.
    const message = isMessageId(id)
      ? await getOutboxMessage(deps.db, id, { payload: c.req.valid('query').payload === 'true' })
      : undefined;
    if (message === undefined) throw new AppError('not_found');
    return c.json({ message: outboxJson(message) }, 200);
  });

  api.openapi(routes.retry, async (c) => {
    const { id } = c.req.valid('param');
    if (!isMessageId(id)) throw new AppError('not_found');
    const result = await retryOutbox(operatorContext, { ids: [id], operator: c.req.valid('json').operator });
    const message = result.kind === 'retried' ? await getOutboxMessage(deps.db, id) : undefined;
    if (result.kind !== 'retried' || message === undefined) throw new AppError('not_found');
    return c.json({ retried: result.ids.length === 1, message: outboxJson(message) }, 200);
  });

  api.openapi(routes.stats, async (c) => {
    const counts = await statusCounts(deps.db);
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

  let document: Record<string, unknown> | undefined;
  api.openapi(routes.document, (c) => {
    // Generated on first request, not at start-up: a Worker isolate that never serves it never builds it.
    document ??= api.getOpenAPI31Document(DOCUMENT_INFO) as unknown as Record<string, unknown>;
    return c.json(document, 200);
  });

  api.onError((error) => {
    // Our errors and the gate's carry their own JSON; Hono's own 400s (malformed JSON) and the
    // body's media-type check do not.
    if (error instanceof AppError) return error.getResponse();
    if (error instanceof HTTPException && error.status === 400) {
      return error.res?.headers.get('content-type') === 'application/json'
        ? error.getResponse()
        : invalidRequest().getResponse();
    }
    if (error instanceof HTTPException && error.status === 415) {
      return jsonError(415, { error: 'unsupported_media_type' });
    }
    if (error instanceof HTTPException) return error.getResponse();
    deps.logger.error('admin request failed', { error: error.name });
    return new AppError('unavailable', { cause: error }).getResponse();
  });
  return api;
}
