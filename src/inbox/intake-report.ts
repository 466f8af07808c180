// What a delivery leaves behind besides its row: the answer the sender gets (the contract's table),
// its one log line and its counts. Labels and log fields are facts about the delivery, never its payload.
import type { Context } from 'hono';
import { type Clock, elapsedMs } from '../lib/clock.ts';
import { AppError } from '../lib/errors.ts';
import type { LogSampler } from '../lib/log-sampler.ts';
import type { LogFields, Logger } from '../lib/logger.ts';
import type { Metrics } from '../lib/metrics.ts';
import type { DeliveryLog, DeliveryLogOutcome } from './delivery-log.ts';
import type { InboxEvent } from './event-rows.ts';
import { SENDER_PAUSED } from './pause-gate.ts';
import { type Committed, ProcessingFailure } from './process.ts';

/**
 * `queued`: stored `received`, waiting for the async worker (a new event, or a `failed` row taken
 * back); nothing else is `queued` here. A parked event waits too, but for an operator's replay.
 */
export type Answered = Committed['outcome'];

const RECEIVED = { status: 200, body: '{"received":true}' } as const;
/**
 * The contract's 202, whose `queued` flag means "stored for later work": the worker's (`queued`) or
 * an operator's (`parked`).
 */
const STORED_FOR_LATER = { status: 202, body: '{"received":true,"queued":true}' } as const;

const answers: Record<Answered, { status: 200 | 202; body: string }> = {
  completed: RECEIVED,
  queued: STORED_FOR_LATER,
  ignored: RECEIVED,
  duplicate: { status: 200, body: '{"received":true,"duplicate":true}' },
  parked: STORED_FOR_LATER,
};

/** One event of a delivery and what the intake did with it: what its answer and its counts are made of. */
export type AnsweredEvent = Committed & { event: InboxEvent };

export function answer(c: Context, outcome: Answered): Response {
  const { status, body } = answers[outcome];
  return c.body(body, status, { 'content-type': 'application/json' });
}

export interface ReportDeps {
  logger: Logger;
  metrics: Metrics;
  /** Bounds the lines a sender's mistakes (413, 415, 401, 400, dropped uploads) may write. */
  rejections: LogSampler;
  /** Where each delivery of an authenticated, valid event is recorded; absent: not recorded. */
  deliveryLog?: DeliveryLog | undefined;
  /** The delivery log's time of arrival. */
  clock: Clock;
}

/** The refusals a sender causes: each logged with its reason, sampled; metrics count every one. */
const senderMistakes: ReadonlySet<string> = new Set<AppError['code']>([
  'payload_too_large',
  'unsupported_media_type',
  'unauthorized',
  'invalid_payload',
]);

/** A delivery with nothing set aside (every one but a batch with malformed events): shared, not made per delivery. */
const NONE_SET_ASIDE: readonly string[] = [];

/** Lines per sender and reason per minute before a sender's mistakes are only counted. */
export const REJECTION_LINES_PER_MINUTE = 10;

/** Logs a sender's mistake through the sampler: its first lines, then one line saying how many were left out. */
function logSampled(deps: ReportDeps, level: 'warn' | 'info', message: string, fields: LogFields): void {
  const line = deps.rejections.sample(`${fields.provider}\u0000${fields.outcome ?? fields.reason}`);
  if (line.suppressedBefore > 0) {
    deps.logger.warn('rejections not logged', {
      provider: fields.provider,
      outcome: fields.outcome,
      reason: fields.reason,
      suppressed: line.suppressedBefore,
      window_ms: deps.rejections.windowMs,
    });
  }
  if (line.log) deps.logger[level](message, fields);
}

/**
 * One delivery's report, filled in as the delivery goes: the sender first, then the reason it was
 * refused or the event it carried. Restarted when the body has been read, so its duration is ours.
 * Nothing is logged until the route names an enabled sender: an unknown name is the sender's text,
 * and its 404 is only counted.
 */
export class DeliveryReport {
  #started = performance.now();
  readonly #arrivedAt: number;
  #provider: string | undefined;
  #fields: LogFields = {};
  /** The delivery's events and trace id, once authenticated: what the delivery log records. */
  #carried: { events: readonly InboxEvent[]; traceId: string } | undefined;
  /** A batch's events set aside as refused, each named by the field it failed on. */
  #setAside: readonly string[] = NONE_SET_ASIDE;

  constructor(private readonly deps: ReportDeps) {
    this.#arrivedAt = deps.clock();
  }

  /** The name of the enabled sender the route named, once admitted (the log's `provider`). */
  get provider(): string | undefined {
    return this.#provider;
  }

  /** The delivery's trace id, once its events were read (the sender's, or one of ours). */
  get traceId(): string | undefined {
    const traceId = this.#fields.trace_id;
    return typeof traceId === 'string' ? traceId : undefined;
  }

  /** The route named this enabled sender. */
  concerns(provider: string): void {
    this.#provider = provider;
    this.#fields = { provider, ...this.#fields };
  }

  /** The body is in: from here on the time is ours. */
  bodyArrived(): void {
    this.#started = performance.now();
  }

  refusedBecause(reason: string): void {
    this.#fields = { ...this.#fields, reason };
  }

  /** The delivery's events: one is named in the line; a sender's batch is counted (its ids are many). */
  carries(events: readonly InboxEvent[], traceId: string): void {
    const [only] = events;
    const named =
      events.length === 1 && only !== undefined
        ? { event_id: only.eventId, event_type: only.eventType }
        : { event_count: events.length };
    this.#fields = { ...this.#fields, ...named, trace_id: traceId };
    this.#carried = { events, traceId };
  }

