// What every broker publisher shares: one connection per publisher, opened on first use, reused by
// every publish, forgotten when the broker drops it so the next publish opens a new one, and closed on
// shutdown; the outcome shapes; a publish that settles when the relay's timeout fires; and the safe
// part of a client error (a code, never a message that could quote the URL and its password).
import { causeChain, errorCode, errorName } from '../../lib/errors.ts';
import type { PublishOutcome } from './publisher.ts';

export const retry = (error: string, retryAfterMs?: number): PublishOutcome =>
  retryAfterMs === undefined ? { outcome: 'retry', error } : { outcome: 'retry', error, retryAfterMs };

export const permanent = (error: string): PublishOutcome => ({ outcome: 'permanent', error });

/** The broker as a whole is out of reach: no attempt counted, the relay backs off as a whole. */
export const unavailable = (error: string): PublishOutcome => ({ outcome: 'unavailable', error });

/**
 * A publish's timeout: counted when the connection was up (the broker had the message and did not
 * answer for it), not when it was down or still opening (nobody could have answered).
 */
export const timedOut = (connected: boolean): PublishOutcome =>
  connected ? retry('timeout') : unavailable('timeout while disconnected');

/** The calls waiting on each signal, so a signal shared by a batch's publishes carries one listener. */
const waitingOn = new WeakMap<AbortSignal, Set<() => void>>();

/**
 * Calls `aborted` once `signal` aborts (never if it has already); answers the call that forgets it.
 * Cheaper than a listener per publish: EventTarget's add and remove are a measurable share of a
 * relay's CPU per message.
 */
export function whenAborted(signal: AbortSignal, aborted: () => void): () => void {
  let waiting = waitingOn.get(signal);
  if (waiting === undefined) {
    const forSignal = new Set<() => void>();
    waiting = forSignal;
    waitingOn.set(signal, forSignal);
    signal.addEventListener(
      'abort',
      () => {
        for (const call of forSignal) call();
        forSignal.clear();
      },
      { once: true },
    );
  }
  const calls = waiting;
  calls.add(aborted);
  return () => calls.delete(aborted);
}

/**
 * `work`'s outcome, or a timeout once `signal` aborts (the broker may still store it: same key),
 * counted or not as `connected` says at that moment (always counted without it).
 */
export function untilAborted(
  signal: AbortSignal,
  work: Promise<PublishOutcome>,
  connected: () => boolean = () => true,
): Promise<PublishOutcome> {
  if (signal.aborted) return Promise.resolve(timedOut(connected()));
  return new Promise((resolve) => {
    const forget = whenAborted(signal, () => resolve(timedOut(connected())));
    const settle = (outcome: PublishOutcome) => {
      forget();
      resolve(outcome);
    };
    work.then(settle, (error: unknown) => settle(retry(`publisher ${errorName(error)}`)));
  });
}

const SYSTEM_CODE = /^E[A-Z0-9_]{2,30}$/;

/** A socket error's code (ECONNREFUSED, ECONNRESET, ETIMEDOUT…) from the error or its causes. */
export function systemCode(error: unknown): string | undefined {
  return causeChain(error)
    .map(errorCode)
    .find((code) => code !== undefined && SYSTEM_CODE.test(code));
}

/**
 * One broker connection: opened on first use and shared by the publishes that wait for it; a failed
 * open is forgotten, so the next publish tries again; `forget` drops one the broker closed.
 */
export class ConnectionSlot<T> {
  #current: Promise<T> | undefined;
  /** What `#current` resolved to, so `forget` can tell whether the closed one is still the current one. */
  #open: T | undefined;
  #closed = false;

  constructor(
    private readonly open: () => Promise<T>,
    private readonly shut: (connection: T) => Promise<void>,
  ) {}

  get(): Promise<T> {
    if (this.#closed) return Promise.reject(new Error('the publisher is closed'));
    if (this.#current === undefined) {
      const opening = this.open();
      this.#current = opening;
      opening.then(
        (connection) => {
          if (this.#current === opening) this.#open = connection;
        },
        () => {
          if (this.#current === opening) this.#current = undefined;
        },
      );
    }
    return this.#current;
  }

  /** The open connection, when there is one: a publisher's fast path skips a promise per message. */
  ready(): T | undefined {
    return this.#closed ? undefined : this.#open;
  }

  /** `use` on the open connection at once (no promise hop per publish), else once one is open. */
  with<R>(use: (connection: T) => R | Promise<R>, failed: (error: unknown) => R): Promise<R> {
    const open = this.ready();
    return open === undefined ? this.get().then(use, failed) : Promise.resolve(use(open));
  }

  /** The broker closed `connection` (or it is unusable): the next `get` opens another. */
  forget(connection: T): void {
    if (this.#open !== connection) return;
    this.#open = undefined;
    this.#current = undefined;
  }

  /** Shutdown: closes the open connection, if any; later publishes fail instead of reconnecting. */
  async close(): Promise<void> {
    this.#closed = true;
    const current = this.#current;
    this.#current = undefined;
    this.#open = undefined;
    if (current === undefined) return;
    let connection: T;
    try {
      connection = await current;
    } catch {
      return;
    }
    await this.shut(connection);
  }
}
