// Retention (`purge`): payloads of terminal rows (completed, ignored, dead_letter) are nulled after
// PAYLOAD_RETENTION_DAYS, and the rows themselves, which are the deduplication keys, deleted after
// EVENT_RETENTION_DAYS, each counted from completed_at (else received_at), their delivery log with them
// (and log rows of events never stored, once as old). Rows that still have work
// ahead of them (received, processing, failed, parked) are never touched. Batched, with a statement
// timeout per batch and SKIP LOCKED, so a large purge never holds locks that intake or the worker wait on.
import { type SQL, sql } from 'drizzle-orm';
import type { Config } from '../config.ts';
import type { Database } from '../db/client.ts';
import { drainBatches, type StopReason } from '../lib/loops.ts';
import { purgeUnkeptDeliveries } from './delivery-log.ts';
import { purgeStatements } from './event-rows.ts';
import { rejectionCountsPurge } from './rejection-log.ts';

export const PURGE_BATCH_SIZE = 1000;
/** One batch statement's bound: a slow batch is cancelled and the purge resumes on the next run. */
export const PURGE_STATEMENT_TIMEOUT_MS = 5000;
const DAY_MS = 86_400_000;

export interface PurgeSummary {
  payloadsNulled: number;
  rowsDeleted: number;
  /** Minute counts of refused deliveries older than EVENT_RETENTION_DAYS (src/inbox/rejection-log.ts). */
  rejectionCountsDeleted: number;
  /** Delivery-log rows of events not kept (an event's own go with it, counted in rowsDeleted's statement). */
  deliveriesDeleted: number;
  batches: number;
  stoppedBy: StopReason;
}

export interface PurgeOptions {
  nowMs: () => number;
  budgetMs: number;
  signal?: AbortSignal;
  batchSize?: number;
}

/** One batch in its own transaction, so SET LOCAL bounds just its statement. */
async function purgeBatch(db: Database, statement: SQL): Promise<number> {
  return db.transaction(async (tx) => {
    await tx.execute(sql.raw(`set local statement_timeout = ${PURGE_STATEMENT_TIMEOUT_MS}`));
    const rows = await tx.execute<{ n: number }>(statement);
    return rows[0]?.n ?? 0;
  });
}

export async function purgeByRetention(
  db: Database,
  config: Pick<Config, 'PAYLOAD_RETENTION_DAYS' | 'EVENT_RETENTION_DAYS'>,
  options: PurgeOptions,
): Promise<PurgeSummary> {
  const limit = options.batchSize ?? PURGE_BATCH_SIZE;
  const startedMs = options.nowMs();
  // Cut-offs fixed for the run: a row crossing one while the purge runs waits for the next run.
  const payloadCutoff = new Date(startedMs - config.PAYLOAD_RETENTION_DAYS * DAY_MS);
  const rowCutoff = new Date(startedMs - config.EVENT_RETENTION_DAYS * DAY_MS);
  let payloadsNulled = 0;
  let rowsDeleted = 0;
  let deliveriesDeleted = 0;
  // Rows first: nulling the payload of a row about to be deleted would be wasted writes. Unkept
  // delivery-log rows last: those of the events just deleted went with them.
  let phase: 'rows' | 'payloads' | 'deliveries' = 'rows';
  const progress = await drainBatches({
    nowMs: options.nowMs,
    budgetMs: options.budgetMs,
    signal: options.signal,
    batch: async () => {
      if (phase === 'rows') {
        const deleted = await purgeBatch(db, purgeStatements.deleteRows(rowCutoff, limit));
        rowsDeleted += deleted;
        if (deleted === limit) return { claimed: deleted, limit };
        phase = 'payloads';
      }
      if (phase === 'payloads') {
        const nulled = await purgeBatch(db, purgeStatements.nullPayloads(payloadCutoff, limit));
        payloadsNulled += nulled;
        if (nulled === limit) return { claimed: nulled, limit };
        phase = 'deliveries';
      }
      const deleted = await purgeBatch(db, purgeUnkeptDeliveries(rowCutoff, limit));
      deliveriesDeleted += deleted;
      return { claimed: deleted, limit };
    },
  });
  // A few rows a minute at most (senders and reasons are closed sets): one statement under the same bound.
  const rejectionCountsDeleted = await purgeBatch(db, rejectionCountsPurge(rowCutoff));
  return { payloadsNulled, rowsDeleted, deliveriesDeleted, rejectionCountsDeleted, ...progress };
}
