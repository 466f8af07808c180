// The database schema, in TypeScript. drizzle-kit generates the SQL in drizzle/ from this file;
// nothing else creates tables.
import { type SQL, sql } from 'drizzle-orm';
import {
  type AnyPgColumn,
  bigint,
  check,
  index,
  integer,
  jsonb,
  pgEnum,
  pgSequence,
  pgTable,
  primaryKey,
  real,
  smallint,
  text,
  timestamp,
  uniqueIndex,
  uuid,
  varchar,
} from 'drizzle-orm/pg-core';

/** Every state an inbox row can be in (the contract's list, all of it). */
export const webhookEventStatuses = [
  'received',
  'processing',
  'completed',
  'ignored',
  'failed',
  'parked',
  'dead_letter',
] as const;
export type WebhookEventStatus = (typeof webhookEventStatuses)[number];
export const webhookEventStatus = pgEnum('webhook_event_status', webhookEventStatuses);

/** Longest `last_error` kept anywhere (the contract's bound). */
export const LAST_ERROR_MAX = 500;

/**
 * Rows done in a later minute than they arrived in: the only finished rows that were waiting at the
 * end of a whole minute, which the overview's backlog reads (webhook_events_done_minutes_later_idx).
 * A function (drizzle/0004_event_counts_triggers.sql) rather than its expression, so that statistics
 * on it tell the planner how few rows it holds.
 */
export const doneMinutesLater = (table: { completedAt: AnyPgColumn; receivedAt: AnyPgColumn }): SQL =>
  sql`webhook_event_done_minutes_later(${table.completedAt}, ${table.receivedAt})`;

/** When a row was finished, for retention: completed_at, else (never finished) received_at. */
export const finishedAt = (table: { completedAt: AnyPgColumn; receivedAt: AnyPgColumn }): SQL =>
  sql`coalesce(${table.completedAt}, ${table.receivedAt})`;

/**
 * What retention may still do to a finished row, the first key of its one index
 * (webhook_events_retention_idx): 0 payload present, no content digest (null the payload, or delete
 * the row); 1 payload present, digest (null the payload); 2 payload gone, no digest (delete the row);
 * 3 payload gone, digest (nothing, ever: the row is kept for its digest, and the index leaves it out).
 * Each of retention's walks reads two of these ranges oldest first, so it starts at its oldest
 * candidate and never re-reads what an earlier run purged. One index instead of one per walk: every
 * finished row without a digest was an entry in both, and each entry is a write on the intake's path
 * (docs/benchmarks.md).
 */
export const retentionClass = (table: { payload: AnyPgColumn; contentDigest: AnyPgColumn }): SQL =>
  sql`((${table.payload} is null)::int * 2 + (${table.contentDigest} is not null)::int)`;

/**
 * Retention's two walks, each the classes of retentionClass it reads and the condition those classes
 * stand for. A statement needs both: the classes bound its range of the index, and the condition is
 * what the planner proves the index's predicate from.
 */
export const retentionWalks = {
  /** Rows retention may delete: no content digest. */
  deletable: {
    classes: [0, 2],
    condition: (table: { contentDigest: AnyPgColumn }): SQL => sql`${table.contentDigest} is null`,
  },
  /** Payloads retention may null: payload present. */
  payloadPresent: {
    classes: [0, 1],
    condition: (table: { payload: AnyPgColumn }): SQL => sql`${table.payload} is not null`,
  },
} as const;

export type RetentionWalk = (typeof retentionWalks)[keyof typeof retentionWalks];

/**
 * The sender's own id of what an event is about, where the sender puts one in its payload: Stripe's
 * `data.object.id`, GitHub's `repository.full_name`, Shopify's resource `id`, acme's `data.id`. It is
 * what an operator searches by (`?subject=`); it reads the payload, so it is gone once retention nulls it.
 */
export const eventSubject = (table: { provider: AnyPgColumn; payload: AnyPgColumn }): SQL =>
  sql`(case ${table.provider}
    when 'stripe' then ${table.payload} #>> '{data,object,id}'
    when 'github' then ${table.payload} #>> '{repository,full_name}'
    when 'shopify' then ${table.payload} ->> 'id'
    when 'acme' then ${table.payload} #>> '{data,id}'
  end)`;

