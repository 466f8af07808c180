// The one owner of every write to `outbox_destinations`: what the service knows of each destination
// beyond its configuration, shared by every relay process. Two things live there:
//
// - the circuit breaker: consecutive failed publishes open the circuit (the destination's relays
//   claim nothing), after a cool-off exactly one relay takes the probe (half_open, by a conditional
//   UPDATE), and the probe's outcome closes the circuit or opens it again with a longer cool-off;
// - an operator's pause: while paused_at is set the destination's relays claim nothing; resuming
//   lets its rows flow again. Each change is audited in operator_actions in the same transaction.
//
// Every breaker write is one conditional statement (never read-then-write), made once per batch
// outcome and only for its own destination's row, outside any claim's transaction.

import { and, eq, isNotNull, type SQL, sql } from 'drizzle-orm';
import { recordOperatorActions } from '../db/audit.ts';
import type { Executor, Transaction } from '../db/client.ts';
import { executePrepared } from '../db/prepared.ts';
import { type DestinationCircuit, outboxDestinations } from '../db/schema.ts';

export interface BreakerPolicy {
  /** Consecutive failed publishes that open the circuit. */
  failures: number;
  /** The first wait before a probe; each failed probe waits longer, up to COOLOFF_CAP_FACTOR times this. */
  cooloffMs: number;
}

/** A failed probe waits as long as the circuit has been open so far (doubling), at most this many cool-offs. */
export const COOLOFF_CAP_FACTOR = 8;

/**
 * Failed probes of an unreachable target after which its circuit opens whatever the count: the first
 * failure could be a restart's moment, a failed probe after a backoff is an outage.
 */
export const UNREACHABLE_OPENS_AFTER_PROBES = 1;

/** The relay found the target out of reach and nothing answered since (relay.ts's outage). */
export interface Unreachable {
  /** Probes that failed since the outage began (0: only the first failure so far). */
  failedProbes: number;
  /** When the relay probes next: an open circuit's probe_at, so the breaker keeps the outage's pace. */
  probeAtMs: number;
}

/** What a relay may do with its destination now. */
export type Admission =
  | { kind: 'closed' }
  /** This relay took the probe: one message, whose outcome closes or re-opens the circuit. */
  | { kind: 'probe' }
  /** Open (or half-open with another relay's probe out): nothing is claimed before probeAtMs. */
  | { kind: 'open'; probeAtMs: number }
  | { kind: 'paused' };

/** A circuit's change a batch outcome made, for its log line; undefined when it changed nothing. */
export type CircuitChange =
  | { kind: 'opened'; failures: number; probeAtMs: number }
  | { kind: 'reopened'; failures: number; probeAtMs: number }
  | { kind: 'closed'; was: DestinationCircuit };

const timestamp = (ms: number) => sql`${new Date(ms).toISOString()}::timestamptz`;
const millis = (ms: number) => sql`(${ms}::float8 * interval '1 millisecond')`;
const epochMs = (column: SQL) => sql`(extract(epoch from ${column}) * 1000)::float8`;

/** The destination's row, made on first sight (a relay's first drain, an operator's first pause). */
export async function ensureDestinationRow(db: Executor, name: string): Promise<void> {
  await db.insert(outboxDestinations).values({ name }).onConflictDoNothing();
}

/**
 * Whether the relay may claim: one statement that also takes the probe when an open circuit's
 * cool-off is over (circuit -> half_open, probe_at pushed a cool-off ahead so a probe whose relay
 * died is taken again later). Two relays racing for it: the second's UPDATE re-reads the row after
 * the first's and finds probe_at ahead, so exactly one probes.
 */
