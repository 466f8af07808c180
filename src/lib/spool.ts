// A bounded buffer of records written in batches outside the request that produced them (the
// delivery log, refused deliveries): the request only appends, and one write every so often carries
// what gathered since. When writes fall behind, the oldest records are dropped and counted, so a flood
// costs a fixed amount of memory. One flush at a time; a flush that fails loses its batch (reported
// through `onLost`), since these are records of what happened, never what makes an event applied.
//
// A spool may fold: a record that repeats the newest one waiting under the same key (the delivery
// log: a duplicate answered like the duplicate before it) is merged into it instead of taking a
// slot, so a replay flood of one thing costs one slot. Every step is O(1) per record: a Map finds
// the newest waiting record of a key, and dropping the oldest moves a start index (the array is
// compacted once that index has passed `capacity` records).

export interface SpoolFold<T> {
  /** The records that may fold together share a key; undefined: never folds. */
  key(record: T): string | undefined;
  /**
   * Merges `record` into `waiting`, the newest record of its key still waiting, and answers true;
   * answers false when it does not repeat it (`record` then takes a slot and becomes the newest).
   */
  merge(waiting: T, record: T): boolean;
}

export interface SpoolOptions<T, Target> {
  /** Most records held between flushes; beyond it the oldest are dropped. */
  capacity: number;
  /** Writes one batch, oldest first. */
  write(records: readonly T[], target: Target): Promise<void>;
  /** Folds repeats into the record they repeat while it waits; absent: every record takes a slot. */
  fold?: SpoolFold<T>;
  /** Told of every record lost, at once (a metric): dropped for room, or in a failed write. */
  countLost?(count: number, reason: 'overflow' | 'write_failed'): void;
  /**
   * Told how many records were lost and why (a log line). A failed write is told at once; records
   * dropped for room at most once per `lostReportMs`, with how many were dropped since the last time
   * (the first drop after a quiet interval at once, the rest at a later drop or flush).
   */
  onLost?(count: number, reason: 'overflow' | 'write_failed', error?: unknown): void;
  /** The shortest time between two reports of dropped records; 1000 unless told. */
  lostReportMs?: number;
  /** Milliseconds now, for the reports' interval; Date.now unless told (tests). */
  now?: () => number;
}

export class Spool<T, Target> {
  /** Waiting records, oldest first, from index #head (the slots before it were dropped). */
  #records: T[] = [];
  #head = 0;
  /** The newest waiting record of each fold key. */
  #newest = new Map<string, T>();
  #flushing: Promise<void> | undefined;
  /** Records dropped for room since the last report, and when that report was made. */
  #dropped = 0;
  #reportedAt = Number.NEGATIVE_INFINITY;

  constructor(private readonly options: SpoolOptions<T, Target>) {}

  get size(): number {
    return this.#records.length - this.#head;
  }

  add(record: T): void {
    const fold = this.options.fold;
    const key = fold?.key(record);
    if (fold !== undefined && key !== undefined) {
      const waiting = this.#newest.get(key);
      if (waiting !== undefined && fold.merge(waiting, record)) return;
      this.#newest.set(key, record);
    }
    this.#records.push(record);
    if (this.size > this.options.capacity) this.#dropOldest();
  }

  #dropOldest(): void {
    const oldest = this.#records[this.#head] as T;
    (this.#records as (T | undefined)[])[this.#head] = undefined;
    this.#head += 1;
    const key = this.options.fold?.key(oldest);
    if (key !== undefined && this.#newest.get(key) === oldest) this.#newest.delete(key);
    if (this.#head >= this.options.capacity) {
      this.#records = this.#records.slice(this.#head);
      this.#head = 0;
    }
    this.options.countLost?.(1, 'overflow');
    this.#dropped += 1;
    this.#reportDropped();
  }

  /** Reports the records dropped since the last report, unless that report is too recent. */
  #reportDropped(): void {
    if (this.#dropped === 0) return;
    const now = (this.options.now ?? Date.now)();
    if (now - this.#reportedAt < (this.options.lostReportMs ?? 1000)) return;
    const count = this.#dropped;
    this.#dropped = 0;
    this.#reportedAt = now;
    this.options.onLost?.(count, 'overflow');
  }

  /**
   * Writes everything held, in one batch; resolves when what was held when it was called is written
   * (or lost). Concurrent calls share the flush in progress, then run their own. Reports the records
   * dropped since the last report when the interval allows.
   */
  async flush(target: Target): Promise<void> {
    this.#reportDropped();
    while (this.#flushing !== undefined) await this.#flushing;
    if (this.size === 0) return;
    const batch = this.#head === 0 ? this.#records : this.#records.slice(this.#head);
    this.#records = [];
    this.#head = 0;
    this.#newest = new Map();
    this.#flushing = this.options.write(batch, target).then(
      () => {},
      (error: unknown) => {
        this.options.countLost?.(batch.length, 'write_failed');
        this.options.onLost?.(batch.length, 'write_failed', error);
      },
    );
    try {
      await this.#flushing;
    } finally {
      this.#flushing = undefined;
    }
  }
}