/**
 * The statuses the operator's listing indexes leave out: the queue, async mode's rows from their
 * acceptance until their application. Accepting a burst then writes none of those index entries (the
 * acceptance insert is the one write on the path a sender waits for; each entry added to it cost the
 * acceptance rate, docs/benchmarks.md); a row enters them when it is applied, an update that writes a
 * new entry in every index anyway. Listings find queue rows through the (status, received_at) index,
 * one range per status (src/ops/reads/events.ts).
 */
export const QUEUE_STATUSES = ['received', 'processing'] as const;

/** The condition of a row the listing indexes hold: not in the queue (QUEUE_STATUSES). */
export const listedInIndexes = (table: { status: AnyPgColumn }): SQL =>
  sql`${table.status} not in ('received', 'processing')`;

/** A condition per status: each a range of a (status, time) index, read in the index's order and merged. */
const oneRangePerStatus =
  (statuses: readonly string[]) =>
  (table: { status: AnyPgColumn }): SQL[] =>
    statuses.map((status) => sql`${table.status} = ${status}`);

/**
 * Every row, as ranges an index can read: the rows the listing indexes hold, then the queue's, one
 * status each (a range of the (status, received_at) index). A read under a filter of one of those
 * indexes (sender, type, subject, id) reads each range, ANDed with its own condition, and adds or
 * merges them.
 */
export const listingRanges = (table: { status: AnyPgColumn }): SQL[] => [
  listedInIndexes(table),
  ...oneRangePerStatus(QUEUE_STATUSES)(table),
];

/**
 * Every row, one range of the (status, received_at) index per status: how a read without a filter of
 * its own index (every event, or a time window) finds them in arrival order, merged. No index of
 * arrival time alone: each index is an entry more in every insert on the intake's path (docs/benchmarks.md).
 */
export const statusRanges = (table: { status: AnyPgColumn }): SQL[] => oneRangePerStatus(webhookEventStatuses)(table);

/**
 * The ranges a read over every status takes: under a filter that has a listing index of its own
 * (sender, type, id, subject), that index and the queue's ranges (listingRanges); else a range per
 * status (statusRanges). The one rule for events.ts and event-counts.ts.
 */
export const rangesUnder = (table: { status: AnyPgColumn }, filteredByIndex: boolean): SQL[] =>
  filteredByIndex ? listingRanges(table) : statusRanges(table);

/** The inbox: one row per sender's event; the primary key is the concurrency gate. */
export const webhookEvents = pgTable(
  'webhook_events',
  {
    provider: text().notNull(),
    eventId: text().notNull(),
    eventType: text().notNull(),
    status: webhookEventStatus().notNull(),
    /** Null once retention has purged it; the key outlives the payload. */
    payload: jsonb(),
    receivedAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
    /** When the sender says the event happened (signed, where the sender signs it); handlers need it on replay. */
    occurredAt: timestamp({ withTimezone: true }),
    completedAt: timestamp({ withTimezone: true }),
    /** Failed applications; a redelivery that takes a failed row back counts nothing. */
    attemptCount: integer().notNull().default(0),
    lastError: varchar({ length: LAST_ERROR_MAX }),
    /**
     * SHA-256 (hex) of the signed bytes, for senders that sign neither their delivery id nor a time
     * (GitHub, Shopify): the same signed body is a duplicate whatever id it arrives under.
     */
    contentDigest: text(),
    /** Async mode: when the worker may next try this row (retry backoff). */
    availableAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
    /** Async mode: the worker lease; an expired lease makes the row claimable again. */
    lockedUntil: timestamp({ withTimezone: true }),
    lockedBy: text(),
    /**
     * Async mode: the W3C traceparent of the delivery that queued the row (its span's; with tracing
     * off, the sender's own when valid), so the worker's apply continues that trace. Null in sync mode.
     */
    traceparent: text(),
  },
  (table) => [
    primaryKey({ columns: [table.provider, table.eventId] }),
    index('webhook_events_status_received_idx').on(table.status, table.receivedAt),
    // The operator's listings, newest first, each filter a range of its own index (docs/scaling.md),
    // the queue left out (listedInIndexes); every event, or a time window, is read one status at a
    // time from the (status, received_at) index (statusRanges). With the listing's tie-breakers, so a
    // filtered page is read in order and stops after its rows.
    index('webhook_events_listed_provider_received_idx')
      .on(table.provider, table.receivedAt, table.eventId)
      .where(listedInIndexes(table)),
    index('webhook_events_listed_type_received_idx')
      .on(table.eventType, table.receivedAt, table.provider, table.eventId)
      .where(listedInIndexes(table)),
    // `?id=` is a prefix: text_pattern_ops lets LIKE 'prefix%' be a range whatever the collation.
    index('webhook_events_listed_event_id_prefix_idx')
      .on(table.eventId.op('text_pattern_ops'))
      .where(listedInIndexes(table)),
    index('webhook_events_listed_subject_idx')
      .on(eventSubject(table), table.receivedAt)
      .where(sql`${eventSubject(table)} is not null and ${listedInIndexes(table)}`),
    // webhook_events_done_minutes_later_idx, the overview's backlog, is in drizzle/0004_event_counts_triggers.sql:
    // its predicate is a function declared there, with statistics the planner needs to choose it.
    // Retention's two walks, oldest first, each two ranges of one index (retentionClass).
    index('webhook_events_retention_idx')
      .on(retentionClass(table), finishedAt(table))
      .where(
        sql`${table.status} in ('completed', 'ignored', 'dead_letter') and (${table.payload} is not null or ${table.contentDigest} is null)`,
      ),
    uniqueIndex('webhook_events_provider_content_digest_idx')
      .on(table.provider, table.contentDigest)
      .where(sql`${table.contentDigest} is not null`),
    index('webhook_events_claimable_idx')
      .on(table.availableAt)
      .where(sql`${table.status} in ('received', 'processing', 'failed')`),
  ],
);

