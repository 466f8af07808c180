// Outbox facts read back with plain SQL, messages inserted with plain SQL, and a relay as the tests
// drive it: real database and publisher, with the clock, the jitter and the logs in the test's hands.
import { createHash, randomUUID } from 'node:crypto';
import type postgres from 'postgres';
import type { Database } from '../../src/db/client.ts';
import { createLogger } from '../../src/lib/logger.ts';
import { type HttpPost, httpPublisher, logPublisher, type Publisher } from '../../src/outbox/publishers/publisher.ts';
import {
  createRelay,
  type Relay,
  type RelayDeps,
  type RelayIsolation,
  type RelaySettings,
} from '../../src/outbox/relay.ts';
import { uniqueId } from './acme.ts';

export interface OutboxRow {
  id: string;
  topic: string;
  deduplication_key: string;
  payload: unknown;
  status: string;
  created_at: Date;
  available_at: Date;
  published_at: Date | null;
  attempts: number;
  last_error: string | null;
  locked_until: Date | null;
  locked_by: string | null;
}

const columns = (sql: postgres.Sql) =>
  sql`id::text as id, topic, deduplication_key, payload, status::text as status, created_at, available_at,
    published_at, attempts, last_error, locked_until, locked_by`;

/** A list rather than an array parameter: a client without fetched types (workerd's) sends arrays as text. */
export async function outboxRows(sql: postgres.Sql, ids?: readonly string[]): Promise<OutboxRow[]> {
  if (ids?.length === 0) return [];
  return ids === undefined
    ? sql<OutboxRow[]>`select ${columns(sql)} from outbox_messages order by created_at, id`
    : sql<OutboxRow[]>`select ${columns(sql)} from outbox_messages where id in ${sql(ids)} order by created_at, id`;
}

export async function outboxRow(sql: postgres.Sql, id: string): Promise<OutboxRow | undefined> {
  return (await outboxRows(sql, [id]))[0];
}

export async function outboxRowsByKeyPrefix(sql: postgres.Sql, prefix: string): Promise<OutboxRow[]> {
  return sql<OutboxRow[]>`select ${columns(sql)} from outbox_messages
    where starts_with(deduplication_key, ${prefix}) order by created_at, id`;
}

/** The body the contract fixes for a row, as every publisher sends it (a broker's consumer reads it back). */
export const contractBody = (row: OutboxRow) => ({
  id: row.id,
  topic: row.topic,
  deduplication_key: row.deduplication_key,
  payload: row.payload,
  created_at: row.created_at.toISOString(),
});

export interface NewMessage {
  topic?: string;
  payload?: unknown;
  status?: 'pending' | 'published' | 'dead';
  attempts?: number;
  availableAt?: Date;
  createdAt?: Date;
  /** The messages' deduplication keys, one per message (`count` must match); else keys of their own. */
  keys?: readonly string[];
}

/** Inserts `count` messages with keys of their own; answers their ids in creation order. */
export async function insertMessages(sql: postgres.Sql, count: number, overrides: NewMessage = {}): Promise<string[]> {
  const run = uniqueId('test');
  const created = overrides.createdAt ?? new Date(Date.now() - 60_000);
  const rows = Array.from({ length: count }, (_, index) => ({
    id: randomUUID(),
    topic: overrides.topic ?? 'subscription.changed',
    deduplication_key: overrides.keys?.[index] ?? `acme:${run}_${index}:${overrides.topic ?? 'subscription.changed'}`,
    payload: sql.json((overrides.payload ?? { n: index }) as postgres.JSONValue),
    status: overrides.status ?? 'pending',
    attempts: overrides.attempts ?? 0,
    // One millisecond apart, so "oldest first" has one answer.
    created_at: new Date(created.getTime() + index),
    available_at: overrides.availableAt ?? new Date(created.getTime() + index),
  }));
  await sql`insert into outbox_messages ${sql(rows)}`;
  return rows.map((row) => row.id);
}

/**
 * Deduplication keys built from event ids senders have been seen to send, each unique to `run`: CR/LF
 * (a header injection), 300 characters (over AMQP's short string), emoji, `é` (Latin-1, but not
 * ASCII), control characters, a space, and an id that makes the key look like a digest; plus one
 * plain key that must travel as it is.
 */
