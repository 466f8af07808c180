// Refused deliveries written outside the request that was refused: the intake only calls `record`,
// and a flush (Node: every second on the background pool and at shutdown; Workers: after each
// request, in waitUntil) writes what gathered in two statements. Two things are kept:
// - counts per whole minute, sender and reason, added up in memory as refusals arrive, so they stay
//   exact however many arrive between flushes (their keys are few: senders and reasons are closed sets);
// - the newest refusals themselves, in a ring of REJECTION_RING_SIZE slots in webhook_rejections,
//   through a Spool of that same capacity: a sample older than the newest REJECTION_RING_SIZE would be
//   overwritten in the ring anyway, so dropping it early loses nothing, and a flood of refusals costs
//   a fixed amount of memory and of table.
import { type SQL, sql } from 'drizzle-orm';
import type { Executor } from '../db/client.ts';
import { describeError } from '../db/errors.ts';
import type { Logger } from '../lib/logger.ts';
import type { Metrics } from '../lib/metrics.ts';
import { Spool } from '../lib/spool.ts';
import type { RejectionRecord } from './rejections.ts';

/**
 * Slots of the ring: enough to see what happened over the last quarter of an hour at one refusal a
 * second, or the whole story of a burst, and small enough that the table stays a few megabytes even
 * when every refusal carries thirty headers of two hundred characters.
 */
export const REJECTION_RING_SIZE = 1000;

const MINUTE_MS = 60_000;

interface CountKey {
  bucketStart: number;
  provider: string;
  reason: string;
}

/** What a flush could not write, for the log line that says so. */
export interface LostRejections {
  /** Refusals whose minute counts were not written. */
  rejections: number;
  /** Samples not written to the ring. */
  samples: number;
  error: unknown;
}

export interface RejectionLogOptions {
  /** Slots of the ring (REJECTION_RING_SIZE unless a test needs a smaller one). */
  ringSize?: number;
  /** Told when a flush failed: its counts and samples are gone (they describe refusals, never events). */
  onLost?(lost: LostRejections): void;
}

/** A flush's rows: counts sorted by key, so two processes that upsert the same keys take their locks in one order. */
function countRows(counts: ReadonlyMap<string, CountKey & { n: number }>) {
  return [...counts.values()]
    .sort(
      (a, b) =>
        a.bucketStart - b.bucketStart ||
        (a.provider < b.provider ? -1 : a.provider > b.provider ? 1 : 0) ||
        (a.reason < b.reason ? -1 : a.reason > b.reason ? 1 : 0),
    )
    .map((count) => ({
      bucket_start: new Date(count.bucketStart).toISOString(),
      provider: count.provider,
      reason: count.reason,
      n: count.n,
    }));
}

/**
 * The minute counts added to what is there. Keys sorted, so flushes of several processes lock them in
 * one order and never deadlock.
 */
export async function writeRejectionCounts(
  db: Executor,
  counts: ReadonlyMap<string, CountKey & { n: number }>,
): Promise<void> {
  if (counts.size === 0) return;
  await db.execute(sql`
    insert into webhook_rejection_counts as c (bucket_start, provider, reason, n)
    select bucket_start, provider, reason, n
    from json_to_recordset(${JSON.stringify(countRows(counts))}::json)
      as t(bucket_start timestamptz, provider text, reason text, n bigint)
    order by bucket_start, provider, reason
    on conflict (bucket_start, provider, reason) do update set n = c.n + excluded.n`);
}

/**
 * Each sample into the slot after the last one taken (the sequence's next number modulo the ring's
 * size), over whatever that slot held. At most `ringSize` samples per statement, so no slot is
 * written twice in one.
 */
