// Group commit as the service saw it: the intake's batch-size histogram (webhook_intake_batch_size on
// /metrics), read before and after a timed phase, as that phase's batch count, mean and p99.

interface HistogramReading {
  /** Cumulative counts by upper bound, +Inf last. */
  buckets: Array<{ le: number; count: number }>;
  sum: number;
  count: number;
}

export interface BatchSizes {
  batches: number;
  mean: number;
  /** The upper bound of the bucket holding the 99th percentile batch. */
  p99: number;
}

export async function readBatchSizes(origin: string): Promise<HistogramReading> {
  const text = await (await fetch(`${origin}/metrics`)).text();
  const reading: HistogramReading = { buckets: [], sum: 0, count: 0 };
  for (const line of text.split('\n')) {
    const bucket = /^webhook_intake_batch_size_bucket\{le="([^"]+)"\} (\d+)$/.exec(line);
    if (bucket?.[1] !== undefined) {
      reading.buckets.push({
        le: bucket[1] === '+Inf' ? Number.POSITIVE_INFINITY : Number(bucket[1]),
        count: Number(bucket[2]),
      });
    }
    const total = /^webhook_intake_batch_size_(sum|count) (\d+(?:\.\d+)?)$/.exec(line);
    if (total?.[1] === 'sum') reading.sum = Number(total[2]);
    if (total?.[1] === 'count') reading.count = Number(total[2]);
  }
  return reading;
}

export function batchSizesBetween(before: HistogramReading, after: HistogramReading): BatchSizes {
  const batches = after.count - before.count;
  const countAt = (reading: HistogramReading, le: number) => reading.buckets.find((b) => b.le === le)?.count ?? 0;
  const target = batches * 0.99;
  const p99 = after.buckets.find((bucket) => bucket.count - countAt(before, bucket.le) >= target)?.le ?? 0;
  return { batches, mean: batches > 0 ? Math.round(((after.sum - before.sum) / batches) * 10) / 10 : 0, p99 };
}
