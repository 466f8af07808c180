// How busy the intake is, as the in-process async worker sees it. In async mode the point of the
// queue is to acknowledge a burst at the intake's full rate and apply it afterwards: a worker that
// applied at full speed during the burst would take CPU and database time from the requests, which
// then queue behind it. So the worker defers to a saturated intake (more deliveries in flight than
// the request pool has connections), for a bounded time per batch, so that a backlog still moves
// under sustained overload (where the backlog gate, not the worker, is what sheds load).
// Runtime-neutral; only the Node entry shares one between its app and its worker (on Workers the
// cron runs in an invocation of its own, which sees no requests).

export class IntakeLoad {
  #inFlight = 0;
  #peak = 0;

  /** `saturatedAt`: deliveries in flight at which requests start queueing (the request pool's size). */
  constructor(readonly saturatedAt: number) {}

  /** A delivery started; pair with `leave` in a finally. */
  enter(): void {
    this.#inFlight += 1;
    if (this.#inFlight > this.#peak) this.#peak = this.#inFlight;
  }

  leave(): void {
    this.#inFlight -= 1;
  }

  get inFlight(): number {
    return this.#inFlight;
  }

  /**
   * Whether the intake was saturated at any moment since the last call. The peak, not the current
   * count: under a closed-loop burst the count dips each time a request ends and the next is not yet
   * read, and a worker that woke on every dip would not be deferring at all.
   */
  saturatedSinceLastLook(): boolean {
    const peak = this.#peak;
    this.#peak = this.#inFlight;
    return peak >= this.saturatedAt;
  }
}

export interface DeferOptions {
  /** Longest wait: past it the worker goes ahead (one batch) even if the intake is still saturated. */
  maxWaitMs: number;
  /** How often the load is looked at while waiting. */
  pollMs: number;
  signal?: AbortSignal | undefined;
}

/** Waits while the intake stays saturated, up to `maxWaitMs`; answers how long it waited. */
export async function deferToIntake(load: IntakeLoad, options: DeferOptions): Promise<number> {
  const started = performance.now();
  // The first look covers the time since the previous batch: saturated then means saturated now.
  while (load.saturatedSinceLastLook() && !options.signal?.aborted) {
    const left = options.maxWaitMs - (performance.now() - started);
    if (left <= 0) break;
    await new Promise((resolve) => setTimeout(resolve, Math.min(options.pollMs, left)));
  }
  return Math.round(performance.now() - started);
}
