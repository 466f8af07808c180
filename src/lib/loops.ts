// Draining a queue table in batches, shared by the outbox relay and the async inbox worker: the loop
// that goes on while batches come back full and stops at a time budget (a Workers cron invocation
// has one), or at a number of batches (a bounded slice), bounded concurrency inside a batch, the
// settings every such leased queue is tuned by, and the one pause a loop may take between batches.
// Runtime-neutral: no Node APIs (p-limit is plain ESM; setTimeout is a Web API Workers have too).
import pLimit from 'p-limit';
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
  /**
   * The batch did no work: it waited until the deadline or the abort, or found what it took no longer
   * its to do. It does not count, and the loop looks again (the deadline and the signal first).
   */
  notStarted?: true;
}

export interface DrainLoop {
  nowMs: () => number;
  budgetMs: number;
  signal?: AbortSignal | undefined;
  /** Claims and processes one batch; `deadlineMs` is when it must stop starting new work. */
  batch(deadlineMs: number): Promise<BatchProgress>;
}

/** Why a pass over a queue ended: a batch came back short, its time budget was spent, or its signal aborted. */
export type StopReason = 'drained' | 'budget' | 'aborted';

export interface DrainProgress {
  batches: number;
  stoppedBy: StopReason;
}

/** A pass that may also stop after a number of batches (a bounded slice of a longer work). */
export interface SliceLoop extends DrainLoop {
  maxBatches?: number | undefined;
}

/** Why a slice ended: as a pass, or its batch count was spent. */
export type SliceStopReason = StopReason | 'batches';

/** Runs batches while they come back full, until the time budget or the batch count is spent or the signal aborts. */
export async function drainSlice(loop: SliceLoop): Promise<{ batches: number; stoppedBy: SliceStopReason }> {
  const deadlineMs = loop.nowMs() + loop.budgetMs;
  let batches = 0;
  for (;;) {
    if (loop.signal?.aborted) return { batches, stoppedBy: 'aborted' };
    if (loop.nowMs() >= deadlineMs) return { batches, stoppedBy: 'budget' };
    if (loop.maxBatches !== undefined && batches >= loop.maxBatches) return { batches, stoppedBy: 'batches' };
    const { claimed, limit, notStarted } = await loop.batch(deadlineMs);
    // The checks above then say why the loop stops.
    if (notStarted) continue;
    batches += 1;
    if (claimed < limit) return { batches, stoppedBy: 'drained' };
  }
}

/** Runs batches while they come back full, until the time budget is spent or the signal aborts. */
export async function drainBatches(loop: DrainLoop): Promise<DrainProgress> {
  const { batches, stoppedBy } = await drainSlice(loop);
  // Without a batch count a pass never stops at one.
  return { batches, stoppedBy: stoppedBy === 'batches' ? 'drained' : stoppedBy };
}

/** Waits `ms`, or less when the signal aborts first (then at once). */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    if (ms <= 0 || signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done);
  });
}

/** One claimed batch whose work goes on while the next batches are claimed. */
export interface OverlappedBatch extends BatchProgress {
  /** The batch's work (publish, then record); a rejection stops the drain. */
  done: Promise<void>;
}

export interface OverlappedDrainLoop extends Omit<DrainLoop, 'batch'> {
  /** Batches whose work may run at once; 1 is `drainBatches`. */
  inFlight: number;
  /** Claims one batch and starts its work without waiting for it. */
  batch(deadlineMs: number): Promise<OverlappedBatch>;
}

/**
 * `drainBatches` with the next batch claimed while earlier ones are still being worked on, at most
 * `inFlight` at once: the database claims while the target publishes, instead of each waiting for the
 * other. Waits for every batch it started, even when one fails or a claim throws; then the first
 * failure is thrown.
 */
export async function drainOverlapped(loop: OverlappedDrainLoop): Promise<DrainProgress> {
  const deadlineMs = loop.nowMs() + loop.budgetMs;
  const running = new Set<Promise<void>>();
  let failed: { error: unknown } | undefined;
  let batches = 0;
  let stoppedBy: StopReason | undefined;
  try {
    while (stoppedBy === undefined) {
      while (running.size >= Math.max(1, loop.inFlight) && failed === undefined) await Promise.race(running);
      if (failed !== undefined) break;
      if (loop.signal?.aborted) stoppedBy = 'aborted';
      else if (loop.nowMs() >= deadlineMs) stoppedBy = 'budget';
      else {
        const { claimed, limit, notStarted, done } = await loop.batch(deadlineMs);
        const settled: Promise<void> = done
          .catch((error: unknown) => {
            failed ??= { error };
          })
          .finally(() => running.delete(settled));
        running.add(settled);
        if (notStarted) continue;
        batches += 1;
        if (claimed < limit) stoppedBy = 'drained';
      }
    }
  } finally {
    await Promise.all(running);
  }
  if (failed !== undefined) throw failed.error;
  return { batches, stoppedBy: stoppedBy ?? 'drained' };
}

/**
 * When an item that failed in a pass may be tried again: at `wantedMs`, but always past the pass's
 * cut-off (`dueBy`, when it began), even when the delay is 0 (jitter can draw it), so the retry waits
 * for a later pass rather than being claimed again by this one and spending attempts in a tight loop.
 */
export function retryAfterPass(dueBy: Date, wantedMs: number): number {
  return Math.max(wantedMs, dueBy.getTime() + 1);
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
  const limit = pLimit(Math.max(1, concurrency));
  await Promise.all(items.map((item, index) => limit(() => work(item, index))));
}
