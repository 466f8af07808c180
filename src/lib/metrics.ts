// Prometheus metrics: counters and a latency histogram kept in this process (per isolate on
// Workers), and gauges read from the database at scrape time. Labels are bounded by construction:
// providers from the registry, event types from the handler map (else `other`), never an event id.
// Written here rather than with prom-client, which needs Node's runtime and would not run in workerd.
import type { ErrorCode } from './errors.ts';

export type EventOutcome =
  | 'accepted'
  | 'duplicate'
  | 'rejected'
  | 'failed'
  | 'retried'
  | 'parked'
  | 'ignored'
  | 'dead_letter';

/** Why a delivery was refused before it could be stored: the codes of its 4xx and 503 answers. */
export type RejectionReason = Exclude<ErrorCode, 'processing_failed' | 'invalid_request'>;

export interface GaugeSample {
  name: string;
  help: string;
  labels?: Readonly<Record<string, string>>;
  value: number;
}

const LATENCY_BUCKETS_SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10] as const;

function labelText(labels: Readonly<Record<string, string>>): string {
  const parts = Object.entries(labels).map(
    ([key, value]) => `${key}="${value.replaceAll('\\', '\\\\').replaceAll('"', '\\"').replaceAll('\n', '\\n')}"`,
  );
  return parts.length === 0 ? '' : `{${parts.join(',')}}`;
}

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
  readonly #latency = new Map<string, Histogram>();
  readonly #batchSizes = emptyHistogram(BATCH_SIZE_BUCKETS);

  constructor(
    /** Known provider names and, per provider, the event types that may appear as label values. */
    private readonly knownTypes: ReadonlyMap<string, ReadonlySet<string>>,
  ) {}

  #provider(provider: string): string {
    return this.knownTypes.has(provider) ? provider : 'other';
  }

  #eventType(provider: string, eventType: string): string {
    return this.knownTypes.get(provider)?.has(eventType) === true ? eventType : 'other';
  }

  countEvent(provider: string, eventType: string, outcome: EventOutcome): void {
    const key = labelText({
      provider: this.#provider(provider),
      event_type: this.#eventType(provider, eventType),
      outcome,
    });
    this.#events.set(key, (this.#events.get(key) ?? 0) + 1);
  }

  countRejection(provider: string, reason: RejectionReason): void {
    const key = labelText({ provider: this.#provider(provider), reason });
    this.#rejections.set(key, (this.#rejections.get(key) ?? 0) + 1);
  }

  observeProcessing(provider: string, seconds: number): void {
    const key = this.#provider(provider);
    let histogram = this.#latency.get(key);
    if (histogram === undefined) {
      histogram = emptyHistogram(LATENCY_BUCKETS_SECONDS);
      this.#latency.set(key, histogram);
    }
    observeInto(histogram, LATENCY_BUCKETS_SECONDS, seconds);
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
