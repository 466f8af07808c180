// What an operator reads about the outbox's destinations (admin API, CLI `destinations list`, the
// dashboard's Destinations page and /metrics): the configured destinations (the only names shown,
// so a row left in outbox_destinations by a removed destination is never listed), each with a
// redacted target, its filters and settings, its circuit and pause (outbox_destinations; no row yet
// is a closed circuit, not paused), its backlog (the outbox counters), a recent publish rate, and while
// it is not healthy why its messages wait (its newest failure, read from its pending messages: the
// table has no column for it).
import { sql } from 'drizzle-orm';
import type { Executor } from '../../db/client.ts';
import { type DestinationCircuit, destinationCircuits } from '../../db/schema.ts';
import { isoOrNull } from '../../lib/clock.ts';
import type { GaugeSample } from '../../lib/metrics.ts';
import {
  type Destination,
  type DestinationRouting,
  type DestinationSettings,
  queueBindingOf,
} from '../../outbox/destinations.ts';
import { countOutboxMessagesByDestination } from '../../outbox/stats.ts';
import { parseOutboxTarget } from '../../outbox/target.ts';

/** What an operator sees first: a pause wins over the circuit (nothing is sent either way). */
export const destinationStates = ['healthy', 'open', 'half_open', 'paused'] as const;
export type DestinationState = (typeof destinationStates)[number];

/**
 * Where a destination publishes, without anything secret: the scheme, the host (no user or password)
 * and what names the broker's stream, exchange or Queues binding. An HTTP target's path and query are
 * left out: webhook URLs often carry their token there.
 */
export interface RedactedTarget {
  scheme: string;
  host: string | null;
  stream?: string;
  exchange?: string;
  binding?: string;
}

export interface DestinationView {
  name: string;
  /**
   * The publisher: http, nats, amqp, redis, queue, or log when no target is configured (the Worker's
   * `default` then publishes to its OUTBOX_QUEUE binding if it has one: bindings are not seen here).
   */
  kind: string;
  target: RedactedTarget;
  filters: { topics: readonly string[] | null; senders: readonly string[] | null; types: readonly string[] | null };
  settings: DestinationSettings;
  state: DestinationState;
  circuit: DestinationCircuit;
  consecutiveFailures: number;
  openedAt: Date | null;
  probeAt: Date | null;
  pausedAt: Date | null;
  pausedBy: string | null;
  backlog: { pending: number; dead: number };
  /** Messages published per minute over the last RATE_WINDOW_MINUTES (see recentPublishes). */
  publishedPerMinute: number;
  /**
   * While its circuit is not closed or it has failures in a row: the newest failure among its pending
   * messages (lastFailures), else null.
   */
  lastError: string | null;
  /** Why its pending messages wait, one sentence (waitingReason); null when healthy. */
  waiting: string | null;
}

/** The minutes the publish rate is averaged over. */
export const RATE_WINDOW_MINUTES = 5;
/**
 * How far back by creation the rate looks, and how many published rows it reads at most: no index
 * leads with published_at, so a created_at index bounds the read (newest first). A message created
 * earlier than this and published within the window is not counted (a long outage's backlog
 * draining shows as a falling backlog rather than as a rate).
 */
const RATE_LOOKBACK_MINUTES = 60;
const RATE_ROWS_READ_MAX = 50_000;

export function redactedTarget(url: string | undefined): { kind: string; target: RedactedTarget } {
  if (url === undefined) return { kind: 'log', target: { scheme: 'log', host: null } };
  const binding = queueBindingOf(url);
  if (binding !== undefined) return { kind: 'queue', target: { scheme: 'queue', host: null, binding } };
  // The configuration was checked at start-up; a target that no longer parses shows its kind only.
  let parsed: ReturnType<typeof parseOutboxTarget>;
  try {
    parsed = parseOutboxTarget(url);
  } catch {
    return { kind: 'unknown', target: { scheme: 'unknown', host: null } };
  }
  const hostOf = (text: string) => {
    const address = new URL(text);
    return { scheme: address.protocol.slice(0, -1), host: address.host };
  };
  switch (parsed.kind) {
    case 'http':
      return { kind: 'http', target: hostOf(parsed.url) };
    case 'nats':
      return { kind: 'nats', target: { ...hostOf(parsed.server), stream: parsed.stream } };
    case 'amqp':
      return { kind: 'amqp', target: { ...hostOf(parsed.url), exchange: parsed.exchange } };
    case 'redis':
      return { kind: 'redis', target: { ...hostOf(parsed.url), stream: parsed.stream } };
  }
}

