// Reading database facts back, with plain SQL so the assertions do not share code with the product.
import type postgres from 'postgres';

export interface EventRow {
  provider: string;
  event_id: string;
  event_type: string;
  status: string;
  payload: unknown;
  completed_at: Date | null;
  attempt_count: number;
  last_error: string | null;
  content_digest: string | null;
}

const eventColumns = (sql: postgres.Sql) =>
  sql`provider, event_id, event_type, status::text as status, payload, completed_at, attempt_count, last_error,
    content_digest`;

export async function eventRows(sql: postgres.Sql): Promise<EventRow[]> {
  return sql<EventRow[]>`select ${eventColumns(sql)} from webhook_events order by received_at, event_id`;
}

export async function eventRow(sql: postgres.Sql, eventId: string, provider = 'acme'): Promise<EventRow | undefined> {
  const rows = await sql<EventRow[]>`select ${eventColumns(sql)} from webhook_events
    where provider = ${provider} and event_id = ${eventId}`;
  return rows[0];
}

/** Rows of one sender: everything deliveries to that route left behind. */
export async function senderRows(sql: postgres.Sql, provider: string): Promise<EventRow[]> {
  return sql<EventRow[]>`select ${eventColumns(sql)} from webhook_events where provider = ${provider}
    order by received_at, event_id`;
}

export async function countEvents(sql: postgres.Sql, eventId?: string): Promise<number> {
  const rows =
    eventId === undefined
      ? await sql<{ n: number }[]>`select count(*)::int as n from webhook_events`
      : await sql<{ n: number }[]>`select count(*)::int as n from webhook_events where event_id = ${eventId}`;
  return rows[0]?.n ?? 0;
}

export interface SubscriptionRow {
  external_id: string;
  status: string;
  provider_version: string;
  updated_at: Date;
}

export async function subscriptionRow(sql: postgres.Sql, externalId: string): Promise<SubscriptionRow | undefined> {
  const rows = await sql<SubscriptionRow[]>`select external_id, status::text as status, provider_version::text as
    provider_version, updated_at from subscriptions where external_id = ${externalId}`;
  return rows[0];
}

/** Resolves every waiter once `parties` of them have arrived: requests reach the insert together. */
export function barrier(parties: number): () => Promise<void> {
  let arrived = 0;
  let release: () => void = () => {};
  const open = new Promise<void>((resolve) => {
    release = resolve;
  });
  return () => {
    arrived += 1;
    if (arrived === parties) release();
    return open;
  };
}

/** A promise and the function that resolves it: a test holds a handler or a lock open until it says so. */
export function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve: () => void = () => {};
  const promise = new Promise<void>((done) => {
    resolve = done;
  });
  return { promise, resolve };
}

/**
 * A second connection holding a subscription's row lock (`select … for update` in an open
 * transaction), as a slow handler or an operator's session elsewhere would; resolves once it is held.
 */
export function holdSubscriptionLock(sql: postgres.Sql, externalId: string): Promise<{ release(): Promise<void> }> {
  return holdRowLock(sql, (tx) => tx`select 1 from subscriptions where external_id = ${externalId} for update`);
}

/** The same for an event's row, as an operator's open transaction or a stuck statement would hold it. */
export function holdEventLock(
  sql: postgres.Sql,
  eventId: string,
  provider = 'acme',
): Promise<{ release(): Promise<void> }> {
  return holdRowLock(
    sql,
    (tx) => tx`select 1 from webhook_events where provider = ${provider} and event_id = ${eventId} for update`,
  );
}

async function holdRowLock(
  sql: postgres.Sql,
  lock: (tx: postgres.TransactionSql) => Promise<unknown>,
): Promise<{ release(): Promise<void> }> {
  const taken = deferred();
  const released = deferred();
  const transaction = sql.begin(async (tx) => {
    await lock(tx);
    taken.resolve();
    await released.promise;
  });
  // A failed lock must not leave the caller waiting for `taken`.
  await Promise.race([taken.promise, transaction]);
  return {
    release: async () => {
      released.resolve();
      await transaction;
    },
  };
}

/**
 * Holds an EXCLUSIVE lock on webhook_events (reads go on, writes wait) until `release`: the claims of
 * every worker started meanwhile wait on it, and all go at the same moment once it is released.
 */
export async function holdInboxTable(sql: postgres.Sql) {
  const locked = deferred();
  const release = deferred();
  const holder = sql.begin(async (tx) => {
    await tx`lock table webhook_events in exclusive mode`;
    locked.resolve();
    await release.promise;
  });
  await locked.promise;
  return {
    /** Resolves once a statement of another session waits for the lock. */
    async waiter() {
      for (;;) {
        const [row] = await sql<{ n: number }[]>`select count(*)::int as n from pg_locks
          where not granted and relation = 'webhook_events'::regclass`;
        if ((row?.n ?? 0) > 0) return;
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    },
    async release() {
      release.resolve();
      await holder;
    },
  };
}

/** Backends of database `name` waiting on a lock: a worker's, say, blocked on a row lock a test holds. */
export async function lockWaitingBackends(sql: postgres.Sql, name: string): Promise<number[]> {
  const rows = await sql<{ pid: number }[]>`select pid from pg_stat_activity
    where datname = ${name} and wait_event_type = 'Lock'`;
  return rows.map((row) => row.pid);
}