export async function admission(db: Executor, name: string, nowMs: number, policy: BreakerPolicy): Promise<Admission> {
  const rows = await executePrepared<{
    circuit: DestinationCircuit;
    paused: boolean;
    probing: boolean;
    probe_at_ms: number | null;
  }>(
    db,
    sql`
    with probe as (
      update outbox_destinations
      set circuit = 'half_open', probe_at = ${timestamp(nowMs)} + ${millis(policy.cooloffMs)}, updated_at = ${timestamp(nowMs)}
      where name = ${name} and circuit <> 'closed' and probe_at <= ${timestamp(nowMs)} and paused_at is null
      returning name)
    select d.circuit, d.paused_at is not null as paused, exists (select 1 from probe) as probing,
      ${epochMs(sql`d.probe_at`)} as probe_at_ms
    from outbox_destinations d where d.name = ${name}`,
  );
  const [row] = rows;
  if (row === undefined) return { kind: 'closed' };
  if (row.paused) return { kind: 'paused' };
  if (row.probing) return { kind: 'probe' };
  if (row.circuit === 'closed') return { kind: 'closed' };
  return { kind: 'open', probeAtMs: row.probe_at_ms ?? nowMs };
}

/**
 * A batch's publishes as the breaker counts them: whether any was published, and the failures
 * (retried, dead, unreachable) after the last one published, in the order they settled. A published
 * message resets the count, so it becomes the batch's trailing failures; a batch with none published
 * adds its failures. Reaching `policy.failures` opens the circuit; a failed probe (half_open) opens
 * it again, waiting as long again as it has been open (at most COOLOFF_CAP_FACTOR cool-offs); a
 * failure reported by a straggler while it is open changes only the count. Nothing is written for a
 * healthy batch of a closed circuit with no failures.
 *
 * A target out of reach (`unreachable`) says the same of every message, so it does not wait for the
 * count: once its outage has outlived UNREACHABLE_OPENS_AFTER_PROBES probes the circuit opens, and an
 * open or re-opened circuit of an unreachable target probes when the relay's outage backoff does
 * (at most OUTAGE_PROBE_MAX_MS apart) rather than after the growing cool-off, so a target that comes
 * back is noticed as soon as before, and every process sees it down (docs/outbox.md).
 */
export async function recordBreakerOutcome(
  db: Executor,
  name: string,
  nowMs: number,
  policy: BreakerPolicy,
  outcome: { published: number; trailingFailures: number; unreachable?: Unreachable | undefined },
): Promise<CircuitChange | undefined> {
  const { published, trailingFailures, unreachable } = outcome;
  if (published === 0 && trailingFailures === 0) return undefined;
  const now = timestamp(nowMs);
  const anyPublished = published > 0;
  // Counted afresh from a closed circuit, or from a publish that went through; else the circuit stays open.
  const fresh = anyPublished ? sql`true` : sql`d.circuit = 'closed'`;
  const total = anyPublished ? sql`${trailingFailures}::int` : sql`(d.consecutive_failures + ${trailingFailures}::int)`;
  const outageOpens = unreachable !== undefined && unreachable.failedProbes >= UNREACHABLE_OPENS_AFTER_PROBES;
  const opens = sql`(${total} >= ${policy.failures}::int or ${outageOpens})`;
  const longer = sql`least(greatest(${millis(policy.cooloffMs)}, ${now} - coalesce(d.opened_at, ${now})), ${millis(policy.cooloffMs * COOLOFF_CAP_FACTOR)})`;
  const outageProbe = unreachable === undefined ? undefined : timestamp(unreachable.probeAtMs);
  const rows = await executePrepared<{
    was: DestinationCircuit;
    circuit: DestinationCircuit;
    failures: number;
    probe_at_ms: number | null;
  }>(
    db,
    sql`
    update outbox_destinations d
    set consecutive_failures = ${total},
      circuit = case when not (${fresh}) or ${opens} then 'open' else 'closed' end::destination_circuit,
      opened_at = case when not (${fresh}) then d.opened_at when ${opens} then ${now} else null end,
      probe_at = case
        when not (${fresh}) and d.circuit = 'half_open' then ${outageProbe ?? sql`${now} + ${longer}`}
        when not (${fresh}) then d.probe_at
        when ${opens} then ${outageProbe ?? sql`${now} + ${millis(policy.cooloffMs)}`}
        else null end,
      updated_at = ${now}
    from (select circuit as was from outbox_destinations where name = ${name}) before
    where d.name = ${name}
      and (${!anyPublished} or ${trailingFailures}::int > 0 or d.circuit <> 'closed' or d.consecutive_failures > 0)
    returning before.was, d.circuit, d.consecutive_failures as failures, ${epochMs(sql`d.probe_at`)} as probe_at_ms`,
  );
  const [row] = rows;
  if (row === undefined || row.was === row.circuit) return undefined;
  if (row.circuit === 'closed') return { kind: 'closed', was: row.was };
  const probeAtMs = row.probe_at_ms ?? nowMs;
  return row.was === 'half_open'
    ? { kind: 'reopened', failures: row.failures, probeAtMs }
    : { kind: 'opened', failures: row.failures, probeAtMs };
}

