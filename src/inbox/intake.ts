// POST /webhooks/:provider: provider -> size -> content type -> signature -> payload -> one
// transaction -> the answer that makes the provider do the right thing. Nothing touches the database
// before the payload is known to be authentic and valid.
import { Hono, type MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import type { AppDeps } from '../deps.ts';
import { AppError } from '../errors.ts';
import type { LogFields } from '../ops/logger.ts';
import type { EnabledProvider } from '../providers/registry.ts';
import { acceptEvent, type BacklogGate, backlogGate } from './accept.ts';
import { Deadline } from './deadline.ts';
import { type InboxEvent, type Outcome, type Plan, ProcessingFailure, planFor, processEvent } from './process.ts';

type IntakeEnv = { Variables: { enabled: EnabledProvider } };

/** `queued`: stored as `received` for the async worker (or a `failed` row re-queued). */
type Answered = Outcome | 'queued';

const answers: Record<Answered, { status: 200 | 202; body: string }> = {
  completed: { status: 200, body: '{"received":true}' },
  queued: { status: 202, body: '{"received":true,"queued":true}' },
  ignored: { status: 200, body: '{"received":true}' },
  duplicate: { status: 200, body: '{"received":true,"duplicate":true}' },
  parked: { status: 202, body: '{"received":true,"queued":true}' },
};

function isJsonContentType(header: string | undefined): boolean {
  if (header === undefined) return false;
  const semicolon = header.indexOf(';');
  const mediaType = (semicolon === -1 ? header : header.slice(0, semicolon)).trim().toLowerCase();
  return mediaType === 'application/json';
}

const TRACEPARENT = /^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$/;

/** W3C traceparent's trace id when the sender gave one, so our log lines join their trace. */
function traceIdOf(traceparent: string | undefined, newId: () => string): string {
  return (traceparent === undefined ? undefined : TRACEPARENT.exec(traceparent)?.[1]) ?? newId();
}

/**
 * Hono's bodyLimit counts a body that arrives without a declared length (chunked) and stops reading
 * at the cap. A declared length was already checked above, and the runtime guarantees the body
 * matches it, so such requests skip the middleware: touching the raw body stream there would make
 * the Node adapter build a full web Request and read through web streams on every delivery.
 */
function streamedBodyLimit(maxSize: number): MiddlewareHandler {
  const counted = bodyLimit({
    maxSize,
    onError: () => {
      throw new AppError('payload_too_large');
    },
  });
  return (c, next) =>
    c.req.header('content-length') !== undefined && c.req.header('transfer-encoding') === undefined
      ? next()
      : counted(c, next);
}

const elapsedSince = (started: number) => Math.round((performance.now() - started) * 100) / 100;

export function intakeRoutes(deps: AppDeps): Hono<IntakeEnv> {
  const { config, logger } = deps;
  const routes = new Hono<IntakeEnv>();
  // Async mode only: events the worker must apply are stored as `received`, behind the backlog gate.
  const backlog =
    config.PROCESSING_MODE === 'async' ? backlogGate(deps.db, config.INBOX_MAX_BACKLOG, deps.clock) : undefined;

  /**
   * Async mode stores what the worker will apply and answers 202; parked and ignored events have no
   * work for the worker, so they take the synchronous path (one insert in their final state).
   */
  async function storeForWorker(
    gate: BacklogGate,
    deadline: Deadline,
    event: InboxEvent,
    plan: Plan,
  ): Promise<{ outcome: Answered; attempt?: number | undefined }> {
    if (plan.kind !== 'apply') return processEvent(deps.db, deadline, event, plan);
    const accepted = await acceptEvent(deps.db, deadline, gate, event, deps.clock);
    return accepted.outcome === 'duplicate'
      ? { outcome: 'duplicate' }
      : { outcome: 'queued', attempt: (accepted.attempts ?? 0) + 1 };
  }

  routes.use('/webhooks/:provider', async (c, next) => {
    await next();
    if (c.error instanceof AppError && c.error.code !== 'processing_failed') {
      deps.metrics.countRejection(c.req.param('provider'), c.error.code);
    }
  });

  routes.post(
    '/webhooks/:provider',
    async (c, next) => {
      const enabled = deps.providers.get(c.req.param('provider'));
      if (enabled === undefined) throw new AppError('not_found');
      c.set('enabled', enabled);
      // A declared length is refused before anything else is read; a body without one is counted
      // by bodyLimit below while it streams in, and refused as soon as it passes the cap.
      if (Number(c.req.header('content-length')) > config.MAX_BODY_BYTES) throw new AppError('payload_too_large');
      if (!isJsonContentType(c.req.header('content-type'))) throw new AppError('unsupported_media_type');
      deps.intakeLoad?.enter();
      try {
        await next();
      } finally {
        deps.intakeLoad?.leave();
      }
    },
    streamedBodyLimit(config.MAX_BODY_BYTES),
    async (c) => {
      const started = performance.now();
      const deadline = new Deadline(config.HANDLER_DEADLINE_MS);
      const { provider, keys, url } = c.get('enabled');
      let log: LogFields = { provider: provider.name };
      try {
        const body = new Uint8Array(await c.req.arrayBuffer());
        const delivery = {
          body,
          headers: c.req.raw.headers,
          method: c.req.method,
          ...(url === undefined ? {} : { url }),
        };
        const verification = await provider.verify(delivery, keys, {
          nowSeconds: Math.floor(deps.clock() / 1000),
          toleranceSeconds: config.WEBHOOK_TOLERANCE_SECONDS,
        });
        if (verification.outcome === 'respond') {
          // A protocol message the scheme answers itself (Slack's url_verification, Discord's ping): nothing stored.
          logger.info('answered without storing', {
            ...log,
            reason: verification.reason,
            duration_ms: elapsedSince(started),
          });
          if (verification.status === 204) return c.body(null, 204);
          return c.body(verification.body, 200, { 'content-type': 'application/json' });
        }
        if (verification.outcome === 'unauthorized') log = { ...log, reason: verification.reason };
        if (verification.outcome !== 'verified') throw new AppError(verification.outcome);

        const event: InboxEvent = { provider: provider.name, ...verification.event };
        log = {
          ...log,
          event_id: event.eventId,
          event_type: event.eventType,
          trace_id: traceIdOf(c.req.header('traceparent'), deps.newId),
        };
        const plan = planFor(deps.handlers, event);
        await deps.beforeClaim?.({ provider: event.provider, eventId: event.eventId });
        // Sync mode calls processEvent directly: its hot path stays as it was tuned.
        const { outcome, attempt } =
          backlog === undefined
            ? await processEvent(deps.db, deadline, event, plan)
            : await storeForWorker(backlog, deadline, event, plan);

        const elapsed = elapsedSince(started);
        const fields = { ...log, outcome, attempt, duration_ms: elapsed };
        deps.metrics.countEvent(
          event.provider,
          event.eventType,
          outcome === 'completed' || outcome === 'queued' ? 'accepted' : outcome,
        );
        // A re-queued failed event is retried by the worker, which counts it then.
        if (outcome !== 'queued' && attempt !== undefined && attempt > 1) {
          deps.metrics.countEvent(event.provider, event.eventType, 'retried');
        }
        deps.metrics.observeProcessing(event.provider, elapsed / 1000);
        if (outcome === 'parked') logger.warn('event parked: unknown api_version', { ...fields, alert: true });
        else logger.info(outcome === 'queued' ? 'event queued' : 'event processed', fields);
        const answer = answers[outcome];
        return c.body(answer.body, answer.status, { 'content-type': 'application/json' });
      } catch (error) {
        const outcome = error instanceof AppError ? error.code : 'unavailable';
        const attempt = error instanceof ProcessingFailure ? error.attempt : undefined;
        if (attempt !== undefined) deps.metrics.countEvent(provider.name, String(log.event_type), 'failed');
        const level = outcome === 'unauthorized' || outcome === 'invalid_payload' ? 'warn' : 'error';
        logger[level]('event not accepted', { ...log, outcome, attempt, duration_ms: elapsedSince(started) });
        throw error;
      } finally {
        deadline.clear();
      }
    },
  );

  return routes;
}
