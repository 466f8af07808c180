// Group commit for the intake: deliveries that passed every check before the database share one
// transaction, and each still gets its own answer. A delivery is its events (one, or a sender's batch),
// committed together: never split across batches. No timer: when no batch is in flight a delivery
// starts one at once, so a quiet service answers as fast as without batching; while one is in
// flight, what arrives waits for it and then goes together (one BEGIN, one insert statement, one
// COMMIT and one WAL flush for the lot instead of per event). Another lane (a connection's worth of
// transactions) opens only when the queue is long enough to fill a good share of a batch (a whole
// batch once two lanes are busy: PIPELINED_LANES), or once its
// oldest delivery has waited longer than a healthy batch takes (STALLED_LANE_MS): so the batches stay
// large while a lone slow batch (a lock wait) holds up neither a busy intake nor the few deliveries
// queued behind it. A batch with nothing to apply (async mode's `received` rows) is a single
// statement, committed by itself.
//
// Every promise of the one-at-a-time path holds per delivery:
// - exactly one application: a batch never holds two deliveries of one key (id or content digest);
//   the later one waits for a later batch, where it meets the first one's committed row;
// - a handler that throws rolls the batch back, and its deliveries are then processed one at a time
//   (processDelivery), so only the failing one is answered 500 and its failing event recorded `failed`;
// - a delivery answered 503 because its deadline passed is never committed: a batch checks every
//   member's deadline before COMMIT, and one that expired sends the others to a new batch;
// - a database outage answers 503 to every member and commits nothing; a deadlock with another
//   batch (handlers change rows in their own order) is retried, the rows already in key order;
// - a member stuck on a lock held elsewhere costs only its own answer: a batch's statements may run
//   for half the time its members have left, and a batch that times out (or meets a lock timeout) is
//   processed one delivery at a time, each bounded by its own deadline. Which member waited cannot be
//   read from the error (the batch's changes share statements), so each runs alone: the innocent ones
//   commit in milliseconds, and only those that wait again are answered 503 when their time is up.
import type { Database, Transaction } from '../db/client.ts';
import { isRetryableConflict, isTimeout, isTransientDatabaseError } from '../db/errors.ts';
import { limitStatements } from '../db/timeouts.ts';
import { AppError } from '../lib/errors.ts';
import { noTracing, type Span } from '../lib/tracing.ts';
import type { Deadline } from './deadline.ts';
import { insertOrTakeBackAll, rowKeys, type StoredRow } from './event-rows.ts';
import { appliesNow, applyTraced, type Committed, committedAs, type PlannedEvent, processDelivery } from './process.ts';

/**
 * One delivery waiting for its batch: its events, none sharing a key, its deadline, and its span.
 * Tracing a shared transaction: each member gets its own `claim` and `commit` spans (children of its
 * delivery's span) covering the batch's one statement and one COMMIT, each with `inbox.batch.size`;
 * its handlers' spans are its own.
 */
export interface Submission {
  items: readonly PlannedEvent[];
  deadline: Deadline;
  span?: Span;
}

export interface CommitterOptions {
  /** Most deliveries in one transaction (INTAKE_BATCH_MAX). */
  maxBatch: number;
  /** Most batches in flight at once: the connections the intake may hold. */
  lanes: number;
  /** Told each batch's size as it starts (the batch-size histogram). */
  onBatch?: (size: number) => void;
}

interface Member extends Submission {
  /** When it joined the queue (performance.now()): how long it has waited for a lane. */
  queuedAt: number;
  /** Set just before COMMIT is sent: from then on the answer waits for the commit. */
  decided: boolean;
  /** Its `commit` span, from the batch's last statement until COMMIT answered. */
  commit?: Span | undefined;
  resolve(results: Committed[]): void;
  reject(error: unknown): void;
}

const MAX_CONFLICT_RETRIES = 3;

/**
 * How long deliveries queued behind busy lanes wait for one of them before opening a lane of their
 * own, however few they are. A healthy batch takes milliseconds; a lane busy for this long is waiting
 * on something (a row lock held elsewhere, a slow handler) and may stay busy until its members'
 * deadlines, which those queued behind it would share. Far below any deadline, far above a batch.
 */
const STALLED_LANE_MS = 100;

/** Lanes that open for a share of a batch; past them, only a whole batch waiting or a stall opens one. */
const PIPELINED_LANES = 2;

/** The span of a member submitted without one: records nothing. */
const untraced = noTracing.start('untraced');

/** Thrown inside a batch to roll it back when a member's deadline passed before COMMIT. */
class MemberExpired extends Error {}

