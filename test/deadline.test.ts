// The request's deadline (src/inbox/deadline.ts) on its own, on vitest's fake timers: when it
// expires, what it answers (503, reason `deadline_passed`), a race it ends unless the outcome is
// decided, and a transaction that never commits after it, yet is waited for once COMMIT was sent.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Database, Transaction } from '../src/db/client.ts';
import { Deadline, transactionBefore } from '../src/inbox/deadline.ts';
import { AppError } from '../src/lib/errors.ts';

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
});
afterEach(() => {
  vi.useRealTimers();
});

/** What a promise came to: its value, the reason it was refused with, or 'pending'. */
function watch<T>(promise: Promise<T>): () => string {
  let state = 'pending';
  promise.then(
    (value) => {
      state = `resolved ${String(value)}`;
    },
    (error: unknown) => {
      state =
        error instanceof AppError ? `refused ${error.code} ${String(error.why.reason)}` : `threw ${String(error)}`;
    },
  );
  return () => state;
}

/** A promise and the function that resolves it. */
function gate<T>(): { promise: Promise<T>; open(value: T): void } {
  let open: (value: T) => void = () => {};
  const promise = new Promise<T>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

describe('Deadline', () => {
  it('expires at its time, not before, answering 503 deadline_passed from then on', async () => {
    const deadline = new Deadline(100);
    expect(deadline.expired).toBe(false);
    expect(deadline.remainingMs).toBe(100);
    expect(() => deadline.throwIfExpired()).not.toThrow();

    await vi.advanceTimersByTimeAsync(99);
    expect(deadline.expired).toBe(false);
    expect(deadline.remainingMs).toBe(1);

    await vi.advanceTimersByTimeAsync(1);
    expect(deadline.expired).toBe(true);
    expect(deadline.remainingMs).toBe(0);
    const thrown = (() => {
      try {
        deadline.throwIfExpired();
      } catch (error) {
        return error;
      }
      return undefined;
    })();
    expect(thrown).toBeInstanceOf(AppError);
    expect(thrown).toMatchObject({ code: 'unavailable', why: { reason: 'deadline_passed' } });
    deadline.clear();
  });

  it('ends a race at once when it expires, unless the outcome is decided; a race begun late ends at once', async () => {
    const deadline = new Deadline(100);
    const work = gate<string>();
    const undecided = watch(deadline.race(work.promise));
    const decided = watch(deadline.race(work.promise, () => true));
    const done = watch(deadline.race(Promise.resolve('early')));
    await vi.advanceTimersByTimeAsync(100);
    expect(undecided()).toBe('refused unavailable deadline_passed');
    expect(decided()).toBe('pending');
    expect(done()).toBe('resolved early');

    work.open('committed');
    await vi.advanceTimersByTimeAsync(0);
    expect(decided()).toBe('resolved committed');

    const late = watch(deadline.race(gate<string>().promise));
    await vi.advanceTimersByTimeAsync(0);
    expect(late()).toBe('refused unavailable deadline_passed');
    deadline.clear();
  });

  it('once cleared, never expires', async () => {
    const deadline = new Deadline(100);
    const race = watch(deadline.race(gate<string>().promise));
    deadline.clear();
    await vi.advanceTimersByTimeAsync(1000);
    expect(deadline.expired).toBe(false);
    expect(race()).toBe('pending');
  });
});

describe('transactionBefore', () => {
  /** A stand-in for the database: runs the work, then holds COMMIT until `commit` opens. */
  function fakeDatabase() {
    const commit = gate<void>();
    let outcome: () => string = () => 'not started';
    const db = {
      transaction<T>(work: (tx: Transaction) => Promise<T>): Promise<T> {
        const run = (async () => {
          const result = await work({} as Transaction);
          await commit.promise;
          return result;
        })();
        outcome = watch(run);
        return run;
      },
    } as unknown as Database;
    return { db, commit, transaction: () => outcome() };
  }

  it('answers at once when the deadline passes during the work, and never commits it', async () => {
    const { db, commit, transaction } = fakeDatabase();
    const deadline = new Deadline(100);
    const work = gate<string>();
    const answer = watch(transactionBefore(db, deadline, () => work.promise));
    commit.open();
    await vi.advanceTimersByTimeAsync(100);
    expect(answer()).toBe('refused unavailable deadline_passed');
    work.open('applied');
    await vi.advanceTimersByTimeAsync(0);
    expect(transaction()).toBe('refused unavailable deadline_passed');
  });

  it('waits for a COMMIT that was sent before the deadline passed', async () => {
    const { db, commit, transaction } = fakeDatabase();
    const deadline = new Deadline(100);
    const answer = watch(transactionBefore(db, deadline, async () => 'applied'));
    await vi.advanceTimersByTimeAsync(100);
    expect(answer()).toBe('pending');
    commit.open();
    await vi.advanceTimersByTimeAsync(0);
    expect(answer()).toBe('resolved applied');
    expect(transaction()).toBe('resolved applied');
  });

  it('starts no work once the deadline has passed', async () => {
    const { db, commit } = fakeDatabase();
    const deadline = new Deadline(100);
    await vi.advanceTimersByTimeAsync(100);
    let started = false;
    commit.open();
    const answer = watch(
      transactionBefore(db, deadline, async () => {
        started = true;
        return 'applied';
      }),
    );
    await vi.advanceTimersByTimeAsync(0);
    expect(answer()).toBe('refused unavailable deadline_passed');
    expect(started).toBe(false);
  });
});
