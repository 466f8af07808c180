// What the async worker says about each application: one log line per state change, the pass's
// tally, and the event counters (as the intake counts them).
import type { Logger } from '../lib/logger.ts';
import type { Metrics } from '../lib/metrics.ts';
import type { ClaimedEvent } from './event-rows.ts';
import type { StoredOutcome } from './stored.ts';

/** What a pass counts as it goes (the worker's WorkSummary, less what the drain loop reports). */
export interface Tally {
  claimed: number;
  completed: number;
  ignored: number;
  parked: number;
  /** Failed and rescheduled as `failed`. */
  failed: number;
  deadLettered: number;
  /** Claimed, but another holder or an operator had moved the row on. */
  skipped: number;
  /** Claimed but not started (lease or budget would not cover it), or hit a database error: free again. */
  released: number;
  /** Time spent waiting for a saturated intake, included in the pass's elapsedMs. */
  deferredMs: number;
}

export interface ReportLine {
  attempt: number;
  duration_ms: number;
  retryAt?: Date;
  batch_size?: number;
  /** A failure's cause, exactly as `last_error` keeps it. */
  error?: string;
}

const metricFor: Partial<Record<StoredOutcome, 'failed' | 'dead_letter' | 'ignored' | 'parked'>> = {
  failed: 'failed',
  dead_letter: 'dead_letter',
  ignored: 'ignored',
  parked: 'parked',
};

export function reportApplication(
  reporter: { worker: string; logger: Logger; metrics?: Pick<Metrics, 'countEvent'> | undefined },
  event: ClaimedEvent,
  outcome: StoredOutcome,
  tally: Tally,
  line: ReportLine,
): void {
  const { logger, metrics } = reporter;
  const fields = {
    worker: reporter.worker,
    provider: event.provider,
    event_id: event.eventId,
    event_type: event.eventType,
    outcome,
    attempt: line.attempt,
    duration_ms: line.duration_ms,
    ...(line.batch_size === undefined ? {} : { batch_size: line.batch_size }),
    error: line.error,
  };
  switch (outcome) {
    case 'completed':
      tally.completed += 1;
      logger.info('inbox event applied', fields);
      break;
    case 'ignored':
    case 'parked':
      tally[outcome] += 1;
      if (outcome === 'parked') logger.warn('event parked: unknown api_version', { ...fields, alert: true });
      else logger.info('inbox event ignored', fields);
      break;
    case 'failed':
      tally.failed += 1;
      logger.warn('inbox event failed, will retry', { ...fields, retry_at: line.retryAt?.toISOString() });
      break;
    case 'dead_letter':
      tally.deadLettered += 1;
      logger.error('inbox event dead-lettered', { ...fields, alert: true });
      break;
    case 'skipped':
      tally.skipped += 1;
      logger.info('inbox event skipped: no longer held by this worker', fields);
      break;
  }
  const metric = metricFor[outcome];
  if (metric !== undefined) metrics?.countEvent(event.provider, event.eventType, metric);
  // An application after earlier failures is a retry, whatever its outcome (as the intake counts it).
  if (line.attempt > 1 && outcome !== 'skipped') metrics?.countEvent(event.provider, event.eventType, 'retried');
}