export type DestinationStatus = 'active' | 'paused';

/** A destination's state as the operator sees it (the admin API's `destination`). */
export interface DestinationState {
  name: string;
  pausedAt: Date | null;
  pausedBy: string | null;
  circuit: DestinationCircuit;
}

const stateColumns = {
  name: outboxDestinations.name,
  pausedAt: outboxDestinations.pausedAt,
  pausedBy: outboxDestinations.pausedBy,
  circuit: outboxDestinations.circuit,
};

/**
 * Pauses a destination in `tx` and audits it there. Pausing a paused destination keeps when it
 * began and records the operator who paused it again. The row is locked before it is read, so two
 * operators at once each record what they found.
 */
export async function writeDestinationPause(
  tx: Transaction,
  request: { name: string; operator: string; note: string | null },
  now: Date,
): Promise<{ before: DestinationStatus; destination: DestinationState }> {
  await ensureDestinationRow(tx, request.name);
  const [prior] = await tx
    .select(stateColumns)
    .from(outboxDestinations)
    .where(eq(outboxDestinations.name, request.name))
    .for('update');
  // Stryker disable next-line OptionalChaining: the row was just ensured and is locked: `prior` is always there
  const before: DestinationStatus = prior?.pausedAt == null ? 'active' : 'paused';
  // Pausing a paused destination keeps when it began.
  // Stryker disable next-line OptionalChaining: as above
  const pausedAt = prior?.pausedAt ?? now;
  const [destination] = await tx
    .update(outboxDestinations)
    .set({ pausedAt, pausedBy: request.operator, updatedAt: now })
    .where(eq(outboxDestinations.name, request.name))
    .returning(stateColumns);
  if (destination === undefined) throw new Error(`outbox_destinations row ${request.name} vanished under its lock`);
  await recordOperatorActions(tx, now, [
    {
      operator: request.operator,
      action: 'pause',
      targetKind: 'destination',
      target: request.name,
      beforeStatus: before,
      afterStatus: 'paused',
      detail: { note: request.note },
    },
  ]);
  return { before, destination };
}

/**
 * Resumes a paused destination in `tx` and audits it there; undefined (nothing written) when it was
 * not paused. Its rows kept their attempts and availability, so they are claimed at the next drain.
 */
export async function writeDestinationResume(
  tx: Transaction,
  request: { name: string; operator: string },
  now: Date,
): Promise<DestinationState | undefined> {
  const [resumed] = await tx
    .update(outboxDestinations)
    .set({ pausedAt: null, pausedBy: null, updatedAt: now })
    .where(and(eq(outboxDestinations.name, request.name), isNotNull(outboxDestinations.pausedAt)))
    .returning(stateColumns);
  if (resumed === undefined) return undefined;
  await recordOperatorActions(tx, now, [
    {
      operator: request.operator,
      action: 'resume',
      targetKind: 'destination',
      target: request.name,
      beforeStatus: 'paused',
      afterStatus: 'active',
      detail: { note: null },
    },
  ]);
  return resumed;
}

/** A destination's state; a destination no relay or operator has touched yet is active and closed. */
export async function destinationState(db: Executor, name: string): Promise<DestinationState> {
  const [row] = await db.select(stateColumns).from(outboxDestinations).where(eq(outboxDestinations.name, name));
  return row ?? { name, pausedAt: null, pausedBy: null, circuit: 'closed' };
}
