// POST /webhooks/:provider: provider -> pause -> size -> content type -> signature -> payload -> one
// transaction -> the answer that makes the sender do the right thing. Nothing is written before the
// payload is known to be authentic and valid (the pause is read from a cache, pause-gate.ts).
import { type Context, Hono, type MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import type { Config } from '../config.ts';
import type { Database, DatabaseEnv } from '../db/client.ts';
import type { HandlerMap } from '../domain/handlers.ts';
import type { Clock } from '../lib/clock.ts';
import { AppError } from '../lib/errors.ts';
import { payloadText } from '../lib/json.ts';
import { LogSampler } from '../lib/log-sampler.ts';
import type { Logger } from '../lib/logger.ts';
import type { Metrics } from '../lib/metrics.ts';
import { storableTime } from '../lib/occurrence.ts';
import { RecentKeys } from '../lib/recent-keys.ts';
import { rejectionReasonOf } from '../lib/rejection-reasons.ts';
import { printableLine } from '../lib/text.ts';
import { inSpan, noTracing, type Span, type Tracer } from '../lib/tracing.ts';
import type { EnabledSender } from '../senders/registry.ts';
import type { AuthenticatedEvent, RefusedEvent } from '../senders/types.ts';
import { backlogGate } from './accept.ts';
import type { BodyReader } from './body-reader.ts';
import { IntakeCommitter } from './committer.ts';
import { Deadline } from './deadline.ts';
import type { DeliveryLog } from './delivery-log.ts';
import { type Arrival, type InboxEvent, storedKeyString } from './event-rows.ts';
import type { IntakeLoad } from './intake-load.ts';
import {
  type Answered,
  type AnsweredEvent,
  answer,
  DeliveryReport,
  REJECTION_LINES_PER_MINUTE,
} from './intake-report.ts';
import { senderPauseGate } from './pause-gate.ts';
import { type Committed, finalStatus, type PlannedEvent, planFor, processDelivery } from './process.ts';
import type { RejectionLog } from './rejection-log.ts';
import { refusedEventRecords, rejectionOf } from './rejections.ts';

/** What the intake needs from the app; the database comes with each request (`c.get('db')`). */
export interface IntakeDeps {
  config: Pick<
    Config,
    | 'HANDLER_DEADLINE_MS'
    | 'MAX_BODY_BYTES'
    | 'WEBHOOK_TOLERANCE_SECONDS'
    | 'PROCESSING_MODE'
    | 'INBOX_MAX_BACKLOG'
    | 'EVENT_RETENTION_DAYS'
  >;
  enabledSenders: ReadonlyMap<string, EnabledSender>;
  handlers: HandlerMap;
  clock: Clock;
  newId: () => string;
  logger: Logger;
  metrics: Metrics;
  /** Deliveries in flight, shared with an in-process async worker that defers to a saturated intake. */
  intakeLoad?: IntakeLoad;
  /**
   * Test and tracing hook: runs after validation, just before the database write; once per delivery,
   * with its first event.
   */
  beforeStore?: (event: { provider: string; eventId: string }) => Promise<void>;
  /** Where refused deliveries are recorded for operators (rejection-log.ts); absent: only counted in /metrics. */
  rejections?: RejectionLog;
  /**
   * Group commit (committer.ts): deliveries share transactions, at most `maxBatch` in one and `lanes`
   * in flight. Absent: each delivery has a transaction of its own (the Worker, where requests of an
   * isolate may not share a database client). `onBatch` is told each batch's size, after the
   * batch-size histogram (what a test observes).
   */
  groupCommit?: { maxBatch: number; lanes: number; onBatch?: (size: number) => void };
  /** Each delivery of a checked event is appended here; the runtime flushes it (absent: no log). */
  deliveryLog?: DeliveryLog;
  /** Spans for each delivery (src/lib/tracing.ts); absent: `noTracing`. */
  tracer?: Tracer;
  /**
   * How many deliveries answered in full are remembered, and for how long, so that a copy is answered
   * before its body is read again (ANSWERED_DELIVERIES); `false`: none is.
   */
  answeredDeliveries?: { capacity: number; ttlMs: number } | false;
  /** The runtime's own body reader (Node: entry/setup/request-body.ts); absent: `c.req.arrayBuffer()`. */
  bodyReader?: BodyReader;
}

/**
 * Deliveries answered in full that are remembered by default: a few thousand, for five minutes, and
 * never longer than EVENT_RETENTION_DAYS (0, allowed outside production, remembers none). Retention
 * deletes only rows older than that, so a remembered delivery's rows are still there while a copy
 * is answered from memory (docs/security.md).
 */
export const ANSWERED_DELIVERIES = { capacity: 4096, ttlMs: 5 * 60_000 } as const;
const DAY_MS = 86_400_000;

type IntakeEnv = {
  Bindings: DatabaseEnv['Bindings'];
  Variables: DatabaseEnv['Variables'] & { enabled: EnabledSender; report: DeliveryReport; span: Span };
};

/** Longest content type logged: it is the sender's text, and a real one is short. */
const CONTENT_TYPE_LOGGED_MAX = 100;

function isJsonContentType(header: string | undefined): boolean {
  if (header === undefined) return false;
  const semicolon = header.indexOf(';');
  const mediaType = (semicolon === -1 ? header : header.slice(0, semicolon)).trim().toLowerCase();
  return mediaType === 'application/json';
}

const TRACEPARENT = /^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$/;

/** W3C traceparent's trace id when the sender gave one, so our log lines join their trace. */
const senderTraceId = (traceparent: string | undefined) =>
  traceparent === undefined ? undefined : TRACEPARENT.exec(traceparent)?.[1];
const traceIdOf = (traceparent: string | undefined, newId: () => string): string =>
  senderTraceId(traceparent) ?? newId();

/** A 413, with the limit it hit for the log line. */
const tooLarge = (limitBytes: number) => new AppError('payload_too_large', { why: { limit_bytes: limitBytes } });

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
      throw tooLarge(maxSize);
    },
  });
  return (c, next) =>
    c.req.header('content-length') !== undefined && c.req.header('transfer-encoding') === undefined
      ? next()
      : counted(c, next);
}

