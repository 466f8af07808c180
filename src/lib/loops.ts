// Draining a queue table in batches, shared by the outbox relay and the async inbox worker: the loop
// that goes on while batches come back full and stops at a time budget (a Workers cron invocation
// has one), and bounded concurrency inside a batch, and the settings every such leased queue is tuned
// by. Runtime-neutral: no timers, no Node APIs.
import type { BackoffPolicy } from './backoff.ts';

/** What a leased-queue drainer (the outbox relay, the inbox worker) is tuned by, besides its call timeout. */
export interface QueueSettings {
  /** Failures after which an item is given up on (dead / dead_letter). */
  maxAttempts: number;
  backoff: BackoffPolicy;
  leaseMs: number;
  batchSize: number;
  /** A pass stops claiming (and starting work) after this long. */
  budgetMs: number;
}

export interface BatchProgress {
  /** Rows the batch claimed; a batch that claimed its full limit suggests more are waiting. */
  claimed: number;
  limit: number;
  /** The batch waited until the deadline or the abort and claimed nothing: it does not count. */
  notStarted?: true;
}

export interface DrainLoop {
  nowMs: () => number;
  budgetMs: number;
  signal?: AbortSignal | undefined;
  /** Claims and processes one batch; `deadlineMs` is when it must stop starting new work. */
  batch(deadlineMs: number): Promise<BatchProgress>;
}

export interface DrainProgress {
  batches: number;
  stoppedBy: 'drained' | 'budget' | 'aborted';
}

/** Runs batches while they come back full, until the time budget is spent or the signal aborts. */
export async function drainBatches(loop: DrainLoop): Promise<DrainProgress> {
  const deadlineMs = loop.nowMs() + loop.budgetMs;
  let batches = 0;
  for (;;) {
    if (loop.signal?.aborted) return { batches, stoppedBy: 'aborted' };
    if (loop.nowMs() >= deadlineMs) return { batches, stoppedBy: 'budget' };
    const { claimed, limit, notStarted } = await loop.batch(deadlineMs);
    // The checks above then say why the loop stops.
    if (notStarted) continue;
    batches += 1;
    if (claimed < limit) return { batches, stoppedBy: 'drained' };
  }
}

/**
 * Runs `work` over `items` with at most `concurrency` calls in flight, in order of starting. Each
 * call's failure is the caller's to catch: one rejection rejects the whole run.
 */
export async function forEachBounded<T>(
  items: readonly T[],
  concurrency: number,
  work: (item: T, index: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      const index = next++;
      await work(items[index] as T, index);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(concurrency, items.length)) }, lane));
}
