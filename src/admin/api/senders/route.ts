// The admin API's sender routes: GET /admin/api/senders (every enabled sender and its pause), and
// POST /admin/api/senders/{provider}/pause and …/resume through src/ops/pauses/sender-pauses.ts, which
// audits them. A sender that is not enabled is 404; a refused field is 400 naming it.
import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import type { DatabaseEnv } from '../../../db/client.ts';
import { type Clock, isoOrNull } from '../../../lib/clock.ts';
import { AppError } from '../../../lib/errors.ts';
import type { Logger } from '../../../lib/logger.ts';
import {
  listSenders,
  pauseSender,
  resumeSender,
  type SenderPauseContext,
  type SenderState,
} from '../../../ops/pauses/sender-pauses.ts';
import type { EnabledSender } from '../../../senders/registry.ts';
import { actingOperator } from '../../operators.ts';
import { json, notFound, refused } from '../openapi-parts.ts';
import { operatorBody } from '../schemas.ts';
import { pauseAnswer, pauseBody, resumeAnswer, senderParams, sendersAnswer } from './schema.ts';

const routes = {
  listSenders: createRoute({
    method: 'get',
    path: '/senders',
    summary: 'Every enabled sender, with its pause when one is in effect',
    responses: { 200: json(sendersAnswer, 'the enabled senders, by name'), 401: refused[401] },
  }),
  pause: createRoute({
    method: 'post',
    path: '/senders/{provider}/pause',
    summary:
      "Pause a sender: its deliveries get 503 + Retry-After until resumed or until the pause's end (a paused sender's pause is replaced)",
    request: {
      params: senderParams,
      body: { required: true, content: { 'application/json': { schema: pauseBody } } },
    },
    responses: { 200: json(pauseAnswer, 'the sender, paused'), 404: notFound, ...refused },
  }),
  resume: createRoute({
    method: 'post',
    path: '/senders/{provider}/resume',
    summary: "Resume a paused sender: its deliveries (the sender's retries) are accepted again",
    request: {
      params: senderParams,
      body: { required: true, content: { 'application/json': { schema: operatorBody } } },
    },
    responses: { 200: json(resumeAnswer, 'the sender, active'), 404: notFound, ...refused },
  }),
};

/** A sender as the API answers it. */
export function senderJson(state: SenderState) {
  const { pause } = state;
  return {
    provider: state.provider,
    status: state.status,
    pause:
      pause === null
        ? null
        : {
            paused_at: pause.pausedAt.toISOString(),
            paused_by: pause.pausedBy,
            until: isoOrNull(pause.until),
            note: pause.note,
          },
  };
}

/** What the sender routes need; part of the admin API's dependencies (AdminDeps). */
export interface SenderRoutesDeps {
  clock: Clock;
  logger: Logger;
  /** The senders this app serves: the ones an operator may pause. */
  enabledSenders: ReadonlyMap<string, EnabledSender>;
}

/** Registers the sender routes on the admin API (after its base path and validation hook are set). */
export function registerSenderRoutes(api: OpenAPIHono<DatabaseEnv>, deps: SenderRoutesDeps): void {
  // Read per request: the route table is also built without dependencies (to compare with the document).
  const context = (db: SenderPauseContext['db']): SenderPauseContext => ({
    db,
    clock: deps.clock,
    logger: deps.logger,
    enabled: new Set(deps.enabledSenders.keys()),
  });

  api.openapi(routes.listSenders, async (c) => {
    const senders = await listSenders(c.get('db'), deps.enabledSenders.keys(), deps.clock());
    return c.json({ senders: senders.map(senderJson) }, 200);
  });

  api.openapi(routes.pause, async (c) => {
    const { provider } = c.req.valid('param');
    const body = c.req.valid('json');
    const result = await pauseSender(context(c.get('db')), {
      provider,
      operator: actingOperator(c, body.operator),
      minutes: body.minutes,
      until: body.until === undefined ? undefined : new Date(body.until),
      note: body.note,
    });
    if (result.kind === 'not_found') throw new AppError('not_found');
    const sender = senderJson({ provider, status: 'paused', pause: result.pause });
    return c.json({ before: result.before, sender, warnings: result.warnings }, 200);
  });

  api.openapi(routes.resume, async (c) => {
    const { provider } = c.req.valid('param');
    const operator = actingOperator(c, c.req.valid('json').operator);
    const result = await resumeSender(context(c.get('db')), { provider, operator });
    if (result.kind === 'not_found') throw new AppError('not_found');
    const sender = senderJson({ provider, status: 'active', pause: null });
    return c.json({ resumed: result.kind === 'resumed', sender }, 200);
  });
}