export function hostileKeys(run: string): string[] {
  return [
    `acme:${run}_plain:subscription.changed`,
    `acme:${run}_cr\r\nX-Injected: 1:subscription.changed`,
    `acme:${run}_${'x'.repeat(300)}:subscription.changed`,
    `acme:${run}_${'\u{1F600}'.repeat(100)}:subscription.changed`,
    `acme:${run}_caf\u00e9:subscription.changed`,
    `acme:${run}_\u0001\u001f\u007f\t:subscription.changed`,
    `acme:${run} spaced:subscription.changed`,
  ];
}

/**
 * The transport form docs/outbox-brokers.md documents, written again from the page (not imported),
 * so the test holds the code to what consumers were told: the key itself when it is 1..200
 * characters 0x21-0x7E and does not start with `sha256:`, else `sha256:` + unpadded base64url
 * SHA-256 of its UTF-8 bytes.
 */
export function documentedTransportKey(key: string): string {
  if (/^[\x21-\x7e]{1,200}$/.test(key) && !key.startsWith('sha256:')) return key;
  return `sha256:${createHash('sha256').update(key, 'utf8').digest('base64url')}`;
}

export interface OperatorActionRow {
  operator: string;
  action: string;
  target_kind: string;
  target: string;
  before_status: string | null;
  after_status: string | null;
  at: Date;
}

export async function operatorActionRows(sql: postgres.Sql, target: string): Promise<OperatorActionRow[]> {
  return sql<OperatorActionRow[]>`select operator, action, target_kind::text as target_kind, target, before_status,
    after_status, at from operator_actions where target = ${target} order by at`;
}

export const TEST_RELAY_SETTINGS: RelaySettings = {
  maxAttempts: 5,
  backoff: { baseMs: 1000, maxMs: 60_000 },
  leaseMs: 30_000,
  timeoutMs: 2_000,
  batchSize: 50,
  concurrency: 8,
  batchesInFlight: 2,
  budgetMs: 20_000,
};

/** A breaker no test's failures reach. */
export const NEVER_OPENS: RelayIsolation = { breaker: { failures: 1_000_000_000, cooloffMs: 1000 } };

export interface TestRelay {
  relay: Relay;
  logs: string[];
  now(): number;
  setNow(ms: number): void;
  advance(ms: number): void;
  setRandom(value: number): void;
}

/** A relay on the real clock's "now" (enqueued rows use the database's now()), moved only by the test. */
export function buildTestRelay(
  db: Database,
  options: {
    target?: string;
    post?: HttpPost;
    publisher?: Publisher;
    settings?: Partial<RelaySettings>;
    id?: string;
    metrics?: RelayDeps['metrics'];
    /** The destination it drains: `default` unless a test names another. */
    destination?: string;
    tracer?: RelayDeps['tracer'];
    /**
     * The destination's rate limit and breaker. Absent: no rate limit and a breaker that never opens,
     * so a test of retries is not cut short by the circuit (test/outbox-isolation.test.ts tests it).
     */
    isolation?: RelayIsolation;
  } = {},
): TestRelay {
  let now = Date.now();
  let random = 0.5;
  const logs: string[] = [];
  const logger = createLogger({ level: 'debug', now: () => new Date(now), write: (line) => logs.push(line) });
  const clock = () => now;
  const publisher =
    options.publisher ??
    (options.target === undefined
      ? logPublisher(logger)
      : httpPublisher({ url: options.target, clock, post: options.post }));
  const relay = createRelay({
    db,
    destination: options.destination ?? 'default',
    publisher,
    clock,
    // A paced relay's waits move this clock instead of the real one.
    sleep: async (ms) => {
      now += ms;
    },
    newId: () => options.id ?? uniqueId('relay'),
    random: () => random,
    logger,
    ...(options.metrics === undefined ? {} : { metrics: options.metrics }),
    ...(options.tracer === undefined ? {} : { tracer: options.tracer }),
    settings: { ...TEST_RELAY_SETTINGS, ...options.settings },
    isolation: options.isolation ?? NEVER_OPENS,
  });
  return {
    relay,
    logs,
    now: () => now,
    setNow: (ms) => {
      now = ms;
    },
    advance: (ms) => {
      now += ms;
    },
    setRandom: (value) => {
      random = value;
    },
  };
}
