// The outbox relay of one destination: claims that destination's due messages under a lease, publishes them outside any transaction with
// bounded concurrency and a per-call timeout, and records the outcomes of a batch in one statement
// (two when some failed), with the next batch claimed while this one publishes.
// Delivery is at least once: a relay that dies mid-publish leaves its lease to expire, and the
// message goes out again under the same Idempotency-Key. A target that cannot be reached at all (an
// outage) costs the messages nothing: they are given back uncounted, and the relay as a whole backs
// off and probes with one message until the target answers again. Every destination has a relay of
// its own (relays.ts drains them side by side, as ops/maintenance/drainers.ts wires them), so an unreachable destination holds back only its
// own rows. Each destination's own limits (destination-state.ts, docs/outbox.md "Isolation per
// destination"): a token bucket bounds what it claims, its concurrency what it has in flight, and the
// circuit breaker and an operator's pause, shared by every process through outbox_destinations, decide
// at the start of each pass whether it claims at all. An answer counts toward the breaker only when
// it blames the destination (unreachable, 5xx, timeout, 401/403/404/405); a message the target
// refused (400, 422, …) dies alone, and a 429 paces the destination instead (docs/decisions/0021):
// the relay waits out its Retry-After, then sends at the rate the target showed it takes (pace.ts),
// one publish at a time on that rate, waiting within the pass rather than until the next.
// A target out of reach opens the circuit once its outage has outlived a probe, whatever the count,
// so every process and every operator's view sees it down; every message given back meanwhile says
// why in its last_error (docs/decisions/0027-an-unreachable-target-opens-the-circuit.md).
// Runtime-neutral (no Node APIs): the Node entry, the CLI and the Workers cron all drive the same `drain`.

import pLimit from 'p-limit';
import type { Config } from '../config.ts';
import type { Database } from '../db/client.ts';
import { type Lease, mayStart, takeLease } from '../db/lease.ts';
import { LAST_ERROR_MAX } from '../db/schema.ts';
import type { BackoffPolicy } from '../lib/backoff.ts';
import { type RandomSource, retryDelayMs } from '../lib/backoff.ts';
import { type Clock, type Sleep, timerSleep } from '../lib/clock.ts';
import { errorName } from '../lib/errors.ts';
import type { Logger } from '../lib/logger.ts';
import { drainOverlapped, type QueueSettings, retryAfterPass, type StopReason } from '../lib/loops.ts';
import type { Metrics } from '../lib/metrics.ts';
import { printableLine } from '../lib/text.ts';
import { noTracing, type Span, type SpanAttributes, type Tracer } from '../lib/tracing.ts';
import {
  admission,
  type BreakerPolicy,
  type CircuitChange,
  ensureDestinationRow,
  recordBreakerOutcome,
} from './destination-state.ts';
import { DEFAULT_BREAKER_COOLOFF_SECONDS, DEFAULT_BREAKER_FAILURES } from './destinations.ts';
import { type ClaimedMessage, claimMessages, type OutcomeRow, outcomeRow, recordOutcomes } from './message-rows.ts';
import { createPacer } from './pace.ts';
import type { Publisher, PublishOutcome } from './publishers/publisher.ts';

/** An answer that neither published the message nor failed to reach the target. */
type PublishAnswer = Exclude<PublishOutcome, { outcome: 'published' | 'unavailable' }>;

export interface RelaySettings extends QueueSettings {
  /** One publish call's timeout; must stay below the lease. */
  timeoutMs: number;
  /** Publishes in flight at once, across the batches in flight (a pipelining publisher takes whole batches). */
  concurrency: number;
  /**
   * Batches claimed before the earlier ones are published and recorded: the database claims the next
   * batch while the target takes this one. Each batch holds its own lease.
   */
  batchesInFlight: number;
  /**
   * The relay's own backoff while its target is unreachable (capped exponential, full jitter): how
   * long until it probes again. Defaults to OUTBOX_BACKOFF_BASE_MS up to `OUTAGE_PROBE_MAX_MS`.
   */
  outageBackoff?: BackoffPolicy;
}

/**
 * The longest wait between two probes of an unreachable target by default: OUTBOX_BACKOFF_MAX_MS
 * (an hour) is a message's patience, and a relay should notice a target that came back sooner.
 */
export const OUTAGE_PROBE_MAX_MS = 30_000;

