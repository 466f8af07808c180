// A bounded buffer of records written in batches outside the request that produced them (the
// delivery log, refused deliveries): the request only appends, and one write every so often carries
// what gathered since. When writes fall behind, the oldest records are dropped and counted, so a flood
// costs a fixed amount of memory. One flush at a time; a flush that fails loses its batch (reported
// through `onLost`), since these are records of what happened, never what makes an event applied.

export interface SpoolOptions<T, Target> {
  /** Most records held between flushes; beyond it the oldest are dropped. */
  capacity: number;
  /** Writes one batch, oldest first. */
  write(records: readonly T[], target: Target): Promise<void>;
  /** Told how many records were lost (dropped for room, or in a failed write) and why. */
  onLost?(count: number, reason: 'overflow' | 'write_failed', error?: unknown): void;
}

export class Spool<T, Target> {
  #records: T[] = [];
  #flushing: Promise<void> | undefined;

  constructor(private readonly options: SpoolOptions<T, Target>) {}

  get size(): number {
    return this.#records.length;
  }

  add(record: T): void {
    this.#records.push(record);
    const over = this.#records.length - this.options.capacity;
    if (over > 0) {
      this.#records.splice(0, over);
      this.options.onLost?.(over, 'overflow');
    }
  }

  /**
   * Writes everything held, in batches of at most `capacity`; resolves when what was held when it was
   * called is written (or lost). Concurrent calls share the flush in progress, then run their own.
   */
  async flush(target: Target): Promise<void> {
    while (this.#flushing !== undefined) await this.#flushing;
    if (this.#records.length === 0) return;
    const batch = this.#records;
    this.#records = [];
    this.#flushing = this.options.write(batch, target).then(
      () => {},
      (error: unknown) => this.options.onLost?.(batch.length, 'write_failed', error),
    );
    try {
      await this.#flushing;
    } finally {
      this.#flushing = undefined;
    }
  }
}
