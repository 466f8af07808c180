// The database schema, in TypeScript. drizzle-kit generates the SQL in drizzle/ from this file;
// nothing else creates tables.
import { sql } from 'drizzle-orm';
import {
  bigint,
  check,
  index,
  integer,
  jsonb,
  pgEnum,
  pgTable,
  primaryKey,
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

/** The inbox: one row per provider event; the primary key is the concurrency gate. */
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
    /** When the provider says the event happened (signed, where the scheme signs it); handlers need it on replay. */
    occurredAt: timestamp({ withTimezone: true }),
    completedAt: timestamp({ withTimezone: true }),
    /** Failed applications; a redelivery that takes a failed row back counts nothing. */
    attemptCount: integer().notNull().default(0),
    lastError: varchar({ length: LAST_ERROR_MAX }),
    /**
     * SHA-256 (hex) of the signed bytes, for schemes that sign neither their delivery id nor a time
     * (GitHub, Shopify): the same signed body is a duplicate whatever id it arrives under.
     */
    contentDigest: text(),
    /** Async mode: when the worker may next try this row (retry backoff). */
    availableAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
    /** Async mode: the worker lease; an expired lease makes the row claimable again. */
    lockedUntil: timestamp({ withTimezone: true }),
    lockedBy: text(),
  },
  (table) => [
    primaryKey({ columns: [table.provider, table.eventId] }),
    index('webhook_events_status_received_idx').on(table.status, table.receivedAt),
    uniqueIndex('webhook_events_provider_content_digest_idx')
      .on(table.provider, table.contentDigest)
      .where(sql`${table.contentDigest} is not null`),
    index('webhook_events_claimable_idx')
      .on(table.availableAt)
      .where(sql`${table.status} in ('received', 'processing', 'failed')`),
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
    /** The provider's monotonic version of the resource: older versions never overwrite newer. */
    providerVersion: bigint({ mode: 'number' }).notNull(),
    updatedAt: timestamp({ withTimezone: true }).notNull(),
  },
  (table) => [check('subscriptions_provider_version_nonnegative', sql`${table.providerVersion} >= 0`)],
);

export const operatorActionTargetKind = pgEnum('operator_action_target_kind', ['event', 'outbox']);

/** Audit of everything an operator did by hand (replay, retry, ...). */
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
  },
  (table) => [index('operator_actions_target_idx').on(table.targetKind, table.target, table.at)],
);

export const outboxStatuses = ['pending', 'published', 'dead'] as const;
export type OutboxStatus = (typeof outboxStatuses)[number];
export const outboxStatus = pgEnum('outbox_status', outboxStatuses);

/**
 * The transactional outbox: side effects written in the domain transaction, published later by the
 * relay with at-least-once delivery and a stable deduplication key.
 */
export const outboxMessages = pgTable(
  'outbox_messages',
  {
    id: uuid().primaryKey().defaultRandom(),
    topic: text().notNull(),
    /** `provider:event_id:topic`; sent as Idempotency-Key so consumers can deduplicate. */
    deduplicationKey: text().notNull().unique('outbox_messages_deduplication_key_unique'),
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
  },
  (table) => [
    index('outbox_messages_pending_idx').on(table.availableAt).where(sql`${table.status} = 'pending'`),
    index('outbox_messages_status_idx').on(table.status, table.createdAt),
  ],
);