/** One line for a table or a page: `nats://broker:4222 stream ORDERS`. */
export function targetText(target: RedactedTarget): string {
  const where = target.host === null ? target.scheme : `${target.scheme}://${target.host}`;
  const named = [
    target.stream === undefined ? undefined : `stream ${target.stream}`,
    target.exchange === undefined ? undefined : `exchange ${target.exchange}`,
    target.binding === undefined ? undefined : `binding ${target.binding}`,
  ].filter((part) => part !== undefined);
  return [where, ...named].join(' ');
}

export function stateOf(row: { circuit: DestinationCircuit; pausedAt: Date | null } | undefined): DestinationState {
  if (row === undefined) return 'healthy';
  if (row.pausedAt !== null) return 'paused';
  return row.circuit === 'closed' ? 'healthy' : row.circuit;
}

/** A destination's facts that say why its messages wait. */
export type WaitFacts = Pick<
  DestinationView,
  'state' | 'consecutiveFailures' | 'openedAt' | 'probeAt' | 'pausedAt' | 'pausedBy' | 'lastError'
>;

/** A time as an operator reads it in one sentence: `2026-12-04 03:12:07 UTC`. */
const utc = (at: Date) => `${at.toISOString().slice(0, 19).replace('T', ' ')} UTC`;

/**
 * Why a destination's pending messages wait, one sentence for every view (the overview's banner,
 * the Destinations page, `destinations list`, a bulk retry's warning, a pending message's
 * `waiting`): `circuit open since …, 3 failures in a row, last: network ECONNREFUSED 127.0.0.1:9;
 * next probe at …`. Null when it is healthy.
 */
export function waitingReason(facts: WaitFacts): string | null {
  const last = facts.lastError === null ? '' : `, last: ${facts.lastError}`;
  const failures = `${facts.consecutiveFailures} failure${facts.consecutiveFailures === 1 ? '' : 's'} in a row`;
  const since = (at: Date | null) => (at === null ? '' : ` since ${utc(at)}`);
  switch (facts.state) {
    case 'healthy':
      return null;
    case 'paused':
      return `paused${since(facts.pausedAt)}${facts.pausedBy === null ? '' : ` by ${facts.pausedBy}`}: messages wait until it is resumed`;
    case 'open':
      return `circuit open${since(facts.openedAt)}, ${failures}${last}; messages wait for the probe${facts.probeAt === null ? '' : ` at ${utc(facts.probeAt)}`}`;
    case 'half_open':
      return `circuit half-open${since(facts.openedAt)}, ${failures}${last}; one probe is out, messages wait for its answer`;
  }
}

/** A destination's row (none yet: healthy) as the facts its state and reason are made of. */
function factsOf(row: DestinationRow | undefined, failures: ReadonlyMap<string, string>): WaitFacts {
  return {
    state: stateOf(row === undefined ? undefined : { circuit: row.circuit, pausedAt: row.paused_at }),
    consecutiveFailures: row?.consecutive_failures ?? 0,
    openedAt: row?.opened_at ?? null,
    probeAt: row?.probe_at ?? null,
    pausedAt: row?.paused_at ?? null,
    pausedBy: row?.paused_by ?? null,
    lastError: row === undefined ? null : (failures.get(row.name) ?? null),
  };
}

/**
 * The newest failure (by when it is due again) among each named destination's pending messages: the
 * relay writes every failure, and every message it gives back while the target is out of reach, with
 * `available_at` at the next try, so the newest is at the end of the destination's pending index.
 * Asked only for destinations whose circuit is not closed, whose messages the relay is not claiming:
 * no newer message without an error can pile up after the last probe's.
 */