const DUPLICATE: Committed = { outcome: 'duplicate' };

/**
 * The answers after which a copy of the delivery is answered from memory: every event applied,
 * ignored or already there (a `queued` or `parked` answer ranks first, deliveryOutcome, so none of
 * these has an event left waiting).
 */
const FINISHED: ReadonlySet<Answered> = new Set<Answered>(['completed', 'ignored', 'duplicate']);

/** The delivery's server span, named for its route (the sender's name is an attribute once known: bounded by the registry). */
const DELIVERY_SPAN = 'POST /webhooks/:provider';

function endDeliverySpan(span: Span, provider: string | undefined, status: number, error: unknown): void {
  if (error !== undefined && status >= 500) span.fail(error);
  span.setAttributes({
    'http.request.method': 'POST',
    'http.route': '/webhooks/:provider',
    'http.response.status_code': status,
    ...(provider === undefined ? {} : { 'webhook.provider': provider }),
  });
  span.end();
}

/** An event with its plan, before the mode decides what its row becomes. */
type Planned = Pick<PlannedEvent, 'event' | 'plan'>;

/**
 * A batch's events without repeats of one id: the first is stored, and a repeat is its duplicate
 * (one statement cannot write a row twice, and applying it twice is what deduplication prevents).
 */
function distinct(events: readonly InboxEvent[]): InboxEvent[] {
  // Nearly every delivery is one event: no key to build, no set to fill.
  if (events.length < 2) return [...events];
  const seen = new Set<string>();
  return events.filter((event) => {
    const key = storedKeyString(event.provider, event.eventId);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/**
 * The one answer for a delivery's events: stored for later work (202) if any was queued or parked,
 * else received (200) if any was new, and `duplicate` only when every event had been seen.
 */
const ANSWER_ORDER: readonly Answered[] = ['queued', 'parked', 'completed', 'ignored', 'duplicate'];
function deliveryOutcome(outcomes: readonly Answered[]): Answered {
  // Stryker disable next-line StringLiteral: never reached, a delivery stores one event at least (a sender's description answers an empty batch itself, and refuses one whose every event its cut refused)
  return ANSWER_ORDER.find((outcome) => outcomes.includes(outcome)) ?? 'duplicate';
}

/**
 * A batch's events with their plans. An event its handler's schema refuses is set aside, named by its
 * id and the field (`<id>: data.status`), with those the cut refused (`refused`), and the report told;
 * a batch none of whose events is left is refused (400) as a lone event would be.
 */
function planBatch(
  handlers: HandlerMap,
  events: readonly InboxEvent[],
  refused: readonly RefusedEvent[] | undefined,
  report: DeliveryReport,
): Planned[] {
  const planned: Planned[] = [];
  let refusal: AppError | undefined;
  let setAside = refused?.map((event) => event.field);
  for (const event of events) {
    try {
      planned.push({ event, plan: planFor(handlers, event) });
    } catch (error) {
      if (!(error instanceof AppError) || error.code !== 'invalid_payload') throw error;
      refusal ??= error;
      const { field } = error.why;
      setAside ??= [];
      setAside.push(`${event.eventId}: ${typeof field === 'string' ? field : '(the event)'}`);
    }
  }
  // Stryker disable next-line LogicalOperator,StringLiteral: a batch is planned with one event at least (a description answers an empty one itself), so when none is planned a refusal was kept
  if (planned.length === 0) throw refusal ?? new AppError('invalid_payload');
  if (setAside !== undefined) report.setsAside(setAside);
  return planned;
}

export function intakeRoutes(deps: IntakeDeps): Hono<IntakeEnv> {
  const { config } = deps;
  const routes = new Hono<IntakeEnv>();
  // Async mode only: events the worker must apply are stored as `received`, behind the backlog gate.
  const backlog = config.PROCESSING_MODE === 'async' ? backlogGate(config.INBOX_MAX_BACKLOG, deps.clock) : undefined;
  const pauses = senderPauseGate(deps.clock);
  const remembered = deps.answeredDeliveries ?? ANSWERED_DELIVERIES;
  const ttlMs = remembered === false ? 0 : Math.min(remembered.ttlMs, config.EVENT_RETENTION_DAYS * DAY_MS);
  const answeredDeliveries =
    remembered === false || ttlMs === 0 ? undefined : new RecentKeys(remembered.capacity, ttlMs, deps.clock);
  const answered = answeredDeliveries === undefined ? undefined : (key: string) => answeredDeliveries.has(key);
  const tracer = deps.tracer ?? noTracing;
  const reporting = {
    logger: deps.logger,
    metrics: deps.metrics,
    rejections: new LogSampler(REJECTION_LINES_PER_MINUTE, 60_000, deps.clock),
    deliveryLog: deps.deliveryLog,
    clock: deps.clock,
  };
  // One committer per database: on Node every request brings the process's pool.
  const committers = new WeakMap<Database, IntakeCommitter>();
  const committerFor = (db: Database, options: NonNullable<IntakeDeps['groupCommit']>) => {
    let committer = committers.get(db);
    if (committer === undefined) {
      const { onBatch } = options;
      committer = new IntakeCommitter(db, {
        ...options,
        onBatch: (size) => {
          deps.metrics.observeIntakeBatch(size);
          onBatch?.(size);
        },
      });
      committers.set(db, committer);
    }
    return committer;
  };

  /**
   * Provider (404), a paused sender (503), declared size (413) and content type (415): answered
   * before the body is read.
   */
  const admit: MiddlewareHandler<IntakeEnv> = async (c, next) => {
    const enabled = deps.enabledSenders.get(c.req.param('provider') ?? '');
    if (enabled === undefined) throw new AppError('not_found');
    c.set('enabled', enabled);
    c.get('report').concerns(enabled.sender.name);
    await pauses.check(c.get('db'), enabled.sender.name);
    // A declared length is refused before anything else is read; a body without one is counted by
    // bodyLimit while it streams in, and refused as soon as it passes the cap.
    if (Number(c.req.header('content-length')) > config.MAX_BODY_BYTES) throw tooLarge(config.MAX_BODY_BYTES);
    const contentType = c.req.header('content-type');
    if (!isJsonContentType(contentType)) {
      // The one header value logged: it says what the sender got wrong, and is bounded and escaped.
      const refused = contentType === undefined ? null : printableLine(contentType, CONTENT_TYPE_LOGGED_MAX);
      throw new AppError('unsupported_media_type', { why: { content_type: refused } });
    }
    await next();
  };

  /**
   * The body, or undefined when the sender went away or broke the stream before it had arrived (its
   * upload's time is bounded by the server's request timeout, not by the delivery's deadline).
   */
  async function readBody(c: Context<IntakeEnv>): Promise<Uint8Array<ArrayBuffer> | undefined> {
    const read = deps.bodyReader?.read(c.env, c.req.header('content-length'));
    if (read !== undefined && read !== null) return read;
    try {
      return new Uint8Array(await c.req.arrayBuffer());
    } catch (error) {
      if (error instanceof AppError) throw error;
      return undefined;
    }
  }

  /**
   * Signature (401) and payload (400): the authenticated events (one, or each of a sender's batch),
   * or the protocol answer to give.
   */
  async function authenticate(c: Context<IntakeEnv>, body: Uint8Array<ArrayBuffer>, report: DeliveryReport) {
    const { sender, keys, url } = c.get('enabled');
    // The signed URL is the configured public one (HubSpot, Square, Twilio): behind a proxy, the
    // URL this request arrived at is not the one the sender signed.
    const delivery = { body, headers: c.req.raw.headers, method: c.req.method, ...(url === undefined ? {} : { url }) };
    const verification = await inSpan(c.get('span'), 'verify', async (span) => {
      const verified = await sender.verify(delivery, keys, {
        nowSeconds: Math.floor(deps.clock() / 1000),
        toleranceSeconds: config.WEBHOOK_TOLERANCE_SECONDS,
        ...(answered === undefined ? {} : { answered }),
      });
      span.setAttributes({ 'webhook.verification': verified.outcome });
      return verified;
    });
    if (verification.outcome === 'respond' || verification.outcome === 'repeated') return verification;
    if (verification.outcome === 'unauthorized') report.refusedBecause(verification.reason);
    if (verification.outcome === 'invalid_payload') {
      throw new AppError('invalid_payload', { why: { field: verification.field } });
    }
    if (verification.outcome === 'unauthorized') {
      throw new AppError('unauthorized', { why: { reason: verification.reason } });
    }
    let authenticated: readonly (AuthenticatedEvent & { payloadText: string })[];
    let refused: readonly RefusedEvent[] | undefined;
    const batch = verification.outcome === 'verified_batch';
    if (verification.outcome === 'verified_batch') {
      authenticated = verification.events;
      refused = verification.refused;
    } else {
      // Stored as received; the sender's description parsed the same bytes, so this refuses nothing it accepted.
      const text = payloadText(body);
      if (text === undefined) throw new AppError('invalid_payload');
      authenticated = [{ ...verification.event, payloadText: text }];
    }
    const events = authenticated.map(
      (event): InboxEvent => ({
        provider: sender.name,
        ...event,
        // Whatever a description read, a time the database cannot hold is no time rather than a failed write.
        occurredAt: storableTime(event.occurredAt),
      }),
    );
    // The delivery span's trace (the sender's when it sent one): log lines and spans share it.
    report.carries(events, traceIdOf(c.get('span').traceparent ?? c.req.header('traceparent'), deps.newId));
    return { outcome: 'verified' as const, events, batch, refused, fingerprint: verification.fingerprint };
  }

  /**
   * Sync mode applies the events now; async mode stores what the worker will apply and answers 202.
   * Parked and ignored events have no work for the worker, so they take the synchronous path (one
   * insert in their final state) in both modes. Every event of the delivery is stored in one
   * transaction (or one group commit), or none is.
   */
  async function store(
    db: Database,
    deadline: Deadline,
    planned: readonly Planned[],
    span: Span,
  ): Promise<Committed[]> {
    const items = planned.map(({ event, plan }): PlannedEvent => {
      const arrival: Arrival =
        backlog !== undefined && plan.kind === 'apply'
          ? { status: 'received', availableAt: new Date(deps.clock()), traceparent: span.traceparent }
          : { status: finalStatus[plan.kind] };
      return { event, plan, arrival };
    });
    if (backlog !== undefined && items.some((item) => item.arrival.status === 'received')) {
      await deadline.race(backlog.check(db));
    }
    // The statement may still commit after the deadline answered 503: the sender's retry then meets
    // a duplicate (200), so an event is never lost, and never answered 2xx before it is stored.
    if (deps.groupCommit !== undefined) return committerFor(db, deps.groupCommit).submit({ items, deadline, span });
    return processDelivery(db, deadline, items, { span });
  }

  // Whichever step refused or failed the delivery (admit, the streamed size limit, the handler), its
  // error lands here once: counted, logged by the delivery's report, and recorded for the dashboard.
  routes.use('/webhooks/:provider', async (c, next) => {
    const report = new DeliveryReport(reporting);
    c.set('report', report);
    const span = tracer.start(DELIVERY_SPAN, { parent: c.req.header('traceparent'), kind: 'server' });
    c.set('span', span);
    try {
      await next();
    } finally {
      if (tracer.enabled) endDeliverySpan(span, report.provider, c.res.status, c.error);
    }
    recordSetAside(c, report);
    if (c.error === undefined) return;
    const reason = rejectionReasonOf(c.error);
    if (reason !== undefined) deps.metrics.countRejection(c.req.param('provider'), reason);
    report.notAccepted(c.error);
    // Kept for the dashboard off the request's path: the log writes it later, in a batch.
    const { rejections } = deps;
    if (rejections === undefined) return;
    const rejection = rejectionOf(c.error, {
      at: deps.clock(),
      provider: report.provider,
      requestedRoute: c.req.param('provider'),
      headers: c.req.raw.headers,
      traceId: senderTraceId(c.req.header('traceparent')) ?? report.traceId,
    });
    if (rejection !== undefined) rejections.record(rejection);
  });

  /**
   * A batch's events set aside as refused: counted, and recorded for the dashboard with the status
   * their delivery was answered with (2xx when the others were stored; a 500 or 503 that the sender
   * retries records them again with its retry).
   */
  function recordSetAside(c: Context<IntakeEnv>, report: DeliveryReport): void {
    const { setAside, provider } = report;
    if (setAside.length === 0 || provider === undefined) return;
    for (let n = 0; n < setAside.length; n++) deps.metrics.countRejection(provider, 'invalid_event');
    const traceId = senderTraceId(c.req.header('traceparent')) ?? report.traceId;
    const request = { at: deps.clock(), provider, statusCode: c.res.status, headers: c.req.raw.headers, traceId };
    for (const record of refusedEventRecords(setAside, request)) deps.rejections?.record(record);
  }

  routes.post('/webhooks/:provider', admit, streamedBodyLimit(config.MAX_BODY_BYTES), async (c) => {
    const report = c.get('report');
    const body = await readBody(c);
    if (body === undefined) {
      report.uploadAbandoned();
      // Nobody may be listening; a sender's broken upload is a 400 all the same, never a 5xx.
      return new AppError('invalid_payload').getResponse();
    }
    // The deadline covers our work, not the sender's upload.
    report.bodyArrived();
    const deadline = new Deadline(config.HANDLER_DEADLINE_MS);
    // Load (what the async worker defers to) counts from here: a whole body, its verification
    // included, which is the intake's share of the CPU the worker would compete for. Counted from
    // admission, sixteen unsigned bodies trickling in at a byte a second held the worker at its
    // deferral bound (2,973 -> 99 events/s) without storing anything; counted only after
    // verification, the worker took the cores from a burst it should have let pass (acceptance fell
    // by a third, bench:ab against 8c1f6d7).
    deps.intakeLoad?.enter();
    try {
      const authenticated = await authenticate(c, body, report);
      if (authenticated.outcome === 'respond') {
        report.answeredWithoutStoring(authenticated.reason);
        // Discord's ping wants an empty 204; the others a JSON answer.
        if (authenticated.status === 204) return c.body(null, 204);
        return c.body(authenticated.body, 200, { 'content-type': 'application/json' });
      }
      if (authenticated.outcome === 'repeated') {
        // Answered as a delivery whose every event is a duplicate is: its events were stored (or set
        // aside) when it was answered in full, which is all that puts it in the memory.
        report.repeated();
        return answer(c, 'duplicate');
      }
      // Every event's handler schema before any database work: an invalid event refuses a delivery of
      // its own; a batch's is set aside with those the cut refused, and its batch-mates go on.
      const events = distinct(authenticated.events);
      const planned = authenticated.batch
        ? planBatch(deps.handlers, events, authenticated.refused, report)
        : events.map((event) => ({ event, plan: planFor(deps.handlers, event) }));
      const [first] = planned;
      if (first !== undefined)
        await deps.beforeStore?.({ provider: first.event.provider, eventId: first.event.eventId });
      const results = await store(c.get('db'), deadline, planned, c.get('span'));
      const stored = planned.map(({ event }, index): AnsweredEvent => ({ event, ...(results[index] ?? DUPLICATE) }));
      const outcome = deliveryOutcome(stored.map((result) => result.outcome));
      report.stored(stored, outcome);
      // Answered in full (a failed event or a 503 threw before here) and finished: a copy of it is
      // answered from memory. Not a delivery that left an event waiting (queued for the worker, or
      // parked): the worker may yet fail it, and the sender's redelivery must then take it back.
      if (authenticated.fingerprint !== undefined && FINISHED.has(outcome)) {
        answeredDeliveries?.add(authenticated.fingerprint);
      }
      return answer(c, outcome);
    } finally {
      deps.intakeLoad?.leave();
      deadline.clear();
      // Answered (or failed): nothing reads the bytes again, the stored events hold their own text.
      deps.bodyReader?.release(body);
    }
  });

  return routes;
}