/**
 * Events counted by when they arrived, per sender, type and current status, kept by triggers on
 * webhook_events (drizzle/0004_event_counts.sql) in the same transaction as the rows they count, so
 * the operator's counts and charts read a few hundred rows instead of millions. Three resolutions
 * share the table: `bucket_seconds` 60 (whole minutes), 3600 (whole hours) and 0 (all time, one
 * bucket). Each connection adds to rows of its own `slot` (its backend pid), so concurrent
 * transactions never wait on one counter row; `foldCounterSlots` (src/ops/maintenance/counters-fold.ts) later merges finished slots into
 * slot 0. A figure is the sum over slots.
 */
export const webhookEventCounts = pgTable(
  'webhook_event_counts',
  {
    bucketSeconds: integer().notNull(),
    bucketStart: timestamp({ withTimezone: true }).notNull(),
    provider: text().notNull(),
    eventType: text().notNull(),
    status: webhookEventStatus().notNull(),
    slot: integer().notNull(),
    n: bigint({ mode: 'number' }).notNull(),
  },
  (table) => [
    primaryKey({
      name: 'webhook_event_counts_pkey',
      columns: [table.bucketSeconds, table.bucketStart, table.provider, table.eventType, table.status, table.slot],
    }),
  ],
);

export const subscriptionStatuses = ['trialing', 'active', 'past_due', 'canceled', 'unpaid'] as const;
export type SubscriptionStatus = (typeof subscriptionStatuses)[number];
export const subscriptionStatus = pgEnum('subscription_status', subscriptionStatuses);

/** The example domain the handlers change. */
export const subscriptions = pgTable(
  'subscriptions',
  {
    externalId: text().primaryKey(),
    status: subscriptionStatus().notNull(),
    /** The sender's monotonic version of the resource (the contract's `provider_version`): older versions never overwrite newer. */
    providerVersion: bigint({ mode: 'number' }).notNull(),
    updatedAt: timestamp({ withTimezone: true }).notNull(),
  },
  (table) => [check('subscriptions_provider_version_nonnegative', sql`${table.providerVersion} >= 0`)],
);

/** What an operator acts on: an event, an outbox message, a sender or a destination (pause and resume). */
export const operatorActionTargetKind = pgEnum('operator_action_target_kind', [
  'event',
  'outbox',
  'sender',
  'destination',
]);