async function lastFailures(db: Executor, names: readonly string[]): Promise<Map<string, string>> {
  if (names.length === 0) return new Map();
  const rows = await db.execute<{ name: string; last_error: string | null }>(sql`
    select d.name, (select m.last_error from outbox_messages m
        where m.destination = d.name and m.status = 'pending' and m.last_error is not null
        order by m.available_at desc limit 1) as last_error
    from (values ${sql.join(
      names.map((name) => sql`(${name}::text)`),
      sql`, `,
    )}) as d(name)`);
  return new Map(rows.flatMap((row) => (row.last_error === null ? [] : [[row.name, row.last_error]])));
}

/**
 * Why the pending messages among `messages` wait, by their destination: one read of those
 * destinations' rows (and of the newest failure of those not healthy). A destination absent from the
 * answer is healthy: its pending messages are due, or waiting for their own retry (`available_at`).
 */
export async function destinationWaits(
  db: Executor,
  messages: readonly { status: string; destination: string }[],
): Promise<Map<string, string>> {
  const names = [...new Set(messages.filter((m) => m.status === 'pending').map((m) => m.destination))];
  const rows = [...(await destinationRows(db, names)).values()].filter(
    (row) => row.paused_at !== null || row.circuit !== 'closed',
  );
  const failures = await lastFailures(
    db,
    rows.filter((row) => row.circuit !== 'closed').map((row) => row.name),
  );
  return new Map(
    rows.flatMap((row) => {
      const waiting = waitingReason(factsOf(row, failures));
      return waiting === null ? [] : [[row.name, waiting] as const];
    }),
  );
}

/** A message's `waiting` (the admin API's, the dashboard's): its destination's reason while it is pending. */
export function waitingOf(
  message: { status: string; destination: string },
  waits: ReadonlyMap<string, string>,
): string | null {
  return message.status === 'pending' ? (waits.get(message.destination) ?? null) : null;
}

/** The same as a list's last error falls back to it, for a message that has none of its own: `waiting: …`. */
export function waitingNote(
  message: { status: string; destination: string },
  waits: ReadonlyMap<string, string>,
): string | null {
  const waiting = waitingOf(message, waits);
  return waiting === null ? null : `waiting: ${waiting}`;
}

/** True when `name` is a configured destination: the only values a destination filter takes. */
export function isConfiguredDestination(routing: DestinationRouting, name: string): boolean {
  return routing.destinations.some((destination) => destination.name === name);
}

type DestinationRow = {
  name: string;
  circuit: DestinationCircuit;
  consecutive_failures: number;
  opened_at: Date | null;
  probe_at: Date | null;
  paused_at: Date | null;
  paused_by: string | null;
};

async function destinationRows(db: Executor, names: readonly string[]): Promise<Map<string, DestinationRow>> {
  if (names.length === 0) return new Map();
  const rows = await db.execute<DestinationRow>(sql`
    select name, circuit::text as circuit, consecutive_failures, opened_at, probe_at, paused_at, paused_by
    from outbox_destinations where name in (${sql.join(
      names.map((name) => sql`${name}`),
      sql`, `,
    )})`);
  const asDate = (value: Date | string | null) => (value === null ? null : new Date(value));
  return new Map(
    rows.map((row) => [
      row.name,
      {
        ...row,
        consecutive_failures: Number(row.consecutive_failures),
        opened_at: asDate(row.opened_at),
        probe_at: asDate(row.probe_at),
        paused_at: asDate(row.paused_at),
      },
    ]),
  );
}

/** Messages each destination published in the last RATE_WINDOW_MINUTES, within the bounded read above. */
async function recentPublishes(db: Executor, nowMs: number): Promise<Map<string, number>> {
  const windowStart = new Date(nowMs - RATE_WINDOW_MINUTES * 60_000);
  const lookback = new Date(nowMs - RATE_LOOKBACK_MINUTES * 60_000);
  const rows = await db.execute<{ destination: string; n: number }>(sql`
    select destination, count(*)::int as n from (
      select destination, published_at from outbox_messages
      where status = 'published' and created_at >= ${lookback.toISOString()}::timestamptz
      order by created_at desc limit ${RATE_ROWS_READ_MAX}
    ) recent
    where published_at >= ${windowStart.toISOString()}::timestamptz
    group by 1`);
  return new Map(rows.map((row) => [row.destination, Number(row.n)]));
}

