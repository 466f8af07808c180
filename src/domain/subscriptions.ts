// The example domain: subscriptions kept in step with the sender. Every write is conditional, so
// replays, duplicates and out-of-order deliveries cannot move a subscription backwards.
//
// Changes made in one transaction in the same tick are written together: the group committer and the
// worker run a batch's handlers side by side, and each handler's change joins one statement (a
// DataLoader per transaction collects them) instead of costing a statement and a round trip of its
// own. The result is the same as applying them one after another in the order they were asked for.
import DataLoader from 'dataloader';
import { sql } from 'drizzle-orm';
import type { Executor } from '../db/client.ts';
import { executePrepared } from '../db/prepared.ts';
import type { SubscriptionStatus } from '../db/schema.ts';
import type { JsonValue } from '../lib/json.ts';
import type { DestinationRouting } from '../outbox/destinations.ts';
import { type MessageSource, messageRows, type OutgoingMessage } from '../outbox/enqueue.ts';
import { insertMessagesFrom } from '../outbox/message-rows.ts';

export interface SubscriptionChange {
  externalId: string;
  status: SubscriptionStatus;
  /** The sender's monotonic version of the resource (the `provider_version` column). */
  providerVersion: number;
  occurredAt: Date;
}

/** The outbox message to write if, and only if, the change changed the row. */
export interface Announcement {
  source: MessageSource;
  message: OutgoingMessage;
  /** The destinations it may go to; the one `default` destination when absent. */
  routing?: DestinationRouting;
}

interface PendingChange {
  change: SubscriptionChange;
  announcement: Announcement | undefined;
}

/** One row of the statement's input, as json_to_recordset reads it. */
interface ChangeRow {
  external_id: string;
  status: SubscriptionStatus;
  provider_version: number;
  updated_at: string;
  topic: string | null;
  /** A row per matching destination, with its message's id: empty when none matches (or nothing is announced). */
  routes: Array<{ id: string; destination: string; deduplication_key: string }>;
  payload: JsonValue;
  traceparent: string | null;
}

/**
 * Applies the change when it is newer than what is stored, and never revives a canceled
 * subscription (canceled is terminal at every sender we model). True when a row changed; the
 * announcement is written in the same statement, only then.
 */
export function applySubscriptionChange(
  db: Executor,
  change: SubscriptionChange,
  announcement?: Announcement,
): Promise<boolean> {
  // load() adds the change to this tick's batch, and resolves once its turn's statement has run.
  return batchedWritesFor(db).load({ change, announcement });
}

const batchedWrites = new WeakMap<Executor, DataLoader<PendingChange, boolean>>();

function batchedWritesFor(db: Executor): DataLoader<PendingChange, boolean> {
  let writer = batchedWrites.get(db);
  if (writer === undefined) {
    // No cache: two equal changes are two requests, each answered by its own turn.
    // Stryker disable next-line ObjectLiteral,BooleanLiteral: each load's key is a fresh object, so the default cache (by identity) never hits either
    writer = new DataLoader((pending) => applyInTurns(db, pending), { cache: false });
    batchedWrites.set(db, writer);
  }
  return writer;
}

/**
 * One statement per turn. An ON CONFLICT upsert may touch a row only once per statement, so a second
 * change of one subscription waits for the next turn: the later asker sees the earlier one's result.
 */
async function applyInTurns(db: Executor, pending: readonly PendingChange[]): Promise<boolean[]> {
  // Stryker disable next-line ArrayDeclaration,BooleanLiteral: every index goes through a turn and is assigned there
  const changed = new Array<boolean>(pending.length).fill(false);
  let waiting = pending.map((_, index) => index);
  while (waiting.length > 0) {
    const seen = new Set<string>();
    const turn: number[] = [];
    const later: number[] = [];
    for (const index of waiting) {
      const externalId = (pending[index] as PendingChange).change.externalId;
      (seen.has(externalId) ? later : turn).push(index);
      seen.add(externalId);
    }
    const written = await upsertChanges(
      db,
      turn.map((index) => pending[index] as PendingChange),
    );
    for (const index of turn) changed[index] = written.has((pending[index] as PendingChange).change.externalId);
    waiting = later;
  }
  return changed;
}

/** Upserts distinct subscriptions in key order, so concurrent batches wait instead of deadlocking. */
async function upsertChanges(db: Executor, pending: readonly PendingChange[]): Promise<Set<string>> {
  const rows = pending.map(changeRow);
  // One JSON parameter, not a VALUES list: the statement's text is the same for any batch, so it is
  // prepared once per connection (executePrepared), and no row's parameters are rendered one by one.
  const result = await executePrepared<{ external_id: string }>(
    db,
    sql`
    with input as (
      select * from json_to_recordset(${JSON.stringify(rows)}::json) as input(
        external_id text, status subscription_status, provider_version bigint, updated_at timestamptz,
        topic text, routes json, payload jsonb, traceparent text)
    ),
    changed as (
      insert into subscriptions (external_id, status, provider_version, updated_at)
      select external_id, status, provider_version, updated_at from input order by external_id
      on conflict (external_id) do update
        set status = excluded.status, provider_version = excluded.provider_version, updated_at = excluded.updated_at
        where subscriptions.provider_version < excluded.provider_version and subscriptions.status <> 'canceled'
      returning external_id
    ),
    announced as (${insertMessagesFrom(
      sql`input join changed using (external_id)
        cross join lateral json_to_recordset(input.routes) as route(id uuid, destination text, deduplication_key text)`,
    )})
    select external_id from changed`,
  );
  return new Set(result.map((row) => row.external_id));
}

function changeRow({ change, announcement }: PendingChange): ChangeRow {
  const rows =
    announcement === undefined ? [] : messageRows(announcement.source, announcement.message, announcement.routing);
  return {
    external_id: change.externalId,
    status: change.status,
    provider_version: change.providerVersion,
    updated_at: change.occurredAt.toISOString(),
    topic: announcement?.message.topic ?? null,
    routes: rows.map((row) => ({ id: row.id, destination: row.destination, deduplication_key: row.deduplicationKey })),
    // Nested, not a string: a jsonb column of json_to_recordset takes the JSON value as it is.
    payload: announcement === undefined ? null : announcement.message.payload,
    traceparent: announcement?.source.traceparent ?? null,
  };
}

/** The outbox message announcing a change that was applied (the topic consumers subscribe to). */
export function subscriptionChanged(change: SubscriptionChange): OutgoingMessage {
  return {
    topic: 'subscription.changed',
    payload: {
      external_id: change.externalId,
      status: change.status,
      provider_version: change.providerVersion,
      updated_at: change.occurredAt.toISOString(),
    },
  };
}