/** Audit of everything an operator did by hand (replay, retry, a bulk action, a pause, ...). */
export const operatorActions = pgTable(
  'operator_actions',
  {
    id: uuid().primaryKey().defaultRandom(),
    operator: text().notNull(),
    action: text().notNull(),
    targetKind: operatorActionTargetKind().notNull(),
    target: text().notNull(),
    beforeStatus: text(),
    afterStatus: text(),
    at: timestamp({ withTimezone: true }).notNull().defaultNow(),
    /** The bulk job an item's row belongs to: one action row for the job, one row per item it touched. */
    jobId: uuid(),
    /** What the action was given beyond its target: a bulk job's filter, a pause's duration and note. */
    detail: jsonb(),
  },
  (table) => [
    index('operator_actions_target_idx').on(table.targetKind, table.target, table.at),
    index('operator_actions_job_idx').on(table.jobId, table.at).where(sql`${table.jobId} is not null`),
  ],
);

/**
 * Every delivery of a stored event as the sender saw it: the first, each duplicate, each retry after
 * a failure, with the answer it got (and a delivery answered 503 before its event could be stored,
 * under the id it came with). A run of duplicates answered alike is one row with a repeat count. Bounded per event (the newest DELIVERY_LOG_CAP are kept) and removed
 * with the event by retention (src/inbox/delivery-log.ts). A delivery and its trace id are unique in practice; the key
 * includes both so that two log rows of one event never collide.
 */
export const webhookDeliveries = pgTable(
  'webhook_deliveries',
  {
    provider: text().notNull(),
    eventId: text().notNull(),
    deliveredAt: timestamp({ withTimezone: true }).notNull(),
    traceId: text().notNull(),
    /** The HTTP status the delivery was answered with. */
    statusCode: smallint().notNull(),
    /** The answer in words: completed, ignored, queued, parked, duplicate, failed, unavailable. */
    outcome: text().notNull(),
    /** From the body's arrival to the answer, in milliseconds. */
    durationMs: real().notNull(),
    /**
     * Further identical deliveries folded into this row: a `duplicate` answered with the same status
     * code right after this one (nothing else logged for the event in between). 0: this delivery only.
     */
    repeats: integer().notNull().default(0),
    /** When the newest of the folded deliveries arrived; null until the first repeat. */
    lastDeliveredAt: timestamp({ withTimezone: true }),
  },
  (table) => [
    primaryKey({
      name: 'webhook_deliveries_pkey',
      columns: [table.provider, table.eventId, table.deliveredAt, table.traceId],
    }),
    // Retention's walk over rows whose event is not kept (never stored, or kept only for its digest):
    // oldest first, so a purge reads the old end of the log instead of all of it.
    index('webhook_deliveries_delivered_at_idx').on(table.deliveredAt),
  ],
);

/**
 * Refused deliveries (404, 413, 415, 401, 400, 503) counted per whole minute, sender and reason. A
 * sender the service does not know is counted under one name, so a flood of made-up routes cannot
 * add rows faster than minutes pass.
 */
export const webhookRejectionCounts = pgTable(
  'webhook_rejection_counts',
  {
    bucketStart: timestamp({ withTimezone: true }).notNull(),
    provider: text().notNull(),
    reason: text().notNull(),
    n: bigint({ mode: 'number' }).notNull(),
  },
  (table) => [
    primaryKey({ name: 'webhook_rejection_counts_pkey', columns: [table.bucketStart, table.provider, table.reason] }),
  ],
);

/**
 * The most recent refused deliveries, a ring of a fixed number of slots: a new one takes the slot
 * after the last one written, so a flood cannot grow it. Never the body; headers with their
 * signatures and tokens redacted.
 */
export const webhookRejections = pgTable(
  'webhook_rejections',
  {
    slot: integer().primaryKey(),
    at: timestamp({ withTimezone: true }).notNull(),
    provider: text().notNull(),
    statusCode: smallint().notNull(),
    reason: text().notNull(),
    /** The field or the limit the delivery failed on, where there is one. */
    detail: text(),
    traceId: text(),
    headers: jsonb().notNull(),
  },
  (table) => [index('webhook_rejections_at_idx').on(table.at)],
);

/** Numbers the refused deliveries kept; a rejection's slot is its number modulo the ring's size. */
export const webhookRejectionNumber = pgSequence('webhook_rejection_number_seq');