export async function writeRejectionSamples(
  db: Executor,
  samples: readonly RejectionRecord[],
  ringSize: number,
): Promise<void> {
  const newest = samples.slice(-ringSize).map((sample) => ({
    at: new Date(sample.at).toISOString(),
    provider: sample.provider,
    status_code: sample.statusCode,
    reason: sample.reason,
    detail: sample.detail,
    trace_id: sample.traceId,
    headers: sample.headers,
  }));
  if (newest.length === 0) return;
  await db.execute(sql`
    insert into webhook_rejections as r (slot, at, provider, status_code, reason, detail, trace_id, headers)
    select (nextval('webhook_rejection_number_seq') % ${ringSize})::int, at, provider, status_code, reason, detail,
      trace_id, headers
    from json_to_recordset(${JSON.stringify(newest)}::json)
      as t(at timestamptz, provider text, status_code smallint, reason text, detail text, trace_id text, headers jsonb)
    on conflict (slot) do update set at = excluded.at, provider = excluded.provider,
      status_code = excluded.status_code, reason = excluded.reason, detail = excluded.detail,
      trace_id = excluded.trace_id, headers = excluded.headers`);
}

export class RejectionLog {
  readonly ringSize: number;
  #counts = new Map<string, CountKey & { n: number }>();
  readonly #samples: Spool<RejectionRecord, Executor>;

  constructor(options: RejectionLogOptions = {}) {
    const ringSize = options.ringSize ?? REJECTION_RING_SIZE;
    this.ringSize = ringSize;
    this.#samples = new Spool<RejectionRecord, Executor>({
      capacity: ringSize,
      // The spool calls this as it takes its batch, so the counts taken here are exactly those of the
      // refusals recorded until then, dropped samples included.
      // Two statements, the counts first: samples of two processes' flushes can meet on a slot (and one
      // of them then fail), the counts they carry are not lost with them.
      write: async (samples, db) => {
        const counts = this.#counts;
        this.#counts = new Map();
        const lost: LostRejections = { rejections: 0, samples: 0, error: undefined };
        await writeRejectionCounts(db, counts).catch((error: unknown) => {
          lost.rejections = [...counts.values()].reduce((sum, count) => sum + count.n, 0);
          lost.error = error;
        });
        await writeRejectionSamples(db, samples, ringSize).catch((error: unknown) => {
          lost.samples = samples.length;
          lost.error ??= error;
        });
        if (lost.rejections > 0 || lost.samples > 0) options.onLost?.(lost);
      },
      // Samples beyond the ring's size are dropped by design (see the header); nothing is lost.
    });
  }

  /** Refusals recorded and not yet written (samples; their counts go with them). */
  get pending(): number {
    return this.#samples.size;
  }

  record(rejection: RejectionRecord): void {
    const bucketStart = Math.floor(rejection.at / MINUTE_MS) * MINUTE_MS;
    const key = `${bucketStart}\u0000${rejection.provider}\u0000${rejection.reason}`;
    const count = this.#counts.get(key);
    if (count === undefined) {
      this.#counts.set(key, { bucketStart, provider: rejection.provider, reason: rejection.reason, n: 1 });
    } else count.n++;
    this.#samples.add(rejection);
  }

  /** Writes what was recorded; resolves once it is written (or reported lost). */
  flush(db: Executor): Promise<void> {
    return this.#samples.flush(db);
  }
}

/**
 * Retention: the statement deleting minute counts that started before `cutoff` (EVENT_RETENTION_DAYS
 * back), answering `n`, how many went; the ring needs none, being bounded by its size.
 */
export function rejectionCountsPurge(cutoff: Date): SQL {
  return sql`
    with gone as (delete from webhook_rejection_counts where bucket_start < ${cutoff.toISOString()}::timestamptz
      returning 1)
    select count(*)::int as n from gone`;
}

/** The runtimes' log: a failed flush is a warning and counted in /metrics, as the delivery log's losses are. */
export function createRejectionLog(deps: { logger: Logger; metrics?: Metrics }): RejectionLog {
  return new RejectionLog({
    onLost: ({ rejections, samples, error }) => {
      deps.metrics?.countRecordsLost('rejections', 'write_failed', rejections);
      deps.logger.warn('refused deliveries not recorded', { rejections, samples, error: describeError(error) });
    },
  });
}
