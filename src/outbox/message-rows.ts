// The one owner of every write to `outbox_messages`, with the table's life in one place:
//
// | from               | to                          | by                          | statement                        |
// | ------------------ | --------------------------- | --------------------------- | -------------------------------- |
// | (none)             | pending                     | a handler, in its event's transaction | insertMessages, insertMessagesFrom |
// | (none)             | pending                     | a send_to_destination job's batch | copyMessages           |
// | pending            | pending, leased             | relay                       | claimMessagesStatement / claimMessages   |
// | pending, leased    | published, pending (retry), dead | relay                  | recordOutcomes                   |
// | dead               | pending (attempts 0)        | operator retry              | resurrectDead                    |
//
// Why a message is published at least once and never marked twice: the insert is keyed on its
// deduplication key (ON CONFLICT DO NOTHING), a claim takes rows with FOR UPDATE SKIP LOCKED under a
// lease, and every later write by the relay is guarded on that lease and on `pending`, so a relay
// whose lease expired (and whose rows another relay took) changes nothing.
import { and, eq, inArray, type SQL, sql } from 'drizzle-orm';
import type { Database, Executor } from '../db/client.ts';
import { claimCandidates, claimInQueueOrder, type Lease, leaseCleared, leaseValues } from '../db/lease.ts';
import { executePrepared } from '../db/prepared.ts';
import { type OutboxStatus, outboxMessages } from '../db/schema.ts';
import { type IdGenerator, newTimeOrderedId } from '../lib/clock.ts';
import type { JsonValue } from '../lib/json.ts';
import type { OutboxMessage } from './publishers/publisher.ts';
import { carriedAsIs, transportKey } from './transport-key.ts';

/** A message as it is written for one destination: its topic, its key there and its payload. */
export interface NewMessage {
  /** Made by the service (a UUIDv7, time-ordered): unused when the key exists already. */
  id: string;
  topic: string;
  destination: string;
  deduplicationKey: string;
  payload: JsonValue;
  /** The enqueuing span's W3C traceparent; null when there was none. */
  traceparent?: string | null;
}

const newRow = (message: NewMessage) =>
  sql`${message.id}::uuid, ${message.topic}, ${message.destination}, ${message.deduplicationKey}, ${JSON.stringify(message.payload)}::jsonb, ${message.traceparent ?? null}`;

/**
 * Inserts each row unless its key exists already; the number written. A SQL template rather than
 * the insert builder: it runs inside every applied event's transaction, nearly always for one row,
 * so one prepared statement serves every row (a fan-out to several destinations runs it again).
 */
export async function insertMessages(db: Executor, messages: readonly NewMessage[]): Promise<number> {
  let written = 0;
  for (const message of messages) {
    const inserted = await executePrepared<{ id: string }>(
      db,
      sql`
      insert into outbox_messages (id, topic, destination, deduplication_key, payload, traceparent)
      values (${newRow(message)})
      on conflict (deduplication_key) do nothing
      returning id`,
    );
    written += inserted.length;
  }
  return written;
}

/**
 * The INSERT of the messages `rows` holds (a FROM clause with `id`, `topic`, `destination`,
 * `deduplication_key`, `payload` and `traceparent` columns, a row per destination), to embed in a larger statement:
 * a domain write and its announcements then cost one round trip, and `rows` can name only what the
 * write changed, so nothing else is announced.
 */
export function insertMessagesFrom(rows: SQL): SQL {
  return sql`insert into outbox_messages (id, topic, destination, deduplication_key, payload, traceparent)
    select id, topic, destination, deduplication_key, payload, traceparent from ${rows}
    on conflict (deduplication_key) do nothing`;
}

/** One message to copy: the stored row it comes from and the key of its copy. */
export interface MessageCopy {
  from: string;
  deduplicationKey: string;
}

/**
 * A copy of each stored row for `destination`, with the key given (same topic, payload and
 * traceparent; pending, no attempts) unless that key exists already; answers the copies written.
 * The payload goes from row to row inside PostgreSQL, so its numbers stay as stored.
 */