/** Senders an operator paused: their deliveries are refused (503 + Retry-After) until resumed or `until`. */
export const senderPauses = pgTable('sender_pauses', {
  provider: text().primaryKey(),
  pausedAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
  pausedBy: text().notNull(),
  /** When the pause ends by itself; null until an operator resumes. */
  until: timestamp({ withTimezone: true }),
  note: text(),
});

export const bulkJobKinds = ['replay_events', 'retry_outbox', 'send_to_destination'] as const;
export type BulkJobKind = (typeof bulkJobKinds)[number];
export const bulkJobKind = pgEnum('bulk_job_kind', bulkJobKinds);

export const bulkJobStatuses = ['queued', 'running', 'done', 'cancelled', 'failed'] as const;
export type BulkJobStatus = (typeof bulkJobStatuses)[number];
export const bulkJobStatus = pgEnum('bulk_job_status', bulkJobStatuses);

/**
 * A bulk action by filter (replay events, retry outbox messages): a job that survives a restart. It
 * walks the rows its filter matched when it was created, in key order, in bounded batches; each batch
 * moves `position` in the same transaction as its changes, so a job resumed after a crash touches
 * every item once.
 */
export const bulkJobs = pgTable(
  'bulk_jobs',
  {
    id: uuid().primaryKey().defaultRandom(),
    kind: bulkJobKind().notNull(),
    status: bulkJobStatus().notNull().default('queued'),
    operator: text().notNull(),
    /** The filter as the operator gave it (the list's query parameters). */
    filter: jsonb().notNull(),
    /**
     * Items the selection holds: counted when the job is created, and again by its first batch, once
     * every transaction older than the job has ended; the job never takes rows that arrived after `createdAt`.
     */
    total: integer().notNull(),
    processed: integer().notNull().default(0),
    /** Items the action could not change (a replay that failed again, a message no longer dead). */
    failed: integer().notNull().default(0),
    /** The keyset position of the last item done; null before the first batch. */
    position: jsonb(),
    createdAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
    startedAt: timestamp({ withTimezone: true }),
    finishedAt: timestamp({ withTimezone: true }),
    cancelledBy: text(),
    lastError: varchar({ length: LAST_ERROR_MAX }),
    /** The runner's lease, as the relay's: an expired lease lets another runner resume the job. */
    lockedUntil: timestamp({ withTimezone: true }),
    lockedBy: text(),
  },
  (table) => [
    index('bulk_jobs_created_idx').on(table.createdAt),
    index('bulk_jobs_runnable_idx').on(table.createdAt).where(sql`${table.status} in ('queued', 'running')`),
  ],
);

/** The failed items a job keeps with their reasons; `bulk_jobs.failed` counts every one. */
export const JOB_FAILURES_KEPT = 100;

/**
 * Why a bulk job's items failed: the first JOB_FAILURES_KEPT of each job, the item (as
 * `operator_actions` names it: `provider/event_id`, or a message id) and the reason in words, written
 * in the transaction of the batch that took them. Bounded per job, so a job over a million failing
 * rows keeps a hundred examples and its count.
 */
export const bulkJobFailures = pgTable(
  'bulk_job_failures',
  {
    jobId: uuid().notNull(),
    /** A job's items are events (a replay) or messages (a retry). */
    targetKind: operatorActionTargetKind().$type<'event' | 'outbox'>().notNull(),
    target: text().notNull(),
    reason: varchar({ length: LAST_ERROR_MAX }).notNull(),
    at: timestamp({ withTimezone: true }).notNull().defaultNow(),
  },
  (table) => [primaryKey({ columns: [table.jobId, table.target] })],
);

export const outboxStatuses = ['pending', 'published', 'dead'] as const;
export type OutboxStatus = (typeof outboxStatuses)[number];
export const outboxStatus = pgEnum('outbox_status', outboxStatuses);

/**
 * Every message, one range of the (status, created_at) index per status: how a listing without a
 * filter of its own index (every message, a destination, a time window) finds them newest first,
 * merged, as the events' statusRanges. No index of creation time alone: each index is an entry more
 * in every message's insert and in each of its relay updates (decision 0038).
 */
export const outboxStatusRanges = oneRangePerStatus(outboxStatuses);

