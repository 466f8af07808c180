// The kinds of bulk job, one entry each (JOB_KINDS): everything the places that handle jobs need to
// know of a kind. Its words (the dashboard's and the CLI's), its audit action and target kind, what its
// `failed` count means, its filter as stored, how it counts its selection, how one batch pages through
// its items and acts on them, the destinations its filter names (refused unless configured) and what
// the operator is warned of before confirming. A job's life (bulk-jobs.ts), its runner
// (bulk-runner.ts), the admin API, the dashboard and the CLI read this table and switch on no kind.
// A new kind is its name in db/schema.ts's bulkJobKinds (a migration: it is an enum) and its audit
// action in db/audit.ts, then one entry here, its filter's request schema (admin/api/jobs/schema.ts) and
// its CLI command (cli/commands/jobs-create.ts); the compiler names each one missing.
import type { OperatorAction } from '../../db/audit.ts';
import type { Executor, Transaction } from '../../db/client.ts';
import type { BulkJobKind } from '../../db/schema.ts';
import type { HandlerMap } from '../../domain/handlers.ts';
import type { Clock } from '../../lib/clock.ts';
import type { Logger } from '../../lib/logger.ts';
import type { Metrics } from '../../lib/metrics.ts';
import type { DestinationRouting } from '../../outbox/destinations.ts';
import { REPLAYABLE, replayEvents } from '../actions/replay.ts';
import { retryOutbox } from '../actions/retry.ts';
import { type RetryWarning, retryWarnings } from '../actions/retry-warnings.ts';
import { decodeCursor, encodeCursor, type PageKey } from '../reads/cursor.ts';
import { countEventsExactly, type EventSelection, listEvents } from '../reads/events.ts';
import { countOutboxExactly, listOutbox, type OutboxSelection } from '../reads/outbox-view.ts';
import { countMessagesToSend, messagesToSend, type SendJobFilter, sendMessages } from './destination-copy.ts';

/**
 * The statuses a bulk replay takes events from: the replayable ones (a completed event would only be
 * recorded, one audit row each for nothing). A job takes one of them; `failed` unless told.
 */
export type ReplayableStatus = 'failed' | 'parked' | 'dead_letter';
/** ops/actions/replay.ts's REPLAYABLE, typed as the statuses it names. */
export const REPLAYABLE_STATUSES = REPLAYABLE as readonly ReplayableStatus[];

/** The events list's filters, one replayable status among them. */
export interface EventJobFilter extends Omit<EventSelection, 'status'> {
  status: ReplayableStatus;
}

/** The outbox list's filters; retrying is for dead messages only. */
export interface OutboxJobFilter extends Omit<OutboxSelection, 'status'> {
  status: 'dead';
}

/** Each kind's filter. */
export interface JobFilters {
  replay_events: EventJobFilter;
  retry_outbox: OutboxJobFilter;
  send_to_destination: SendJobFilter;
}

/** A job of one kind with its filter. */
export interface JobSpec<K extends BulkJobKind> {
  kind: K;
  filter: JobFilters[K];
}

/** A job of any kind, each with its own filter. */
export type BulkJobSpec = { [K in BulkJobKind]: JobSpec<K> }[BulkJobKind];

/** A filter as stored in `bulk_jobs.filter` and shown in answers: the list's parameter names, times in ISO 8601. */
export type FilterJson = Record<string, string>;

/** The filters every kind takes, as a stored filter gives them back (times parsed). */
export interface CommonFilter {
  id: string | undefined;
  since: Date | undefined;
  until: Date | undefined;
}

/** An item a batch could not change, named as its audit row names it, and why. */
export interface ItemFailure {
  target: string;
  reason: string;
}

export interface BatchDone {
  items: number;
  failed: number;
  /** The failed items with their reasons (a copy's skipped messages are counted, not listed). */
  failures: readonly ItemFailure[];
  /** Where the next batch starts; undefined when this batch reached the end. */
  next: PageKey | undefined;
}