export class IntakeCommitter {
  readonly #queue: Member[] = [];
  #running = 0;
  /** Armed while deliveries wait behind busy lanes: opens a lane for them once they waited too long. */
  #stallCheck: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly db: Database,
    private readonly options: CommitterOptions,
  ) {}

  /**
   * Resolves after the delivery's batch committed (or it was processed on its own), with what
   * happened to each of its events; rejects as that would.
   */
  submit(submission: Submission): Promise<Committed[]> {
    let member: Member | undefined;
    const settled = new Promise<Committed[]>((resolve, reject) => {
      member = { ...submission, queuedAt: performance.now(), decided: false, resolve, reject };
    });
    // Stryker disable next-line StringLiteral,ConditionalExpression,CallExpression: unreachable (the Promise executor has run before this line), so neither the test nor the message can change anything
    if (member === undefined) throw new Error('unreachable: the executor runs at once');
    const queued = member;
    this.#queue.push(queued);
    this.#pump();
    // The delivery's answer: 503 once its deadline passes, unless its batch is committing.
    return submission.deadline.race(settled, () => queued.decided);
  }

  /**
   * Deliveries waiting that open another lane: a quarter of a batch while one lane is busy, a whole
   * batch once PIPELINED_LANES are. Two lanes keep the database busy (one batch commits while the next
   * runs its statements); more concurrent batches of the same inserts contend for the same index pages
   * (the newest entries of every timestamp-keyed index) and cost PostgreSQL more per event than they
   * gain: measured, `npm run bench:ab` with DB_POOL_MAX=3 (two lanes) against the default nine.
   */
  get #spillAt(): number {
    if (this.#running >= PIPELINED_LANES) return this.options.maxBatch;
    return Math.max(1, Math.floor(this.options.maxBatch / 4));
  }

  #pump(): void {
    while (this.#running < this.options.lanes && this.#queue.length > 0) {
      if (this.#running > 0 && this.#queue.length < this.#spillAt && !this.#stalled()) {
        this.#watchStall();
        return;
      }
      const batch = this.#take();
      if (batch.length === 0) return;
      this.#running += 1;
      void this.#run(batch).finally(() => {
        this.#running -= 1;
        this.#pump();
      });
    }
  }

  /** Whether the oldest queued delivery has waited for a busy lane for longer than a healthy batch takes. */
  #stalled(): boolean {
    const oldest = this.#queue[0];
    return oldest !== undefined && performance.now() - oldest.queuedAt >= STALLED_LANE_MS;
  }

  /**
   * Pumps again when the oldest queued delivery will have waited STALLED_LANE_MS: no lane may finish
   * before then (one stuck on a lock finishes at its members' deadlines). One timer for the whole
   * queue, armed at most once per STALLED_LANE_MS, and only while deliveries wait behind a lane.
   */
  #watchStall(): void {
    const oldest = this.#queue[0];
    if (this.#stallCheck !== undefined || oldest === undefined) return;
    const waited = performance.now() - oldest.queuedAt;
    this.#stallCheck = setTimeout(
      () => {
        this.#stallCheck = undefined;
        this.#pump();
      },
      Math.max(0, STALLED_LANE_MS - waited),
    );
  }

  /** Everything waiting, up to maxBatch, but no two members sharing a key; expired members are dropped. */
  #take(): Member[] {
    const batch: Member[] = [];
    const keys = new Set<string>();
    const left: Member[] = [];
    for (const member of this.#queue) {
      // Answered 503 already (the race in submit): nothing of it may be stored.
      if (member.deadline.expired) continue;
      const memberKeys = member.items.flatMap((item) => rowKeys(item.event));
      if (batch.length >= this.options.maxBatch || memberKeys.some((key) => keys.has(key))) {
        left.push(member);
        continue;
      }
      for (const key of memberKeys) keys.add(key);
      batch.push(member);
    }
    this.#queue.splice(0, this.#queue.length, ...left);
    return batch;
  }

  async #run(batch: Member[]): Promise<void> {
    this.options.onBatch?.(batch.length);
    for (let attempt = 0; ; attempt += 1) {
      try {
        const results = await endingCommitSpans(
          batch,
          needsTransaction(batch) ? this.db.transaction((tx) => this.#commit(tx, batch)) : this.#storeAtOnce(batch),
        );
        // Stryker disable next-line ArrayDeclaration: results() answers one list per member, so the fallback is never evaluated
        for (const [index, member] of batch.entries()) member.resolve(results[index] ?? []);
        return;
      } catch (error) {
        if (error instanceof MemberExpired) return this.#requeue(batch);
        if (isRetryableConflict(error) && attempt < MAX_CONFLICT_RETRIES) continue;
        // A timeout is transient too, but it says something waited, not that the database is gone.
        if (isTransientDatabaseError(error) && !isTimeout(error)) {
          const why = { reason: 'database_unavailable' };
          for (const member of batch) member.reject(new AppError('unavailable', { cause: error, why }));
          return;
        }
        // A handler (or a row) failed, or a statement waited too long: find out which delivery, one at a time.
        await Promise.all(batch.map((member) => this.#alone(member)));
        return;
      }
    }
  }

  /** Inserts every member's rows, applies the written ones, and decides to commit. */
  async #commit(tx: Transaction, batch: readonly Member[]): Promise<Committed[][]> {
    // Half of what the most patient member has left, so that after a timeout it can still run alone.
    // A member with less than that would have expired in the batch all the same. Sent with the insert
    // (pipelined), so it costs no round trip of its own.
    const longest = Math.max(...batch.map((member) => member.deadline.remainingMs));
    const [, rows] = await Promise.all([
      limitStatements(tx, longest / 2),
      claimed(
        batch,
        insertOrTakeBackAll(
          tx,
          batch.flatMap((member) => member.items),
        ),
      ),
    ]);
    const byMember = perMember(batch, rows);
    // Started together: their writes of this tick share statements (domain/subscriptions.ts), and any
    // others are pipelined on the transaction's connection.
    const applied = await Promise.allSettled(
      batch.flatMap((member, index) =>
        // Stryker disable next-line OptionalChaining: perMember answers one list per member, so byMember[index] is always there
        member.items.map((item, at) => applyWritten(tx, member, item, byMember[index]?.[at] ?? null)),
      ),
    );
    const failure = applied.find((result) => result.status === 'rejected');
    if (failure !== undefined) throw failure.reason;
    if (batch.some((member) => member.deadline.expired)) throw new MemberExpired();
    for (const member of batch) {
      member.decided = true;
      member.commit = member.span?.child('commit', { 'inbox.batch.size': batch.length });
    }
    return results(batch, byMember);
  }

  /**
   * A batch with no handler to run and no row to take back by digest (async mode's `received` rows,
   * ignored and parked events): its one statement is its own transaction, so it costs one round trip
   * instead of three. Decided before it is sent: from then on each answer waits for its commit.
   */
  async #storeAtOnce(batch: readonly Member[]): Promise<Committed[][]> {
    for (const member of batch) member.decided = true;
    const rows = await claimed(
      batch,
      insertOrTakeBackAll(
        this.db,
        batch.flatMap((member) => member.items),
      ),
    );
    return results(batch, perMember(batch, rows));
  }

  /** A batch rolled back because a member's time ran out: the others go first in the next batch. */
  #requeue(batch: readonly Member[]): void {
    // Stryker disable next-line MethodExpression: #take drops expired members anyway; the filter only keeps them out of the queue sooner
    this.#queue.unshift(...batch.filter((member) => !member.deadline.expired));
  }

  async #alone(member: Member): Promise<void> {
    // Answered 503 already (the race in submit): a transaction of its own could only roll back.
    // Stryker disable next-line StringLiteral: the race in submit has already answered it 503; this rejection is never read
    if (member.deadline.expired) return member.reject(new AppError('unavailable'));
    try {
      const options = { boundByDeadline: true, ...(member.span === undefined ? {} : { span: member.span }) };
      member.resolve(await processDelivery(this.db, member.deadline, member.items, options));
    } catch (error) {
      member.reject(error);
    }
  }
}