export async function copyMessages(
  tx: Executor,
  copies: readonly MessageCopy[],
  destination: string,
  newId: IdGenerator = newTimeOrderedId,
): Promise<Array<{ id: string; from: string }>> {
  if (copies.length === 0) return [];
  const sources = copies.map((copy) => ({ id: newId(), from_id: copy.from, key: copy.deduplicationKey }));
  const rows = await tx.execute<{ id: string; from: string }>(sql`
    with source as (
      select c.id, m.topic, m.payload, m.traceparent, c.key, c.from_id
      from jsonb_to_recordset(${JSON.stringify(sources)}::jsonb) as c(id uuid, from_id uuid, key text)
      join outbox_messages m on m.id = c.from_id
    ), written as (
      insert into outbox_messages (id, topic, destination, deduplication_key, payload, traceparent)
      select id, topic, ${destination}, key, payload, traceparent from source
      on conflict (deduplication_key) do nothing
      returning id, deduplication_key
    )
    select written.id::text as id, source.from_id::text as "from"
    from written join source on source.key = written.deduplication_key`);
  return [...rows];
}

/** A message the relay claimed, with its failed publishes so far. */
export type ClaimedMessage = OutboxMessage & { failures: number };

/** A message a batch did not publish: retried, dead, or given back unstarted. */
export interface OutcomeRow {
  id: string;
  status: Exclude<OutboxStatus, 'published'>;
  /** Failures this outcome adds: 1 for a failed publish, 0 otherwise (a crash or a release counts nothing). */
  added_failures: 0 | 1;
  available_at: string | null;
  last_error: string | null;
}

export function outcomeRow(
  id: string,
  status: OutcomeRow['status'],
  fields: Partial<Omit<OutcomeRow, 'id' | 'status'>> = {},
): OutcomeRow {
  return { id, status, added_failures: 0, available_at: null, last_error: null, ...fields };
}

/** What a batch's publishes came to. */
export interface BatchOutcomes {
  /** The ids the target acknowledged: usually the whole batch. */
  published: readonly string[];
  /** When the batch's publishes had all settled: the published messages' published_at. */
  publishedAt: Date;
  others: readonly OutcomeRow[];
}

/**
 * A destination's claiming UPDATE, built on `db` (a claim transaction's): exported so its plan can be
 * checked. Each destination has a claim of its own (outbox_messages_destination_pending_idx walks
 * one destination's due rows in order), so one destination's backlog never delays another's.
 */
export function claimMessagesStatement(db: Executor, destination: string, lease: Lease, dueBy: Date, limit: number) {
  const table = outboxMessages;
  const candidates = claimCandidates(db, {
    table,
    key: { id: table.id },
    where: sql`${eq(table.status, 'pending')} and ${eq(table.destination, destination)}`,
    lease,
    dueBy,
    limit,
  });
  // `= any(array(…))` rather than `in (…)`: the planner would join the candidates to the table by
  // hashing a sequential scan of all of it (published rows included) on every claim; an array of
  // ids leaves only lookups in the primary key, so a claim costs its batch, not the table.
  return db.update(table).set(leaseValues(lease)).where(sql`${table.id} = any(array(${candidates}))`).returning({
    id: table.id,
    topic: table.topic,
    deduplicationKey: table.deduplicationKey,
    payload: table.payload,
    createdAt: table.createdAt,
    traceparent: table.traceparent,
    failures: table.attempts,
  });
}

/**
 * The relay's hot statements are query builders given a name, which is how Drizzle prepares one
 * (`executePrepared` does the same for SQL templates): parsed and planned once per connection instead
 * of a Parse/Describe round trip and a plan on every batch. Their text is the same for any batch.
 */
const CLAIM_STATEMENT = 'outbox_claim';
const PUBLISHED_STATEMENT = 'outbox_published';
const OTHERS_STATEMENT = 'outbox_outcomes';