/** What one batch of a job works with: the runner's transaction and dependencies, the job and its position. */
export interface BatchContext {
  tx: Transaction;
  /** Whose job it is and its id, written on each item's audit row. */
  job: { id: string; operator: string };
  /** The position the batch starts after, undefined for the first. */
  after: PageKey | undefined;
  batchSize: number;
  handlers: HandlerMap;
  clock: Clock;
  logger: Logger;
  metrics?: Pick<Metrics, 'countReplay' | 'countRetry'> | undefined;
  /** The configured destinations. */
  routing: DestinationRouting;
}

/** A job this runner cannot run as it is configured; the message, ours, becomes the job's last_error. */
export class JobRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'JobRefused';
  }
}

export interface JobKind<F> {
  /** The kind in words, as the dashboard and the CLI name it. */
  label: string;
  /** The action and what it takes, as a confirmation says them ("Replay all 3 matching event(s)"). */
  verb: string;
  noun: 'event' | 'message';
  /**
   * What `failed` counts: items the action could not change (a job done with some is
   * `done_with_failures`, each kept with why), or items skipped on purpose (not errors, not listed).
   */
  failedAre: 'failed' | 'skipped';
  /** The audit `action` of the job's row, and the `target_kind` of its rows and failed items. */
  audit: { action: OperatorAction['action']; targetKind: 'event' | 'outbox' };
  /** The filter a job was created with, from its stored form (filterJson wrote it). */
  storedFilter(json: Partial<FilterJson>, common: CommonFilter): F;
  /** The items the filter matches, exactly: rows, or for a copy the distinct messages. */
  count(db: Executor, filter: F): Promise<number>;
  /** One page of the selection after the context's position, acted on in the context's transaction. */
  batch(context: BatchContext, filter: F): Promise<BatchDone>;
  /** The destinations the filter names, by field: each must be a configured one. */
  destinations(filter: F): { field: string; name: string }[];
  /** Said before the job is confirmed. */
  warnings(db: Executor, routing: DestinationRouting, filter: F, nowMs: number): Promise<RetryWarning[]>;
}

/** Why an item counts as failed when it vanished between the page and the action. */
const GONE = 'deleted by retention after the job read it';

/** A stored position as a listing's cursor. */
const cursorOf = (key: PageKey | undefined) => (key === undefined ? undefined : encodeCursor(key));

/** The position the next batch starts after: the page's last key, or undefined on the last page. */
function nextKey(nextCursor: string | null, keyCount: number): PageKey | undefined {
  return nextCursor === null ? undefined : decodeCursor(nextCursor, keyCount);
}

const noWarnings = async (): Promise<RetryWarning[]> => [];