/** The default outage backoff: the messages' own, capped so that a target back up is seen within OUTAGE_PROBE_MAX_MS. */
const outageBackoffOf = (backoff: BackoffPolicy): BackoffPolicy => ({
  baseMs: backoff.baseMs,
  maxMs: Math.min(backoff.maxMs, OUTAGE_PROBE_MAX_MS),
});

/** The claim span of a batch that claimed nothing: records nothing. */
const untraced = noTracing.start('untraced');

/** Batch and concurrency are tuning, not contract: sized for a local target answering in milliseconds. */
export const DEFAULT_BATCH_SIZE = 500;
export const DEFAULT_CONCURRENCY = 32;
export const DEFAULT_BATCHES_IN_FLIGHT = 2;
export const DEFAULT_BUDGET_MS = 20_000;

export function relaySettings(
  config: Pick<
    Config,
    'OUTBOX_MAX_ATTEMPTS' | 'OUTBOX_BACKOFF_BASE_MS' | 'OUTBOX_BACKOFF_MAX_MS' | 'OUTBOX_LEASE_MS' | 'OUTBOX_TIMEOUT_MS'
  >,
  overrides: Partial<RelaySettings> = {},
): RelaySettings {
  return {
    maxAttempts: config.OUTBOX_MAX_ATTEMPTS,
    backoff: { baseMs: config.OUTBOX_BACKOFF_BASE_MS, maxMs: config.OUTBOX_BACKOFF_MAX_MS },
    leaseMs: config.OUTBOX_LEASE_MS,
    timeoutMs: config.OUTBOX_TIMEOUT_MS,
    batchSize: DEFAULT_BATCH_SIZE,
    concurrency: DEFAULT_CONCURRENCY,
    batchesInFlight: DEFAULT_BATCHES_IN_FLIGHT,
    budgetMs: DEFAULT_BUDGET_MS,
    outageBackoff: outageBackoffOf({ baseMs: config.OUTBOX_BACKOFF_BASE_MS, maxMs: config.OUTBOX_BACKOFF_MAX_MS }),
    ...overrides,
  };
}

/** A destination's own limits (its `settings`): the rate is this process's, the breaker shared. */
export interface RelayIsolation {
  /** Messages per second this relay publishes; undefined: unlimited. */
  ratePerSecond?: number | undefined;
  breaker: BreakerPolicy;
}

export const DEFAULT_ISOLATION: RelayIsolation = {
  breaker: { failures: DEFAULT_BREAKER_FAILURES, cooloffMs: DEFAULT_BREAKER_COOLOFF_SECONDS * 1000 },
};

/**
 * A token bucket on the relay's clock: `ratePerSecond` tokens a second, holding at most a second's
 * worth, so a claim never takes more than the destination may be sent before the lease runs out.
 */
function tokenBucket(ratePerSecond: number, clock: Clock) {
  const capacity = Math.max(1, ratePerSecond);
  let tokens = capacity;
  let filledAtMs = clock();
  return {
    available(): number {
      const nowMs = clock();
      tokens = Math.min(capacity, tokens + ((nowMs - filledAtMs) / 1000) * ratePerSecond);
      filledAtMs = nowMs;
      return Math.floor(tokens);
    },
    take(count: number): void {
      tokens -= count;
    },
  };
}

export interface RelayDeps {
  db: Database;
  /** The destination whose rows this relay claims (outbox_messages.destination). */
  destination: string;
  /** That destination's publisher. */
  publisher: Publisher;
  clock: Clock;
  /** How a pass waits for a paced destination's next start; absent: the runtime's timers. Tests move their clock. */
  sleep?: Sleep;
  /** Makes this relay's id, written to `locked_by`. */
  newId: () => string;
  random: RandomSource;
  logger: Logger;
  settings: RelaySettings;
  /** Counts each publish outcome by topic (webhook_outbox_deliveries_total). */
  metrics?: Pick<Metrics, 'countPublish'>;
  /**
   * Spans per batch: `outbox claim` and its `outbox outcome`, and per message an `outbox publish`
   * child of the span that enqueued it, linked to its claim. Absent: `noTracing`.
   */
  tracer?: Tracer;
  /** The destination's rate limit and breaker; absent: DEFAULT_ISOLATION (no rate limit). */
  isolation?: RelayIsolation;
  /**
   * Awaited before each batch is claimed (not before a probe): a process whose intake is saturated
   * holds its relay back for a bounded time, as it does its inbox worker (ops/maintenance/drainers.ts).
   * Answers how long it waited. Absent: never waits.
   */
  yieldToIntake?: (deadlineMs: number, signal: AbortSignal | undefined) => Promise<number>;
}

