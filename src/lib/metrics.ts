// Prometheus metrics: counters and a latency histogram kept in this process (per isolate on
// Workers), and gauges read from the database at scrape time. Labels are bounded by construction:
// senders from the registry, event types from the handler map (else `other`), outbox topics (named
// by the code's handlers, capped), never an event id. Written here rather than with prom-client,
// which needs Node's runtime and would not run in workerd; the Node entry attaches prom-client's
// process metrics as an extra source (`attach`). The latency histogram is also kept per minute for a
// day, so the dashboard can draw p50/p99 over time.
import { type RejectionReason, rejectionClass } from './rejection-reasons.ts';

export type EventOutcome =
  | 'accepted'
  | 'duplicate'
  | 'rejected'
  | 'failed'
  | 'retried'
  | 'parked'
  | 'ignored'
  | 'dead_letter';

export interface GaugeSample {
  name: string;
  help: string;
  labels?: Readonly<Record<string, string>>;
  value: number;
}

/** What the relay did with one message: the outbox counters' `outcome` label. */
export type PublishOutcome = 'published' | 'retried' | 'dead';

/** An operator replay's result (the event's status after it, or `not_applied`), or a retry's. */
export type ReplayOutcome = 'completed' | 'ignored' | 'failed' | 'parked' | 'dead_letter' | 'not_applied';
export type RetryOutcome = 'retried' | 'skipped';

const LATENCY_BUCKETS_SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10] as const;

/** Distinct topics kept as label values; more than this many is a bug in a handler, counted as `other`. */
const MAX_TOPICS = 50;
const MINUTE_MS = 60_000;
/** Minutes of per-minute latency kept for the dashboard's charts. */
const LATENCY_HISTORY_MINUTES = 24 * 60;

/** Quantiles of one time bucket, estimated from the histogram as Prometheus's histogram_quantile does. */
export interface LatencyQuantiles {
  count: number;
  p50: number;
  p99: number;
}

function labelText(labels: Readonly<Record<string, string>>): string {
  const parts = Object.entries(labels).map(
    ([key, value]) => `${key}="${value.replaceAll('\\', '\\\\').replaceAll('"', '\\"').replaceAll('\n', '\\n')}"`,
  );
  return parts.length === 0 ? '' : `{${parts.join(',')}}`;
}

/** The label names of the counters written on every delivery and every publish (Metrics#labels). */
const EVENT_LABELS = ['provider', 'event_type', 'outcome'] as const;
const REPEATED_LABELS = ['provider'] as const;
const OUTBOX_LABELS = ['topic', 'outcome', 'destination'] as const;

/** Deliveries per intake transaction (group commit). */
const BATCH_SIZE_BUCKETS = [1, 2, 4, 8, 16, 32, 64, 128, 256] as const;

interface Histogram {
  buckets: number[];
  sum: number;
  count: number;
}

const emptyHistogram = (bounds: readonly number[]): Histogram => ({ buckets: bounds.map(() => 0), sum: 0, count: 0 });

function observeInto(histogram: Histogram, bounds: readonly number[], value: number): void {
  bounds.forEach((bound, i) => {
    if (value <= bound) histogram.buckets[i] = (histogram.buckets[i] ?? 0) + 1;
  });
  histogram.sum += value;
  histogram.count += 1;
}

function histogramLines(
  name: string,
  labels: Readonly<Record<string, string>>,
  bounds: readonly number[],
  histogram: Histogram,
): string[] {
  return [
    ...bounds.map(
      (bound, i) => `${name}_bucket${labelText({ ...labels, le: String(bound) })} ${histogram.buckets[i] ?? 0}`,
    ),
    `${name}_bucket${labelText({ ...labels, le: '+Inf' })} ${histogram.count}`,
    `${name}_sum${labelText(labels)} ${histogram.sum}`,
    `${name}_count${labelText(labels)} ${histogram.count}`,
  ];
}

/** The q-quantile of a cumulative histogram, linear within the bucket that holds it (histogram_quantile). */
function quantile(histogram: Histogram, bounds: readonly number[], q: number): number {
  const rank = q * histogram.count;
  let lower = 0;
  let below = 0;
  for (let i = 0; i < bounds.length; i++) {
    const upper = bounds[i] ?? 0;
    const cumulative = histogram.buckets[i] ?? 0;
    if (cumulative >= rank) {
      const inBucket = cumulative - below;
      return inBucket === 0 ? upper : lower + ((upper - lower) * (rank - below)) / inBucket;
    }
    lower = upper;
    below = cumulative;
  }
  // Above the largest bound: that bound is all a histogram can say.
  return bounds[bounds.length - 1] ?? 0;
}

/** Label bounds: every provider name, each with the event types its handler map names. */
export function labelBounds(
  providerNames: Iterable<string>,
  handlers: Readonly<Record<string, Readonly<Record<string, unknown>>>>,
): ReadonlyMap<string, ReadonlySet<string>> {
  return new Map([...providerNames].map((name) => [name, new Set(Object.keys(handlers[name] ?? {}))]));
}