export const JOB_KINDS: { readonly [K in BulkJobKind]: JobKind<JobFilters[K]> } = {
  replay_events: {
    label: 'replay events',
    verb: 'Replay',
    noun: 'event',
    failedAre: 'failed',
    audit: { action: 'bulk_replay', targetKind: 'event' },
    storedFilter: (json, common) => ({
      ...common,
      status: REPLAYABLE_STATUSES.find((candidate) => candidate === json.status) ?? 'failed',
      provider: json.provider,
      type: json.type,
      subject: json.subject,
    }),
    count: countEventsExactly,
    async batch(context, filter) {
      const { tx, job } = context;
      const page = await listEvents(tx, { ...filter, cursor: cursorOf(context.after), limit: context.batchSize });
      const bySender = new Map<string, typeof page.rows>();
      for (const row of page.rows) bySender.set(row.provider, [...(bySender.get(row.provider) ?? []), row]);
      const failures: ItemFailure[] = [];
      const replayContext = {
        db: tx,
        handlers: context.handlers,
        clock: context.clock,
        logger: context.logger,
        metrics: context.metrics,
      };
      for (const [provider, rows] of bySender) {
        let eventIds = rows.map((row) => row.eventId);
        const target = (eventId: string) => `${provider}/${eventId}`;
        while (eventIds.length > 0) {
          const result = await replayEvents(replayContext, {
            provider,
            eventIds,
            operator: job.operator,
            jobId: job.id,
          });
          if (result.kind === 'replayed') {
            for (const event of result.events) {
              if (event.outcome === 'applied') continue;
              failures.push({ target: target(event.eventId), reason: event.reason ?? `it is ${event.after.status}` });
            }
            break;
          }
          // Deleted by retention since the page was read: not changed, so counted as failed.
          for (const eventId of result.eventIds) failures.push({ target: target(eventId), reason: GONE });
          eventIds = eventIds.filter((id) => !result.eventIds.includes(id));
        }
      }
      return { items: page.rows.length, failed: failures.length, failures, next: nextKey(page.nextCursor, 2) };
    },
    destinations: () => [],
    warnings: noWarnings,
  },
  retry_outbox: {
    label: 'retry outbox',
    verb: 'Retry',
    noun: 'message',
    failedAre: 'failed',
    audit: { action: 'bulk_retry', targetKind: 'outbox' },
    storedFilter: (json, common) => ({ ...common, status: 'dead', topic: json.topic, destination: json.destination }),
    count: countOutboxExactly,
    async batch(context, filter) {
      const { tx, job } = context;
      const page = await listOutbox(tx, { ...filter, cursor: cursorOf(context.after), limit: context.batchSize });
      let ids = page.rows.map((row) => row.id);
      const failures: ItemFailure[] = [];
      while (ids.length > 0) {
        const retryContext = { db: tx, clock: context.clock, logger: context.logger, metrics: context.metrics };
        const result = await retryOutbox(retryContext, { ids, operator: job.operator, jobId: job.id });
        if (result.kind === 'retried') {
          // No longer dead (an operator or another job retried it first): left alone.
          for (const { id, status } of result.skipped) {
            failures.push({ target: id, reason: `it was ${status}: only dead messages are retried` });
          }
          break;
        }
        for (const id of result.ids) failures.push({ target: id, reason: GONE });
        ids = ids.filter((id) => !result.ids.includes(id));
      }
      return { items: page.rows.length, failed: failures.length, failures, next: nextKey(page.nextCursor, 1) };
    },
    // As the outbox list: a destination filter names a configured destination or is refused.
    destinations: (filter) =>
      filter.destination === undefined ? [] : [{ field: 'destination', name: filter.destination }],
    warnings: retryWarnings,
  },
  send_to_destination: {
    label: 'send to destination',
    verb: 'Send',
    noun: 'message',
    failedAre: 'skipped',
    audit: { action: 'bulk_send', targetKind: 'outbox' },
    storedFilter: (json, common) => ({ ...common, topic: json.topic, to: json.to ?? '' }),
    count: countMessagesToSend,
    /** A page of messages copied to the job's destination; those not copied count as failed (skipped). */
    async batch(context, filter) {
      const to = context.routing.destinations.find((destination) => destination.name === filter.to);
      // A job created under another configuration: failing it says so, where copying blind would not.
      if (to === undefined) throw new JobRefused(`destination "${filter.to}" is not configured in this process`);
      const page = await messagesToSend(context.tx, filter, context.after, context.batchSize);
      const { skipped } = await sendMessages(context.tx, page.rows, {
        to,
        operator: context.job.operator,
        jobId: context.job.id,
        at: new Date(context.clock()),
      });
      return { items: page.rows.length, failed: skipped, failures: [], next: nextKey(page.nextCursor, 1) };
    },
    destinations: (filter) => [{ field: 'to', name: filter.to }],
    warnings: noWarnings,
  },
};

/** The items a spec matches, exactly. */
export const countSpec = <K extends BulkJobKind>(db: Executor, spec: JobSpec<K>): Promise<number> =>
  JOB_KINDS[spec.kind].count(db, spec.filter);

/** One batch of a job of this spec. */
export const runSpecBatch = <K extends BulkJobKind>(context: BatchContext, spec: JobSpec<K>): Promise<BatchDone> =>
  JOB_KINDS[spec.kind].batch(context, spec.filter);

/** The configured destinations a spec's filter names, by field. */
export const namedDestinations = <K extends BulkJobKind>(spec: JobSpec<K>) =>
  JOB_KINDS[spec.kind].destinations(spec.filter);

/** What to say before a job of this spec is confirmed (none for most kinds). */
export const specWarnings = <K extends BulkJobKind>(
  db: Executor,
  routing: DestinationRouting,
  spec: JobSpec<K>,
  nowMs: number,
): Promise<RetryWarning[]> => JOB_KINDS[spec.kind].warnings(db, routing, spec.filter, nowMs);
