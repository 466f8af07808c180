// The request's own deadline (HANDLER_DEADLINE_MS), kept below the providers' timeouts so we fail
// cleanly instead of being cut off mid-commit.

import type { Database, Transaction } from '../db/client.ts';
import { AppError } from '../errors.ts';

export interface Deadline {
  signal: AbortSignal;
  clear(): void;
}

export function startDeadline(milliseconds: number): Deadline {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new AppError('unavailable')), milliseconds);
  return { signal: controller.signal, clear: () => clearTimeout(timer) };
}

/**
 * Runs `work` in one transaction that never commits after the deadline. When the deadline passes
 * first, the caller is answered `unavailable` at once; the transaction, still blocked in some
 * statement, rolls back when that statement ends (the connection's statement_timeout bounds it).
 * Once COMMIT has been sent the answer waits for it, so a committed event is never reported as
 * unavailable.
 */
export function transactionBefore<T>(
  db: Database,
  signal: AbortSignal,
  work: (tx: Transaction) => Promise<T>,
): Promise<T> {
  let committing = false;
  const transaction = db.transaction(async (tx) => {
    signal.throwIfAborted();
    const result = await work(tx);
    signal.throwIfAborted();
    committing = true;
    return result;
  });
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => {
      if (!committing) reject(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    transaction.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}