export class Metrics {
  readonly #events = new Map<string, number>();
  readonly #rejections = new Map<string, number>();
  readonly #repeatedDeliveries = new Map<string, number>();
  readonly #latency = new Map<string, Histogram>();
  /** All senders' latencies by minute (ms since the epoch / 60000), for the last day. */
  readonly #latencyByMinute = new Map<number, Histogram>();
  readonly #publishes = new Map<string, number>();
  readonly #topics = new Set<string>();
  readonly #replays = new Map<string, number>();
  readonly #retries = new Map<string, number>();
  readonly #sources: Array<() => Promise<string>> = [];
  readonly #batchSizes = emptyHistogram(BATCH_SIZE_BUCKETS);
  readonly #recordsLost = new Map<string, number>();
  /**
   * Label texts already made, by their values joined: a delivery's counts would otherwise escape and
   * join the same few strings again each time. Bounded as the label values are.
   */
  readonly #labelTexts = new Map<string, string>();

  constructor(
    /** Known provider names and, per provider, the event types that may appear as label values. */
    private readonly knownTypes: ReadonlyMap<string, ReadonlySet<string>>,
    private readonly clock: () => number = Date.now,
  ) {}

  /** Adds exposition text from elsewhere (the Node entry's process metrics) to every scrape. */
  attach(source: () => Promise<string>): void {
    this.#sources.push(source);
  }

