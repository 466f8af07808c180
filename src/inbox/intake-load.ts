// How busy the intake is, as the in-process async worker, the outbox relay and the bulk jobs see it
// (the relay and the jobs in both modes: a message or a job item can wait, a sender cannot). In async mode the point of the
// queue is to acknowledge a burst at the intake's full rate and apply it afterwards: a worker that
// applied at full speed during the burst would take CPU and database time from the requests, which
// then queue behind it. So the worker defers to a saturated intake (on average twice as many
// deliveries in flight as the request pool has connections), for a bounded time per batch, so that
// a backlog still moves under sustained overload (where the backlog gate, not the worker, is what
// sheds load).
// Runtime-neutral; only the Node entry shares one between its app and its worker (on Workers the
// cron runs in an invocation of its own, which sees no requests).

export class IntakeLoad {
  #inFlight = 0;
  /** Deliveries in flight integrated over time (count × ms) since the last look. */
  #area = 0;
  #changedAt: number;
  #lookedAt: number;

  /**
   * Saturated at twice the request pool: a queue for connections as long as the pool itself. Nearly
   * all of a delivery's time in async mode is spent waiting for and holding a connection (measured:
   * 95% of it), so the mean in flight is the pool's queue plus its busy connections. A load the
   * service carries keeps it near or below the pool size (4 to 6 of 6 at sync mode's rate, and up to
   * 10 while the worker competes for the cores), while a burst beyond the intake's capacity fills it
   * to the senders' concurrency (30 of 32 in the benchmark). At the pool size itself the worker took
   * its own competition for the CPU as saturation, deferred, and fell behind a load it could carry.
   */
  static forRequestPool(connections: number, now?: () => number): IntakeLoad {
    return new IntakeLoad(2 * connections, now);
  }

  /**
   * `saturatedAt`: mean deliveries in flight from which the intake counts as saturated.
   * `now`: a monotonic millisecond clock.
   */
  constructor(
    readonly saturatedAt: number,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.#changedAt = now();
    this.#lookedAt = this.#changedAt;
  }

  /**
   * An authentic, valid delivery starts its database work; pair with `leave` in a finally. Not
   * earlier: an upload still arriving or unsigned is work nobody may make the worker wait for.
   */
  enter(): void {
    this.#account();
    this.#inFlight += 1;
  }

  leave(): void {
    this.#account();
    this.#inFlight -= 1;
  }

  get inFlight(): number {
    return this.#inFlight;
  }

  /**
   * The mean number of deliveries in flight since the last look: arrival rate times time in the
   * service (Little's law), which grows past the pool size only as requests queue for connections.
   * A mean, not the current count: a closed-loop burst dips each time one request ends before the next
   * is read, and an open-loop load at half the capacity still peaks above the pool now and then.
   */
  meanInFlightSinceLastLook(): number {
    this.#account();
    const span = this.#changedAt - this.#lookedAt;
    const mean = span > 0 ? this.#area / span : this.#inFlight;
    this.#area = 0;
    this.#lookedAt = this.#changedAt;
    return mean;
  }

  saturatedSinceLastLook(): boolean {
    return this.meanInFlightSinceLastLook() >= this.saturatedAt;
  }

  #account(): void {
    const now = this.now();
    this.#area += this.#inFlight * (now - this.#changedAt);
    this.#changedAt = now;
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
