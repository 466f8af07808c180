// The request's own deadline (HANDLER_DEADLINE_MS), kept below the senders' timeouts so we fail
// cleanly instead of being cut off mid-commit. A plain timer and a flag: an AbortController with
// listeners per request showed up in the intake profile for no extra benefit.
import type { Database, Transaction } from '../db/client.ts';
import { AppError } from '../lib/errors.ts';

/** The 503 of a delivery whose time ran out (its reason is what the refused-deliveries log records). */
const deadlinePassed = () => new AppError('unavailable', { why: { reason: 'deadline_passed' } });

export class Deadline {
  #expired = false;
  readonly #onExpire = new Set<() => void>();
  readonly #timer: ReturnType<typeof setTimeout>;
  /** When the timer fires, on the same monotonic clock as timers (not the injectable wall clock). */
  readonly #endsAt: number;

  constructor(milliseconds: number) {
    this.#endsAt = performance.now() + milliseconds;
    this.#timer = setTimeout(() => {
      this.#expired = true;
      for (const listener of this.#onExpire) listener();
    }, milliseconds);
  }

  /** Whether the delivery has been (or is being) answered 503 for lack of time. */
  get expired(): boolean {
    return this.#expired;
  }

  /** Milliseconds left before the delivery is answered 503; 0 once expired. */
  get remainingMs(): number {
    return this.#expired ? 0 : Math.max(0, Math.floor(this.#endsAt - performance.now()));
  }

  throwIfExpired(): void {
    if (this.#expired) throw deadlinePassed();
  }

  /**
   * Resolves with `work`, or rejects `unavailable` as soon as the deadline passes, unless `decided()`
   * says the outcome can no longer change (COMMIT was sent): then the answer waits for it, so a
   * committed event is never reported as unavailable. Races may nest (the group committer's, then
   * a delivery's own transaction when its batch fell back to one at a time).
   */
  // Stryker disable next-line ArrowFunction: `() => undefined` is as falsy as `() => false`
  race<T>(work: Promise<T>, decided: () => boolean = () => false): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const expire = () => {
        if (!decided()) reject(deadlinePassed());
      };
      this.#onExpire.add(expire);
      // Stryker disable next-line ArrowFunction: once `work` settled the race, a later reject changes nothing; the delete only frees the listener
      work.then(resolve, reject).finally(() => this.#onExpire.delete(expire));
      if (this.#expired) expire();
    });
  }

  clear(): void {
    clearTimeout(this.#timer);
    // Stryker disable next-line CallExpression: with the timer cleared no listener is called again; this only frees them
    this.#onExpire.clear();
  }
}

/**
 * Runs `work` in one transaction that never commits after the deadline. When the deadline passes
 * first, the caller is answered `unavailable` at once; the transaction, still blocked in some
 * statement, rolls back when that statement ends (the connection's statement_timeout bounds it).
 */
export function transactionBefore<T>(
  db: Database,
  deadline: Deadline,
  work: (tx: Transaction) => Promise<T>,
): Promise<T> {
  let committing = false;
  const transaction = db.transaction(async (tx) => {
    deadline.throwIfExpired();
    const result = await work(tx);
    deadline.throwIfExpired();
    committing = true;
    return result;
  });
  return deadline.race(transaction, () => committing);
}