  /** labelText for `names` (fixed per call site) and these bounded `values`, made once per distinct values. */
  #labels(names: readonly string[], ...values: string[]): string {
    // The first name tells the counters apart: the same values under other names are another text.
    const key = `${names[0]}\u0000${values.join('\u0000')}`;
    let text = this.#labelTexts.get(key);
    if (text === undefined) {
      text = labelText(Object.fromEntries(names.map((name, index) => [name, values[index] ?? ''])));
      this.#labelTexts.set(key, text);
    }
    return text;
  }

  #provider(provider: string): string {
    return this.knownTypes.has(provider) ? provider : 'other';
  }

  #eventType(provider: string, eventType: string): string {
    return this.knownTypes.get(provider)?.has(eventType) === true ? eventType : 'other';
  }

  countEvent(provider: string, eventType: string, outcome: EventOutcome): void {
    const key = this.#labels(EVENT_LABELS, this.#provider(provider), this.#eventType(provider, eventType), outcome);
    this.#events.set(key, (this.#events.get(key) ?? 0) + 1);
  }

  /** Counted under the reason's class, the values the `reason` label has always had (rejection-reasons.ts). */
  countRejection(provider: string, reason: RejectionReason): void {
    const key = labelText({ provider: this.#provider(provider), reason: rejectionClass(reason) });
    this.#rejections.set(key, (this.#rejections.get(key) ?? 0) + 1);
  }

  /** A copy of a delivery answered in full a short while ago, answered again without reading it. */
  countRepeatedDelivery(provider: string): void {
    const key = this.#labels(REPEATED_LABELS, this.#provider(provider));
    this.#repeatedDeliveries.set(key, (this.#repeatedDeliveries.get(key) ?? 0) + 1);
  }

  observeProcessing(provider: string, seconds: number): void {
    const key = this.#provider(provider);
    let histogram = this.#latency.get(key);
    if (histogram === undefined) {
      histogram = emptyHistogram(LATENCY_BUCKETS_SECONDS);
      this.#latency.set(key, histogram);
    }
    observeInto(histogram, LATENCY_BUCKETS_SECONDS, seconds);

    const minute = Math.floor(this.clock() / MINUTE_MS);
    let perMinute = this.#latencyByMinute.get(minute);
    if (perMinute === undefined) {
      perMinute = emptyHistogram(LATENCY_BUCKETS_SECONDS);
      this.#latencyByMinute.set(minute, perMinute);
      // A new minute began: forget the one that fell out of the day (at most one per minute).
      for (const old of this.#latencyByMinute.keys()) {
        if (old <= minute - LATENCY_HISTORY_MINUTES) this.#latencyByMinute.delete(old);
      }
    }
    observeInto(perMinute, LATENCY_BUCKETS_SECONDS, seconds);
  }

  /**
   * p50 and p99 of request times in each of `buckets` buckets of `bucketMs` (whole minutes) from
   * `fromMs`; null where nothing was observed. This process's requests only.
   */
  latencyQuantiles(window: { fromMs: number; bucketMs: number; buckets: number }): Array<LatencyQuantiles | null> {
    const minutesPerBucket = Math.max(1, Math.round(window.bucketMs / MINUTE_MS));
    const firstMinute = Math.floor(window.fromMs / MINUTE_MS);
    return Array.from({ length: window.buckets }, (_, index) => {
      const merged = emptyHistogram(LATENCY_BUCKETS_SECONDS);
      for (let m = 0; m < minutesPerBucket; m++) {
        const minute = this.#latencyByMinute.get(firstMinute + index * minutesPerBucket + m);
        if (minute === undefined) continue;
        minute.buckets.forEach((count, i) => {
          merged.buckets[i] = (merged.buckets[i] ?? 0) + count;
        });
        merged.count += minute.count;
        merged.sum += minute.sum;
      }
      return merged.count === 0
        ? null
        : {
            count: merged.count,
            p50: quantile(merged, LATENCY_BUCKETS_SECONDS, 0.5),
            p99: quantile(merged, LATENCY_BUCKETS_SECONDS, 0.99),
          };
    });
  }

  /** `destination` is a configured name (each relay publishes to one), so its values are bounded too. */
  countPublish(topic: string, outcome: PublishOutcome, destination: string): void {
    if (!this.#topics.has(topic) && this.#topics.size < MAX_TOPICS) this.#topics.add(topic);
    const key = this.#labels(OUTBOX_LABELS, this.#topics.has(topic) ? topic : 'other', outcome, destination);
    this.#publishes.set(key, (this.#publishes.get(key) ?? 0) + 1);
  }

  countReplay(outcome: ReplayOutcome): void {
    const key = labelText({ outcome });
    this.#replays.set(key, (this.#replays.get(key) ?? 0) + 1);
  }

  countRetry(outcome: RetryOutcome): void {
    const key = labelText({ outcome });
    this.#retries.set(key, (this.#retries.get(key) ?? 0) + 1);
  }

  /** Records a spool (lib/spool.ts) dropped for room or lost in a failed write; `spool` is a fixed name. */
  countRecordsLost(spool: string, reason: 'overflow' | 'write_failed', count: number): void {
    const key = labelText({ spool, reason });
    this.#recordsLost.set(key, (this.#recordsLost.get(key) ?? 0) + count);
  }

  /** render(), then whatever the attached sources add (process metrics on Node). */
  async renderAll(gauges: readonly GaugeSample[]): Promise<string> {
    const extra = await Promise.all(this.#sources.map((source) => source()));
    return [this.render(gauges), ...extra.map((text) => (text.endsWith('\n') ? text : `${text}\n`))].join('');
  }

  /** One group-commit transaction of the intake and how many deliveries it carried. */
  observeIntakeBatch(size: number): void {
    observeInto(this.#batchSizes, BATCH_SIZE_BUCKETS, size);
  }

  /** The exposition text: this process's counters, then the gauges read for this scrape. */
  render(gauges: readonly GaugeSample[]): string {
    const lines: string[] = [];
    const family = (name: string, help: string, type: string) =>
      lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);

    family('webhook_events_total', 'Deliveries by outcome, per provider and event type.', 'counter');
    for (const [labels, value] of this.#events) lines.push(`webhook_events_total${labels} ${value}`);

    family('webhook_rejections_total', 'Deliveries refused before storage, by reason class.', 'counter');
    for (const [labels, value] of this.#rejections) lines.push(`webhook_rejections_total${labels} ${value}`);

    family(
      'webhook_repeated_deliveries_total',
      'Copies of a delivery answered in full a short while ago, answered as duplicates without being read.',
      'counter',
    );
    for (const [labels, value] of this.#repeatedDeliveries) {
      lines.push(`webhook_repeated_deliveries_total${labels} ${value}`);
    }

    family('webhook_processing_duration_seconds', 'Time from request to answer for stored events.', 'histogram');
    for (const [provider, histogram] of this.#latency) {
      lines.push(
        ...histogramLines('webhook_processing_duration_seconds', { provider }, LATENCY_BUCKETS_SECONDS, histogram),
      );
    }

    if (this.#batchSizes.count > 0) {
      family('webhook_intake_batch_size', 'Deliveries per intake transaction (group commit).', 'histogram');
      lines.push(...histogramLines('webhook_intake_batch_size', {}, BATCH_SIZE_BUCKETS, this.#batchSizes));
    }

    // Named "deliveries" before the word meant an inbound request; it counts publishes, and keeps its
    // name for the dashboards and alerts that query it (docs/architecture.md, the names table).
    family(
      'webhook_outbox_deliveries_total',
      'Outbox publish outcomes by topic and destination: published, retried, dead.',
      'counter',
    );
    for (const [labels, value] of this.#publishes) lines.push(`webhook_outbox_deliveries_total${labels} ${value}`);

    family('webhook_operator_replays_total', 'Operator replays by the event status they left.', 'counter');
    for (const [labels, value] of this.#replays) lines.push(`webhook_operator_replays_total${labels} ${value}`);

    family('webhook_operator_retries_total', 'Operator retries of outbox messages by outcome.', 'counter');
    for (const [labels, value] of this.#retries) lines.push(`webhook_operator_retries_total${labels} ${value}`);

    if (this.#recordsLost.size > 0) {
      family('webhook_spool_records_lost_total', 'Log records dropped for room or lost in a failed write.', 'counter');
      for (const [labels, value] of this.#recordsLost) lines.push(`webhook_spool_records_lost_total${labels} ${value}`);
    }

    const described = new Set<string>();
    for (const gauge of gauges) {
      if (!described.has(gauge.name)) {
        family(gauge.name, gauge.help, 'gauge');
        described.add(gauge.name);
      }
      lines.push(`${gauge.name}${labelText(gauge.labels ?? {})} ${gauge.value}`);
    }
    return `${lines.join('\n')}\n`;
  }
}