/**
 * Every configured destination, in configuration order, with its state, backlog and rate. `rate:
 * false` leaves the rate at 0 and skips its read (the overview shows states, not rates).
 */
export async function listDestinations(
  db: Executor,
  routing: DestinationRouting,
  nowMs: number,
  options: { rate?: boolean } = {},
): Promise<DestinationView[]> {
  const names = routing.destinations.map((destination) => destination.name);
  const [rows, counts, published] = await Promise.all([
    destinationRows(db, names),
    countOutboxMessagesByDestination(db),
    options.rate === false ? new Map<string, number>() : recentPublishes(db, nowMs),
  ]);
  const count = (name: string, status: string) =>
    counts.find((entry) => entry.destination === name && entry.status === status)?.n ?? 0;
  const failing = [...rows.values()].filter((row) => row.circuit !== 'closed' || row.consecutive_failures > 0);
  const failures = await lastFailures(
    db,
    failing.map((row) => row.name),
  );
  return routing.destinations.map((destination: Destination): DestinationView => {
    const row = rows.get(destination.name);
    const filters = destination.filters ?? {};
    const facts = factsOf(row, failures);
    return {
      name: destination.name,
      ...redactedTarget(destination.url),
      filters: { topics: filters.topics ?? null, senders: filters.senders ?? null, types: filters.types ?? null },
      settings: destination.settings,
      ...facts,
      circuit: row?.circuit ?? 'closed',
      backlog: { pending: count(destination.name, 'pending'), dead: count(destination.name, 'dead') },
      publishedPerMinute: Math.round(((published.get(destination.name) ?? 0) / RATE_WINDOW_MINUTES) * 10) / 10,
      waiting: waitingReason(facts),
    };
  });
}

/** The wire form (snake_case, as the table): the admin API's and `destinations list --json`'s. */
export function destinationJson(view: DestinationView) {
  return {
    name: view.name,
    kind: view.kind,
    target: view.target,
    filters: {
      topics: view.filters.topics === null ? null : [...view.filters.topics],
      senders: view.filters.senders === null ? null : [...view.filters.senders],
      types: view.filters.types === null ? null : [...view.filters.types],
    },
    settings: view.settings,
    state: view.state,
    circuit: view.circuit,
    consecutive_failures: view.consecutiveFailures,
    opened_at: isoOrNull(view.openedAt),
    probe_at: isoOrNull(view.probeAt),
    paused_at: isoOrNull(view.pausedAt),
    paused_by: view.pausedBy,
    backlog: view.backlog,
    published_per_minute: view.publishedPerMinute,
    last_error: view.lastError,
    waiting: view.waiting,
  };
}

/**
 * /metrics' per-destination gauges, labelled with configured names only: the backlog by status and
 * the circuit as a state set (1 for the current state, 0 for the others), plus whether it is paused.
 */
export function destinationGauges(routing: DestinationRouting) {
  const names = routing.destinations.map((destination) => destination.name);
  return async (db: Executor): Promise<GaugeSample[]> => {
    const [rows, counts] = await Promise.all([destinationRows(db, names), countOutboxMessagesByDestination(db)]);
    return names.flatMap((destination): GaugeSample[] => {
      const row = rows.get(destination);
      const circuit = row?.circuit ?? 'closed';
      const backlog = (status: 'pending' | 'dead'): GaugeSample => ({
        name: 'webhook_outbox_destination_backlog',
        help: "Outbox messages of a destination waiting for the relay, or dead (the destination's counters).",
        labels: { destination, status },
        value: counts.find((entry) => entry.destination === destination && entry.status === status)?.n ?? 0,
      });
      return [
        backlog('pending'),
        backlog('dead'),
        ...destinationCircuits.map(
          (state): GaugeSample => ({
            name: 'webhook_outbox_destination_circuit',
            help: "A destination's circuit breaker: 1 for its current state (closed, open, half_open), 0 for the others.",
            labels: { destination, state },
            value: state === circuit ? 1 : 0,
          }),
        ),
        {
          name: 'webhook_outbox_destination_paused',
          help: 'Whether an operator has paused the destination (1) or not (0).',
          labels: { destination },
          value: row === undefined || row.paused_at === null ? 0 : 1,
        },
      ];
    });
  };
}