export interface DrainSummary {
  claimed: number;
  published: number;
  /** Failed and rescheduled. */
  retried: number;
  dead: number;
  /** Claimed but not started (the lease or the budget would not cover the call): free again at once. */
  released: number;
  /**
   * Given back uncounted because the target could not be reached (or was found unreachable before
   * they started): due again when the relay next probes.
   */
  unavailable: number;
  batches: number;
  /** Time spent holding back for a saturated intake before claiming (yieldToIntake). */
  deferredMs: number;
  /** `unavailable`: the target is out of reach, and the relay waits until its next probe. */
  stoppedBy: StopReason | 'unavailable';
  elapsedMs: number;
}

/** One drain at a time per relay (its lease owner is its id); run several relays for parallelism. */
export interface Relay {
  readonly id: string;
  /** The destination it drains; `*` for ops/maintenance/drainers.ts's relay of every destination. */
  readonly destination: string;
  drain(options?: { signal?: AbortSignal; budgetMs?: number }): Promise<DrainSummary>;
}

export function createRelay(deps: RelayDeps): Relay {
  const { db, destination, publisher, clock, logger, settings } = deps;
  const tracer = deps.tracer ?? noTracing;
  const id = deps.newId();
  const at = (ms: number) => new Date(ms).toISOString();
  const outageBackoff = settings.outageBackoff ?? outageBackoffOf(settings.backoff);

  /**
   * The target is out of reach, as far as this relay knows: how many probes failed in a row, and when
   * the next may start. Kept across drains; the first answer about any message clears it.
   */
  let outage: { failures: number; probeAtMs: number; sinceMs: number; error: string } | undefined;

  /**
   * The target asked to be sent less (429): nothing is started before its wait ends, and then one
   * publish every 1/rate seconds at the rate it showed (pace.ts). This process's own, like the rate
   * limit; the rows it gives back carry the wait to every other relay.
   */
  const pacer = createPacer(settings.backoff, deps.random);
  const paced = () => pacer.waiting(clock());
  const sleep = deps.sleep ?? timerSleep;
  /**
   * Waits out a 429's wait that ends before `deadlineMs`, once the target's rate is known (a
   * destination being metered is sent to again as soon as it may be, not a pass interval later);
   * false when the wait outlasts the pass, or no rate is known yet (the pass ends, as it did).
   */
  async function waitForPace(deadlineMs: number, signal: AbortSignal | undefined): Promise<boolean> {
    const nowMs = clock();
    if (!pacer.waiting(nowMs)) return true;
    if (pacer.ratePerSecond === undefined || pacer.untilMs >= deadlineMs) return false;
    await sleep(pacer.untilMs - nowMs, signal);
    return !signal?.aborted && !paced();
  }

  const isolation = deps.isolation ?? DEFAULT_ISOLATION;
  const bucket = isolation.ratePerSecond === undefined ? undefined : tokenBucket(isolation.ratePerSecond, clock);
  /** outbox_destinations' row is made on this relay's first drain; the breaker's updates assume it. */
  let rowEnsured = false;

  function logCircuit(change: CircuitChange): void {
    const fields = { relay: id, destination, publisher: publisher.kind };
    if (change.kind === 'closed') logger.info('outbox circuit closed', { ...fields, was: change.was });
    else {
      logger.warn(change.kind === 'opened' ? 'outbox circuit opened' : 'outbox circuit re-opened', {
        ...fields,
        consecutive_failures: change.failures,
        probe_at: at(change.probeAtMs),
      });
    }
  }

  /** A publish found the target unreachable: start the outage, or back off further after a failed probe. */
  function noteUnavailable(error: string): void {
    const nowMs = clock();
    // The rest of a batch that failed together is the same outage, not another failed probe.
    if (outage !== undefined && nowMs < outage.probeAtMs) return;
    const failures = (outage?.failures ?? 0) + 1;
    const delayMs = retryDelayMs(outageBackoff, failures, deps.random);
    // At least a millisecond: the rest of this wave must see the probe time still ahead.
    outage = { failures, probeAtMs: nowMs + Math.max(1, delayMs), sinceMs: outage?.sinceMs ?? nowMs, error };
    logger.warn('outbox target unavailable, backing off', {
      relay: id,
      destination,
      publisher: publisher.kind,
      error: printableLine(error, LAST_ERROR_MAX),
      failed_probes: failures - 1,
      delay_ms: delayMs,
    });
  }

  /** Any answer about a message (published, refused, retried) shows the target reachable. */
  function noteReachable(): void {
    if (outage === undefined) return;
    logger.info('outbox target reachable again', {
      relay: id,
      destination,
      publisher: publisher.kind,
      outage_ms: clock() - outage.sinceMs,
    });
    outage = undefined;
  }

  /** A 429: the destination waits until the Retry-After (else a backoff); logged when a wait begins. */
  function notePaced(error: string, retryAfterMs: number | undefined): void {
    // The 429s of one wave of concurrent publishes are one request to slow down, not several.
    const { began, delayMs } = pacer.refused(clock(), retryAfterMs);
    if (!began) return;
    const rate = pacer.ratePerSecond;
    logger.warn('outbox destination asked to slow down, pacing', {
      relay: id,
      destination,
      publisher: publisher.kind,
      error,
      delay_ms: delayMs,
      ...(rate === undefined ? {} : { rate_per_second: Math.round(rate * 100) / 100 }),
    });
  }

  /**
   * A message given back uncounted during an outage: due again at the next probe, not before, and
   * saying why it waits (the outage's error) whether it was tried or found the target gone before it
   * started.
   */
  function heldForOutage(message: ClaimedMessage, dueBy: Date): OutcomeRow {
    // Stryker disable next-line OptionalChaining: the outage is always set here (noteUnavailable has just set it, or the caller checked it), with nothing awaited in between; the optional chain only satisfies the type.
    const availableMs = retryAfterPass(dueBy, outage?.probeAtMs ?? 0);
    const error = outage?.error;
    return outcomeRow(message.id, 'pending', {
      available_at: at(availableMs),
      ...(error === undefined ? {} : { last_error: printableLine(error, LAST_ERROR_MAX) }),
    });
  }

  /**
   * The row an answer other than published leaves. The message's own fault (rejected), a permanent
   * failure and the last allowed attempt: dead. A pace or a misdirected destination: held, its
   * attempts as they were (the message was not judged), due after the pace or a backoff. Any other
   * failure: an attempt counted, rescheduled with backoff.
   */
  function answeredOutcome(message: ClaimedMessage, result: PublishAnswer, dueBy: Date): OutcomeRow {
    const nowMs = clock();
    // Publishers word their failures themselves (a status, a system code, a broker's refusal), but a
    // broker's words arrive as they were sent: stored and logged as one bounded, escaped line.
    const lastError = printableLine(result.error, LAST_ERROR_MAX);
    const held = result.outcome === 'paced' || result.outcome === 'misdirected';
    const attempt = held ? message.failures : message.failures + 1;
    const fields = {
      message_id: message.id,
      topic: message.topic,
      attempts: attempt,
      error: lastError,
      destination,
      publisher: publisher.kind,
    };
    const dies = result.outcome === 'permanent' || result.outcome === 'rejected' || attempt >= settings.maxAttempts;
    if (!held && dies) {
      logger.error('outbox message dead', { ...fields, alert: true });
      return outcomeRow(message.id, 'dead', { added_failures: 1, last_error: lastError });
    }
    if (result.outcome === 'paced') {
      return outcomeRow(message.id, 'pending', {
        available_at: at(retryAfterPass(dueBy, pacer.untilMs)),
        last_error: lastError,
      });
    }
    const retryAfterMs = result.outcome === 'retry' ? result.retryAfterMs : undefined;
    // A held message's backoff is its next attempt's, so it does not grow while it is held: the
    // breaker's cool-off, which does, is what keeps a misdirected destination from being hammered.
    const delayMs = retryDelayMs(settings.backoff, message.failures + 1, deps.random, retryAfterMs);
    logger.warn(held ? 'outbox destination refused the relay, message held' : 'outbox publish failed, will retry', {
      ...fields,
      delay_ms: delayMs,
    });
    return outcomeRow(message.id, 'pending', {
      added_failures: held ? 0 : 1,
      available_at: at(retryAfterPass(dueBy, nowMs + delayMs)),
      last_error: lastError,
    });
  }

  /**
   * Publishers classify their own failures; anything thrown is a bug or an environment problem worth
   * another try, and its class is all that is safe to keep: unlike a handler's failure (describeCause),
   * it comes from client libraries serialising the payload, whose messages can quote it or a URL.
   */
  const thrown = (error: unknown): PublishOutcome => ({
    // Stryker disable next-line StringLiteral: this outcome is only compared with the outcomes that are not plain retries ('published', 'unavailable', 'rejected', 'paced', 'misdirected', 'permanent'); any other failure is rescheduled and counted toward the breaker, so an empty outcome is retried just the same.
    outcome: 'retry',
    error: `publisher ${errorName(error)}`,
  });

  async function drain(options: { signal?: AbortSignal; budgetMs?: number } = {}): Promise<DrainSummary> {
    const startedMs = clock();
    const summary = { claimed: 0, published: 0, retried: 0, dead: 0, released: 0, unavailable: 0, deferredMs: 0 };
    // Only messages due when the pass began: one rescheduled during it waits for the next pass.
    const dueBy = new Date(startedMs);
    const waiting = outage !== undefined && startedMs < outage.probeAtMs;
    if (waiting) return { ...summary, batches: 0, stoppedBy: 'unavailable', elapsedMs: 0 };
    // Paced by a 429: nothing is sent before the target's Retry-After, like an empty token bucket
    // (a metered destination's pass waits for it when it ends within the budget).
    const passBudgetMs = options.budgetMs ?? settings.budgetMs;
    if (!(await waitForPace(startedMs + passBudgetMs, options.signal))) {
      return { ...summary, batches: 0, stoppedBy: 'drained', elapsedMs: clock() - startedMs };
    }
    if (!rowEnsured) {
      await ensureDestinationRow(db, destination);
      rowEnsured = true;
    }
    const admitted = await admission(db, destination, startedMs, isolation.breaker);
    // Paused: nothing to do here until an operator resumes it; open: every process waits for the probe.
    if (admitted.kind === 'paused') return { ...summary, batches: 0, stoppedBy: 'drained', elapsedMs: 0 };
    if (admitted.kind === 'open') return { ...summary, batches: 0, stoppedBy: 'unavailable', elapsedMs: 0 };
    if (admitted.kind === 'probe') {
      logger.info('outbox circuit probing', { relay: id, destination, publisher: publisher.kind });
    }
    /** Set when a batch's outcome opened the circuit: no further batch is claimed this pass. */
    let circuitOpen = false;
    /**
     * Failed publishes in a row this pass: at the breaker's threshold the rest of the claimed
     * messages are not started (a batch of a destination that times out would otherwise cost a
     * timeout each), and the batch's outcome opens the circuit for every process.
     */
    let streak = 0;
    /** Nothing more is started or claimed this pass: the circuit opened, or is about to. */
    const tripped = () => circuitOpen || streak >= isolation.breaker.failures;
    /** Messages the target refused this pass (their own fault): a probe answered so decided nothing. */
    let rejected = 0;
    /** The error of this pass's latest failure that counted: what a message given back unstarted waits for. */
    let lastFailure: string | undefined;

    // A pipelining publisher takes whole batches at once: its publishes share one connection. Any
    // other is held to `concurrency` calls across the batches in flight.
    const pipelined = publisher.pipelined === true;
    const lane = pLimit(Math.max(1, settings.concurrency));

    /** Publishes a claimed batch and records its outcomes. */
    async function publishBatch(
      messages: readonly ClaimedMessage[],
      lease: Lease,
      deadlineMs: number,
      claim: Span,
    ): Promise<void> {
      const published: string[] = [];
      const others: OutcomeRow[] = [];
      /** Publishes that failed (retried, dead, unreachable) since the batch's last published one: what the breaker counts. */
      let trailingFailures = 0;
      const noteFailure = (error: string) => {
        trailingFailures += 1;
        streak += 1;
        lastFailure = printableLine(error, LAST_ERROR_MAX);
      };
      // A pipelined batch's publishes start together, so they share one timeout.
      const batchSignal = pipelined ? AbortSignal.timeout(settings.timeoutMs) : undefined;
      const publishInLane = async (message: ClaimedMessage) => {
        const nowMs = clock();
        if (outage !== undefined && nowMs < outage.probeAtMs) {
          // Found unreachable while this one waited for its lane: not started, nothing counted.
          // (A probe starts once probeAtMs has come, so it is not held here.)
          others.push(heldForOutage(message, dueBy));
          summary.unavailable += 1;
          return;
        }
        if (tripped()) {
          // The circuit is (about to be) open: given back as it was, attempts untouched, saying why.
          others.push(outcomeRow(message.id, 'pending', lastFailure === undefined ? {} : { last_error: lastFailure }));
          summary.unavailable += 1;
          return;
        }
        // The target asked for a pause while this one waited: given back unstarted, due after it.
        const givenBackPaced = () => {
          others.push(outcomeRow(message.id, 'pending', { available_at: at(retryAfterPass(dueBy, pacer.untilMs)) }));
          summary.released += 1;
        };
        if (paced()) return givenBackPaced();
        // A metered destination: this one starts at its turn, 1/rate after the one before.
        const startMs = pacer.nextStartMs(nowMs);
        if (!mayStart(lease, startMs, settings.timeoutMs, { deadlineMs, signal: options.signal })) {
          others.push(outcomeRow(message.id, 'pending'));
          summary.released += 1;
          return;
        }
        pacer.take(startMs);
        if (startMs > nowMs) {
          await sleep(startMs - nowMs, options.signal);
          if (paced()) return givenBackPaced();
          if (options.signal?.aborted) {
            others.push(outcomeRow(message.id, 'pending'));
            summary.released += 1;
            return;
          }
        }
        const span = tracer.start('outbox publish', {
          parent: message.traceparent,
          kind: 'producer',
          links: [claim.traceparent],
          attributes: {
            'messaging.system': publisher.kind,
            'messaging.destination.name': message.topic,
            'outbox.destination': destination,
          },
        });
        let result: PublishOutcome;
        try {
          result = await publisher.publish(message, batchSignal ?? AbortSignal.timeout(settings.timeoutMs));
        } catch (error) {
          result = thrown(error);
        }
        span.setAttributes({ 'outbox.outcome': result.outcome });
        if (result.outcome !== 'published') span.fail(result.error);
        span.end();
        if (result.outcome === 'unavailable') {
          noteUnavailable(result.error);
          noteFailure(result.error);
          others.push(heldForOutage(message, dueBy));
          summary.unavailable += 1;
          return;
        }
        noteReachable();
        let counted: 'published' | 'retried' | 'dead' = 'published';
        if (result.outcome === 'published') {
          published.push(message.id);
          trailingFailures = 0;
          streak = 0;
          pacer.published(clock());
        } else {
          if (result.outcome === 'paced') notePaced(result.error, result.retryAfterMs);
          if (result.outcome === 'rejected') rejected += 1;
          const outcome = answeredOutcome(message, result, dueBy);
          others.push(outcome);
          counted = outcome.status === 'dead' ? 'dead' : 'retried';
          // Who is to blame decides what the breaker counts: a refused message and a pace say nothing
          // against the destination (docs/decisions/0021).
          if (result.outcome !== 'rejected' && result.outcome !== 'paced') noteFailure(result.error);
        }
        summary[counted] += 1;
        deps.metrics?.countPublish(message.topic, counted, destination);
      };
      await Promise.all(
        messages.map((message) => (pipelined ? publishInLane(message) : lane(() => publishInLane(message)))),
      );
      // The rows stay leased to us until this write, so nobody else can take them meanwhile.
      const outcome = claim.child('outbox outcome', {
        'outbox.published': published.length,
        'outbox.others': others.length,
      });
      try {
        await recordOutcomes(db, id, { published, publishedAt: new Date(clock()), others });
      } catch (error) {
        outcome.fail(error);
        throw error;
      } finally {
        outcome.end();
      }
      // Still out of reach after this batch (no answer since the last unreachable one): the breaker
      // opens once the outage has outlived a probe, and probes on the outage's backoff.
      const unreachable =
        outage !== undefined && trailingFailures > 0
          ? { failedProbes: outage.failures - 1, probeAtMs: outage.probeAtMs }
          : undefined;
      const change = await recordBreakerOutcome(db, destination, clock(), isolation.breaker, {
        published: published.length,
        trailingFailures,
        unreachable,
      });
      if (change === undefined) return;
      logCircuit(change);
      if (change.kind !== 'closed') circuitOpen = true;
    }

    const budgetMs = passBudgetMs;
    const claimBatch = async (asked: number, deadlineMs: number) => {
      // Metered after a 429: a second's worth at a time, so nothing waits long for its turn under the lease.
      const wanted = pacer.claimLimit(asked);
      // Rate-limited: no more than the bucket holds; an empty bucket ends the pass (drained for now).
      const limit = bucket === undefined ? wanted : Math.min(wanted, bucket.available());
      if (limit === 0) return { claimed: 0, limit: wanted, done: Promise.resolve() };
      const lease = takeLease(id, clock(), settings.leaseMs);
      // Spans' own time, not the relay's clock (a test's may stand still); the span is made after the
      // claim, so an idle poll that claimed nothing leaves no span behind.
      const claimStartedAt = Date.now();
      const claimSpan = (attributes: SpanAttributes) =>
        tracer.start('outbox claim', {
          startedAt: claimStartedAt,
          attributes: { 'messaging.system': publisher.kind, 'outbox.destination': destination, ...attributes },
        });
      let messages: ClaimedMessage[];
      try {
        messages = await claimMessages(db, destination, lease, dueBy, limit);
      } catch (error) {
        const failed = claimSpan({ 'outbox.claimed': 0 });
        failed.fail(error);
        failed.end();
        throw error;
      }
      const claim = messages.length === 0 ? untraced : claimSpan({ 'outbox.claimed': messages.length });
      claim.end();
      bucket?.take(messages.length);
      summary.claimed += messages.length;
      return { claimed: messages.length, limit, done: publishBatch(messages, lease, deadlineMs, claim) };
    };

    let probes = 0;
    const probeDeadlineMs = startedMs + budgetMs;
    if (outage !== undefined || admitted.kind === 'probe') {
      // The target was out of reach (or the circuit open): one message first, the rest once it is
      // answered. A message the target refused is not a failed probe (nor a successful one): the next
      // due message is tried, so a probe never waits behind a refused message.
      const withinBudget = () => probes === 0 || clock() < probeDeadlineMs;
      for (let refusedProbe = true; refusedProbe && !options.signal?.aborted && withinBudget(); ) {
        const rejectedBefore = rejected;
        const probe = await claimBatch(1, probeDeadlineMs);
        await probe.done;
        probes += 1;
        refusedProbe = rejected > rejectedBefore;
      }
    }
    const progress =
      outage === undefined && !tripped() && !paced()
        ? await drainOverlapped({
            nowMs: clock,
            budgetMs: budgetMs - (clock() - startedMs),
            signal: options.signal,
            inFlight: settings.batchesInFlight,
            // Once the target is found unreachable (or the breaker trips), no further batch is claimed this pass.
            batch: async (deadlineMs) => {
              const none = { claimed: 0, limit: settings.batchSize, done: Promise.resolve() };
              if (outage !== undefined || tripped() || !(await waitForPace(deadlineMs, options.signal))) return none;
              if (deps.yieldToIntake !== undefined) {
                summary.deferredMs += await deps.yieldToIntake(deadlineMs, options.signal);
                if (options.signal?.aborted || clock() >= deadlineMs) return { ...none, notStarted: true as const };
              }
              // A metered destination's next turn comes after this pass: it waits out the budget (the
              // pass then says `budget`, and the next begins at once) instead of claiming rows it
              // would only give back.
              const nowMs = clock();
              if (pacer.nextStartMs(nowMs) < deadlineMs) return claimBatch(settings.batchSize, deadlineMs);
              await sleep(deadlineMs - nowMs, options.signal);
              return { ...none, notStarted: true as const };
            },
          })
        : { batches: 0, stoppedBy: 'drained' as const };

    const result: DrainSummary = {
      ...summary,
      batches: progress.batches + probes,
      stoppedBy: outage === undefined && !tripped() ? progress.stoppedBy : 'unavailable',
      elapsedMs: clock() - startedMs,
    };
    if (result.claimed > 0) logger.info('outbox drained', { relay: id, destination, ...result });
    return result;
  }

  return { id, destination, drain };
}
