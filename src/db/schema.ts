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
    completedAt: timestamp({ withTimezone: true }),
    /** Failed applications; a redelivery that claims the row again counts nothing. */
    attemptCount: integer().notNull().default(0),
    lastError: varchar({ length: LAST_ERROR_MAX }),
  },
  (table) => [
    primaryKey({ columns: [table.provider, table.eventId] }),
    index('webhook_events_status_received_idx').on(table.status, table.receivedAt),
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