/**
 * Outbox messages by status, kept by triggers on outbox_messages (drizzle/0006_outbox_counts.sql)
 * in the transaction of each change, with one slot per connection as webhook_event_counts: the
 * relay's backlog in an outage is too many rows to count on every scrape.
 */
export const outboxMessageCounts = pgTable(
  'outbox_message_counts',
  {
    status: outboxStatus().notNull(),
    /** The messages' destination (outbox_messages.destination): each destination's pending and dead. */
    destination: text().notNull().default('default'),
    slot: integer().notNull(),
    n: bigint({ mode: 'number' }).notNull(),
  },
  (table) => [
    primaryKey({ name: 'outbox_message_counts_pkey', columns: [table.status, table.destination, table.slot] }),
  ],
);

/**
 * The transactional outbox: side effects written in the domain transaction, published later by the
 * relay with at-least-once delivery and a stable deduplication key.
 */
export const outboxMessages = pgTable(
  'outbox_messages',
  {
    /** A UUIDv7 the service makes (outbox/enqueue.ts messageRows); the random default serves rows written by SQL. */
    id: uuid().primaryKey().defaultRandom(),
    topic: text().notNull(),
    /** `provider:event_id:topic`; sent as Idempotency-Key so consumers can deduplicate. Unique (see below). */
    deduplicationKey: text().notNull(),
    payload: jsonb().notNull(),
    status: outboxStatus().notNull().default('pending'),
    createdAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
    availableAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
    publishedAt: timestamp({ withTimezone: true }),
    /** Failed publish outcomes only; a relay crash mid-publish counts nothing. */
    attempts: integer().notNull().default(0),
    lastError: varchar({ length: LAST_ERROR_MAX }),
    /** The relay lease: a message is held by one relay until this passes. */
    lockedUntil: timestamp({ withTimezone: true }),
    lockedBy: text(),
    /**
     * Where this row goes: a message fans out to one row per matching destination, each with its own
     * state, attempts and key. `default` is the one destination OUTBOX_TARGET_URL names.
     */
    destination: text().notNull().default('default'),
    /** W3C traceparent of the span that enqueued it, carried to every destination so consumers join the trace. */
    traceparent: text(),
  },
  (table) => [
    // The relay claims per destination, so one destination's due backlog is never walked by another's
    // claim. It replaced outbox_messages_pending_idx (available_at alone, drizzle/0011): no query
    // reads pending rows across destinations in due order any more.
    index('outbox_messages_destination_pending_idx')
      .on(table.destination, table.availableAt)
      .where(sql`${table.status} = 'pending'`),
    // The operator's listings, newest first: by status (every message is a merge of the three
    // statuses' ranges, outboxStatusRanges) and by topic.
    index('outbox_messages_status_idx').on(table.status, table.createdAt),
    index('outbox_messages_topic_created_idx').on(table.topic, table.createdAt),
    // The key's uniqueness (ON CONFLICT (deduplication_key) infers it) and an event's messages by
    // their key's prefix (`provider:event_id:`), whatever the collation, in one index: text_pattern_ops
    // compares bytes, which is text's equality too, and each index is an entry more in every insert
    // and in every `published` update (docs/benchmarks.md, where the intake stands).
    uniqueIndex('outbox_messages_deduplication_key_idx').on(table.deduplicationKey.op('text_pattern_ops')),
  ],
);

export const destinationCircuits = ['closed', 'open', 'half_open'] as const;
export type DestinationCircuit = (typeof destinationCircuits)[number];
export const destinationCircuit = pgEnum('destination_circuit', destinationCircuits);

/**
 * What the service knows of each configured destination beyond its configuration: whether an
 * operator paused it, and its circuit breaker (consecutive failures, when it opened, when to probe).
 * Shared by every relay process; a row appears the first time a destination is seen.
 */
export const outboxDestinations = pgTable('outbox_destinations', {
  name: text().primaryKey(),
  circuit: destinationCircuit().notNull().default('closed'),
  consecutiveFailures: integer().notNull().default(0),
  openedAt: timestamp({ withTimezone: true }),
  /** While open: when one probe may go out (half-open). */
  probeAt: timestamp({ withTimezone: true }),
  pausedAt: timestamp({ withTimezone: true }),
  pausedBy: text(),
  updatedAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
});
