// The outbox relay: claims due messages under a lease, publishes them outside any transaction with
// bounded concurrency and a per-call timeout, and records the outcomes of a batch in one statement
// (two when some failed), with the next batch claimed while this one publishes.
// Delivery is at least once: a relay that dies mid-publish leaves its lease to expire, and the
// message goes out again under the same Idempotency-Key. Runtime-neutral (no Node APIs): the Node
// entry, the CLI and the Workers cron all drive the same `drain`.

import pLimit from 'p-limit';
import type { Config } from '../config.ts';
import type { Database } from '../db/client.ts';
import { type Lease, leaseCovers, takeLease } from '../db/lease.ts';
import { LAST_ERROR_MAX } from '../db/schema.ts';
import { type RandomSource, retryDelayMs } from '../lib/backoff.ts';
import type { Clock } from '../lib/clock.ts';
import type { Logger } from '../lib/logger.ts';
import { drainOverlapped, type QueueSettings } from '../lib/loops.ts';
import type { Metrics } from '../lib/metrics.ts';
import { printableLine } from '../lib/text.ts';
import { type ClaimedMessage, claimMessages, type OutcomeRow, outcomeRow, recordOutcomes } from './message-rows.ts';
import type { Publisher, PublishOutcome } from './publishers.ts';

type PublishFailure = Exclude<PublishOutcome, { outcome: 'published' }>;

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
}

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
    ...overrides,
  };
}

export interface RelayDeps {
  db: Database;
  publisher: Publisher;
  clock: Clock;
  /** Makes this relay's id, written to `locked_by`. */
  newId: () => string;
  random: RandomSource;
  logger: Logger;
  settings: RelaySettings;
  /** Counts each publish outcome by topic (webhook_outbox_deliveries_total). */
  metrics?: Pick<Metrics, 'countOutbox'>;
}

export interface DrainSummary {
  claimed: number;
  published: number;
  /** Failed and rescheduled. */
  retried: number;
  dead: number;
  /** Claimed but not started (the lease or the budget would not cover the call): free again at once. */
  released: number;
  batches: number;
  stoppedBy: 'drained' | 'budget' | 'aborted';
  elapsedMs: number;
}

/** One drain at a time per relay (its lease owner is its id); run several relays for parallelism. */
export interface Relay {
  readonly id: string;
  drain(options?: { signal?: AbortSignal; budgetMs?: number }): Promise<DrainSummary>;
}

export function createRelay(deps: RelayDeps): Relay {
  const { db, publisher, clock, logger, settings } = deps;
  const id = deps.newId();
  const at = (ms: number) => new Date(ms).toISOString();

  /** The row a failed publish leaves: rescheduled with backoff, or dead. */
  function failedOutcome(message: ClaimedMessage, result: PublishFailure, dueBy: Date): OutcomeRow {
    const nowMs = clock();
    const attempts = message.attempts + 1;
    // Publishers word their failures themselves (a status, a system code, a broker's refusal), but a
    // broker's words arrive as they were sent: stored and logged as one bounded, escaped line.
    const lastError = printableLine(result.error, LAST_ERROR_MAX);
    const fields = {
      message_id: message.id,
      topic: message.topic,
      attempts,
      error: lastError,
      publisher: publisher.kind,
    };
    if (result.outcome === 'permanent' || attempts >= settings.maxAttempts) {
      logger.error('outbox message dead', { ...fields, alert: true });
      return outcomeRow(message.id, 'dead', { failed: 1, last_error: lastError });
    }
    const delayMs = retryDelayMs(settings.backoff, attempts, deps.random, result.retryAfterMs);
    logger.warn('outbox publish failed, will retry', { ...fields, delay_ms: delayMs });
    // Past this pass's cut-off even when the delay is 0 (jitter can draw it), so the retry waits for
    // the next pass rather than spending attempts in a tight loop.
    const availableMs = Math.max(nowMs + delayMs, dueBy.getTime() + 1);
    return outcomeRow(message.id, 'pending', { failed: 1, available_at: at(availableMs), last_error: lastError });
  }

  /**
   * Publishers classify their own failures; anything thrown is a bug or an environment problem worth
   * another try, and its class is all that is safe to keep: unlike a handler's failure (describeCause),
   * it comes from client libraries serialising the payload, whose messages can quote it or a URL.
   */
  const thrown = (error: unknown): PublishOutcome => ({
    outcome: 'retry',
    error: `publisher ${error instanceof Error ? error.name : typeof error}`,
  });

  async function drain(options: { signal?: AbortSignal; budgetMs?: number } = {}): Promise<DrainSummary> {
    const startedMs = clock();
    const summary = { claimed: 0, published: 0, retried: 0, dead: 0, released: 0 };
    // Only messages due when the pass began: one rescheduled during it waits for the next pass.
    const dueBy = new Date(startedMs);

    // A pipelining publisher takes whole batches at once: its publishes share one connection. Any
    // other is held to `concurrency` calls across the batches in flight.
    const pipelined = publisher.pipelined === true;
    const lane = pLimit(Math.max(1, settings.concurrency));

    /** Publishes a claimed batch and records its outcomes. */
    async function publishBatch(messages: readonly ClaimedMessage[], lease: Lease, deadlineMs: number): Promise<void> {
      const published: string[] = [];
      const others: OutcomeRow[] = [];
      // A pipelined batch's publishes start together, so they share one timeout.
      const batchSignal = pipelined ? AbortSignal.timeout(settings.timeoutMs) : undefined;
      const publishInLane = async (message: ClaimedMessage) => {
        const nowMs = clock();
        if (options.signal?.aborted || nowMs >= deadlineMs || !leaseCovers(lease, nowMs, settings.timeoutMs)) {
          // Not started, so nothing happened: give it back without counting an attempt.
          others.push(outcomeRow(message.id, 'pending'));
          summary.released += 1;
          return;
        }
        let result: PublishOutcome;
        try {
          result = await publisher.publish(message, batchSignal ?? AbortSignal.timeout(settings.timeoutMs));
        } catch (error) {
          result = thrown(error);
        }
        let counted: 'published' | 'retried' | 'dead' = 'published';
        if (result.outcome === 'published') published.push(message.id);
        else {
          const outcome = failedOutcome(message, result, dueBy);
          others.push(outcome);
          counted = outcome.status === 'dead' ? 'dead' : 'retried';
        }
        summary[counted] += 1;
        deps.metrics?.countOutbox(message.topic, counted);
      };
      await Promise.all(
        messages.map((message) => (pipelined ? publishInLane(message) : lane(() => publishInLane(message)))),
      );
      // The rows stay leased to us until this write, so nobody else can take them meanwhile.
      await recordOutcomes(db, id, { published, publishedAt: new Date(clock()), others });
    }

    const progress = await drainOverlapped({
      nowMs: clock,
      budgetMs: options.budgetMs ?? settings.budgetMs,
      signal: options.signal,
      inFlight: settings.batchesInFlight,
      batch: async (deadlineMs) => {
        const lease = takeLease(id, clock(), settings.leaseMs);
        const messages = await claimMessages(db, lease, dueBy, settings.batchSize);
        summary.claimed += messages.length;
        return { claimed: messages.length, limit: settings.batchSize, done: publishBatch(messages, lease, deadlineMs) };
      },
    });

    const result: DrainSummary = { ...summary, ...progress, elapsedMs: clock() - startedMs };
    if (result.claimed > 0) logger.info('outbox drained', { relay: id, ...result });
    return result;
  }

  return { id, drain };
}