/**
 * Whether the batch needs a transaction around its statements: a handler to run with its insert, or
 * rows with a content digest, whose failed twins are taken back in a second statement.
 */
function needsTransaction(batch: readonly Member[]): boolean {
  return batch.some((member) =>
    member.items.some((item) => item.event.contentDigest !== undefined || appliesNow(item)),
  );
}

/** The insert's rows (one per event, members in order) split back into each member's. */
function perMember(batch: readonly Member[], rows: readonly (StoredRow | null)[]): (StoredRow | null)[][] {
  let at = 0;
  return batch.map((member) => {
    const own = rows.slice(at, at + member.items.length);
    at += member.items.length;
    return own;
  });
}

function results(batch: readonly Member[], byMember: readonly (StoredRow | null)[][]): Committed[][] {
  // Stryker disable next-line OptionalChaining: perMember answers one list per member, so byMember[index] is always there
  return batch.map((member, index) => member.items.map((item, at) => committedAs(item, byMember[index]?.[at] ?? null)));
}

/** Runs the event's handler when its row was written for applying now. */
async function applyWritten(tx: Transaction, member: Member, item: PlannedEvent, row: StoredRow | null): Promise<void> {
  if (row === null || !appliesNow(item)) return;
  await applyTraced(member.span ?? untraced, tx, item.plan, item.event, row.eventId);
}

/** Each member's `claim` span around the batch's one insert. */
async function claimed<T>(batch: readonly Member[], insert: Promise<T>): Promise<T> {
  const spans = batch.map((member) => member.span?.child('claim', { 'inbox.batch.size': batch.length }));
  try {
    return await insert;
  } catch (error) {
    for (const span of spans) span?.fail(error);
    throw error;
  } finally {
    for (const span of spans) span?.end();
  }
}

/** Ends the `commit` spans a batch opened once its transaction settled (marked failed if it did not commit). */
async function endingCommitSpans<T>(batch: readonly Member[], transaction: Promise<T>): Promise<T> {
  try {
    return await transaction;
  } catch (error) {
    for (const member of batch) member.commit?.fail(error);
    throw error;
  } finally {
    for (const member of batch) {
      member.commit?.end();
      member.commit = undefined;
    }
  }
}
