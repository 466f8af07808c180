// A bound on what outsiders can make us log: the first few lines of each kind per window, then a
// count. Kinds are bounded by the caller (a sender's name from the registry and a reason from a closed
// set), so the map stays small whatever is sent.

export interface SampledLine {
  /** Whether this occurrence gets its own line. */
  log: boolean;
  /** Occurrences left unlogged in the kind's previous window, to report once (0: nothing to report). */
  suppressedBefore: number;
}

export class LogSampler {
  readonly #windows = new Map<string, { startedAt: number; seen: number }>();

  constructor(
    private readonly perWindow: number,
    readonly windowMs: number,
    private readonly now: () => number,
  ) {}

  /** Counts one occurrence of `kind`. */
  sample(kind: string): SampledLine {
    const now = this.now();
    const window = this.#windows.get(kind);
    if (window === undefined || now - window.startedAt >= this.windowMs || now < window.startedAt) {
      const suppressedBefore = window === undefined ? 0 : Math.max(0, window.seen - this.perWindow);
      this.#windows.set(kind, { startedAt: now, seen: 1 });
      return { log: true, suppressedBefore };
    }
    window.seen += 1;
    return { log: window.seen <= this.perWindow, suppressedBefore: 0 };
  }
}