  /** A batch's events set aside as refused (the field each failed on): counted in the delivery's line. */
  setsAside(fields: readonly string[]): void {
    this.#setAside = fields;
    this.#fields = { ...this.#fields, events_refused: fields.length };
  }

  get setAside(): readonly string[] {
    return this.#setAside;
  }

  /** One delivery-log record per event, all with the delivery's answer, time and trace. */
  #logDelivery(
    events: readonly { event: InboxEvent; outcome: DeliveryLogOutcome; attempt?: number | undefined }[],
    statusCode: number,
    durationMs: number,
  ): void {
    const log = this.deps.deliveryLog;
    const traceId = this.#carried?.traceId;
    if (log === undefined || traceId === undefined) return;
    const deliveredAt = new Date(this.#arrivedAt);
    for (const { event, outcome, attempt } of events) {
      log.add({
        provider: event.provider,
        eventId: event.eventId,
        contentDigest: event.contentDigest,
        deliveredAt,
        traceId,
        statusCode,
        outcome,
        durationMs,
        // Attempt 1 of a stored outcome: this delivery wrote the row (a duplicate has no attempt).
        firstStore: attempt === 1,
      });
    }
  }

  /** A protocol message the sender's description answered itself (Slack's url_verification): nothing stored. */
  answeredWithoutStoring(reason: string): void {
    this.deps.logger.info('answered without storing', {
      ...this.#fields,
      reason,
      duration_ms: elapsedMs(this.#started),
    });
  }

  /**
   * A copy of a delivery answered in full a short while ago (the sender's verify said `repeated`):
   * counted per sender, one sampled line, and no delivery-log record. Its events were logged when the
   * delivery was answered; a captured copy sent at any rate must not spend the log's spool.
   */
  repeated(): void {
    const provider = this.#provider;
    if (provider === undefined) return;
    this.deps.metrics.countRepeatedDelivery(provider);
    logSampled(this.deps, 'info', 'repeated delivery answered as a duplicate', {
      ...this.#fields,
      outcome: 'repeated',
      duration_ms: elapsedMs(this.#started),
    });
  }

  /** The event counted under its own type and what became of it. */
  #count({ event, outcome, attempt }: AnsweredEvent): void {
    const { metrics } = this.deps;
    metrics.countEvent(
      event.provider,
      event.eventType,
      outcome === 'completed' || outcome === 'queued' ? 'accepted' : outcome,
    );
    // A re-queued failed event is retried by the worker, which counts it then.
    if (outcome !== 'queued' && attempt !== undefined && attempt > 1) {
      metrics.countEvent(event.provider, event.eventType, 'retried');
    }
  }

  /** Each event counted under its own type; one line for the delivery, with the answer it got. */
  stored(events: readonly AnsweredEvent[], answered: Answered): void {
    const { logger, metrics } = this.deps;
    const durationMs = elapsedMs(this.#started);
    const [only] = events;
    const attempt = events.length === 1 ? only?.attempt : undefined;
    const fields = { ...this.#fields, outcome: answered, attempt, duration_ms: durationMs };
    for (const answered of events) this.#count(answered);
    if (only !== undefined) metrics.observeProcessing(only.event.provider, durationMs / 1000);
    this.#logDelivery(events, answers[answered].status, durationMs);
    if (events.some((event) => event.outcome === 'parked')) {
      logger.warn('event parked: unknown api_version', { ...fields, alert: true });
    } else logger.info(answered === 'queued' ? 'event queued' : 'event processed', fields);
  }

  /** A sender that went away (or broke the stream) before its body arrived: not our error. */
  uploadAbandoned(): void {
    logSampled(this.deps, 'info', 'delivery abandoned before its body arrived', {
      ...this.#fields,
      reason: 'body_unreadable',
    });
  }

  /**
   * Refused, failed or unavailable: what the thrown error answers, with its `why` (the limit, the
   * field, the content type, a handler's cause). A sender's mistake is a warning, sampled (metrics
   * count every one); our own failures are errors, each logged.
   */
  notAccepted(error: unknown): void {
    const provider = this.#provider;
    if (provider === undefined) return;
    const outcome = error instanceof AppError ? error.code : 'unavailable';
    const attempt = error instanceof ProcessingFailure ? error.attempt : undefined;
    if (error instanceof ProcessingFailure) {
      this.deps.metrics.countEvent(provider, error.eventType ?? String(this.#fields.event_type), 'failed');
    }
    const why = error instanceof AppError ? error.why : {};
    const durationMs = elapsedMs(this.#started);
    const fields = { ...this.#fields, ...why, outcome, attempt, duration_ms: durationMs };
    // Our failures after the events passed their checks (500, 503) are deliveries the sender will
    // retry: logged under each event. A sender's mistake never reaches the log (its events may be forged).
    const failed = error instanceof ProcessingFailure;
    if (failed || outcome === 'unavailable') {
      const logged: DeliveryLogOutcome = failed ? 'failed' : 'unavailable';
      // A failing event's batch-mates were stored all the same: each logged (and counted) as it was.
      const stored = error instanceof ProcessingFailure ? error.stored : undefined;
      const events = (this.#carried?.events ?? []).map((event) => {
        const mate = stored?.get(event);
        if (mate === undefined) return { event, outcome: logged };
        this.#count({ event, ...mate });
        return { event, outcome: mate.outcome, attempt: mate.attempt };
      });
      this.#logDelivery(events, failed ? 500 : 503, durationMs);
    }
    if (senderMistakes.has(outcome)) logSampled(this.deps, 'warn', 'event not accepted', fields);
    // An operator's pause refuses by design, possibly a flood: sampled like a sender's mistake.
    else if (why.reason === SENDER_PAUSED) logSampled(this.deps, 'info', 'event not accepted', fields);
    else this.deps.logger.error('event not accepted', fields);
  }
}