export async function claimMessages(
  db: Database,
  destination: string,
  lease: Lease,
  dueBy: Date,
  limit: number,
): Promise<ClaimedMessage[]> {
  const rows = await claimInQueueOrder(db, (tx) =>
    claimMessagesStatement(tx, destination, lease, dueBy, limit).prepare(CLAIM_STATEMENT).execute(),
  );
  // The payload column holds JSON values only (its inserts stringify one), so the rows are taken as
  // they are. Each gets its key's transport form once here, so a publisher never hashes (and the
  // digest, which is async, costs nothing for the printable keys nearly all are).
  const claimed = await Promise.all(
    rows.map((row) => {
      const message = row as Omit<ClaimedMessage, 'transportKey'>;
      return carriedAsIs(message.deduplicationKey)
        ? { ...message, transportKey: message.deduplicationKey }
        : transportKey(message.deduplicationKey).then((key) => ({ ...message, transportKey: key }));
    }),
  );
  // Claimed rows come back in no particular order; publish oldest first.
  return claimed.sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime());
}

/**
 * A batch's outcomes: the published ids in one statement (a single text parameter, not a row each),
 * the rest, when there are any, in another. Both are guarded on our lease: a row another relay
 * claimed after our lease expired is theirs now, and a row an operator changed is left as they left
 * it.
 */
export async function recordOutcomes(db: Database, owner: string, outcomes: BatchOutcomes): Promise<void> {
  await Promise.all([
    markPublished(db, owner, outcomes.published, outcomes.publishedAt),
    recordOthers(db, owner, outcomes.others),
  ]);
}

const heldBy = (owner: string) => and(eq(outboxMessages.lockedBy, owner), eq(outboxMessages.status, 'pending'));

/**
 * The published ids' update, joined to the ids (one text parameter, unnested) rather than testing
 * `id = any(ids)`: prepared, it is planned once for every batch, and that generic plan read the
 * pending messages through their index and tested each against the whole array, a batch's size times
 * the backlog (45-85 ms a batch of 500 with 4,000 pending, as much PostgreSQL time per sync event
 * as every other statement together; docs/benchmarks.md). Joined, each pending row is one hash probe. Exported for its plan's test.
 */
export function markPublishedStatement(db: Executor, owner: string, ids: readonly string[], at: Date) {
  const m = outboxMessages;
  return db
    .update(m)
    .set({ status: 'published', publishedAt: at, ...leaseCleared })
    .from(sql`unnest(string_to_array(${ids.join(',')}, ',')::uuid[]) as published(id)`)
    .where(and(sql`${m.id} = published.id`, heldBy(owner)));
}

async function markPublished(db: Database, owner: string, ids: readonly string[], at: Date): Promise<void> {
  // Stryker disable next-line ConditionalExpression: an UPDATE over no ids changes nothing; the guard only saves a round trip
  if (ids.length === 0) return;
  await markPublishedStatement(db, owner, ids, at).prepare(PUBLISHED_STATEMENT).execute();
}

async function recordOthers(db: Database, owner: string, rows: readonly OutcomeRow[]): Promise<void> {
  // Stryker disable next-line ConditionalExpression: an UPDATE over no rows changes nothing; the guard only saves a round trip
  if (rows.length === 0) return;
  const m = outboxMessages;
  await db
    .update(m)
    .set({
      status: sql`o.status`,
      attempts: sql`${m.attempts} + o.added_failures`,
      availableAt: sql`coalesce(o.available_at, ${m.availableAt})`,
      lastError: sql`coalesce(o.last_error, ${m.lastError})`,
      ...leaseCleared,
    })
    .from(
      sql`jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) as o(
        id uuid, status outbox_status, added_failures int, available_at timestamptz, last_error text)`,
    )
    .where(and(sql`${m.id} = o.id`, heldBy(owner)))
    .prepare(OTHERS_STATEMENT)
    .execute();
}

/**
 * Dead -> pending with attempts 0, due at `now` and no lease; answers the ids it moved. Rows in any
 * other state are left alone.
 */
export async function resurrectDead(tx: Executor, ids: readonly string[], now: Date): Promise<string[]> {
  const table = outboxMessages;
  const rows = await tx
    .update(table)
    .set({ status: 'pending', attempts: 0, availableAt: now, ...leaseCleared })
    .where(and(inArray(table.id, [...ids]), eq(table.status, 'dead')))
    .returning({ id: table.id });
  return rows.map((row) => row.id);
}
