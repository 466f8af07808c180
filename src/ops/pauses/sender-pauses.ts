// Pausing a sender, shared by the CLI (`senders`), the admin API and the dashboard: an operator pauses
// an enabled sender (until a time, for a while, or until resumed) and resumes it; each change is one
// row of sender_pauses and one audit row in operator_actions, in the same transaction. A pause with an
// end stops by itself: reads ignore it from then on, and endExpiredPauses (a maintenance step) deletes
// it and audits the automatic resume. The intake reads the table through src/inbox/pause-gate.ts.

import { and, asc, eq, gt, isNull, or, sql } from 'drizzle-orm';
import { recordOperatorActions } from '../../db/audit.ts';
import type { Database, Executor, Transaction } from '../../db/client.ts';
import { operatorActions, senderPauses } from '../../db/schema.ts';
import type { Clock } from '../../lib/clock.ts';
import { AppError } from '../../lib/errors.ts';
import type { Logger } from '../../lib/logger.ts';
import { assertOperatorName } from '../../lib/operator-name.ts';
import { isStorableText } from '../../lib/text.ts';
import { redeliveryBySender } from '../../senders/registry.ts';

/**
 * The longest pause: a week, GitLab's redelivery window and longer than any other sender keeps
 * retrying, so a longer pause could only lose deliveries.
 */
export const PAUSE_MAX_MINUTES = 7 * 24 * 60;

/** Characters a pause's note may have: a line saying why, not a document. */
export const PAUSE_NOTE_MAX = 500;

/** Who the automatic resume of a pause that reached its end is recorded under. */
export const SYSTEM_OPERATOR = 'system';

export type SenderStatus = 'active' | 'paused';

export interface SenderPause {
  provider: string;
  pausedAt: Date;
  pausedBy: string;
  /** When the pause ends by itself; null until an operator resumes the sender. */
  until: Date | null;
  note: string | null;
}

/** Where a sender publishes no retry window, Stripe's three days (docs/senders.md, "Retry windows"). */
const ASSUMED_WINDOW_DAYS = 3;

/** Minutes after its first attempt that a sender still retries (or lets a delivery be redelivered). */
function retrySpanMinutes(provider: string): number {
  const redelivery = redeliveryBySender.get(provider);
  return redelivery?.retriesForMinutes ?? (redelivery?.windowDays ?? ASSUMED_WINDOW_DAYS) * 24 * 60;
}

function spanWords(minutes: number): string {
  if (minutes < 120) return minutes === 1 ? 'a minute' : `${minutes} minutes`;
  if (minutes < 2 * 24 * 60) return `${Math.round(minutes / 60)} hours`;
  return `${Math.round(minutes / (24 * 60))} days`;
}

/**
 * What an operator should know before a pause costs deliveries: a sender that never retries by itself
 * (its refused deliveries must be redelivered by hand after the resume), and a pause that may outlast
 * the sender's retries (a delivery refused for longer than that is given up by the sender).
 */
export function pauseWarnings(provider: string, until: Date | null, nowMs: number): string[] {
  const warnings: string[] = [];
  const byHand = redeliveryBySender.get(provider)?.byHand;
  if (byHand !== undefined) {
    warnings.push(
      `${provider} does not send a refused delivery again by itself: after the resume, redeliver what was refused from ${byHand}`,
    );
  }
  const span = retrySpanMinutes(provider);
  if (until === null || until.getTime() - nowMs > span * 60_000) {
    const what = byHand === undefined ? 'retries a delivery' : 'lets a delivery be redelivered';
    warnings.push(
      `${provider} ${what} for about ${spanWords(span)} after its first attempt: ` +
        `one refused for longer than that before the resume is lost`,
    );
  }
  return warnings;
}

/** How a sender comes back with what a pause refused, in words (the dashboard's senders page). */
export function retryBehaviour(provider: string): string {
  const byHand = redeliveryBySender.get(provider)?.byHand;
  const span = spanWords(retrySpanMinutes(provider));
  if (byHand !== undefined) return `no automatic retry: redeliver by hand (${span}) from ${byHand}`;
  return `retries a refused delivery for about ${span}`;
}

const pauseColumns = {
  provider: senderPauses.provider,
  pausedAt: senderPauses.pausedAt,
  pausedBy: senderPauses.pausedBy,
  until: senderPauses.until,
  note: senderPauses.note,
};

/** In effect at `now`: no end, or an end still ahead. */
const inEffect = (now: Date) => or(isNull(senderPauses.until), gt(senderPauses.until, now));

/** The pauses in effect at `nowMs`, oldest first (a pause past its end is no pause, deleted or not). */
export async function activePauses(db: Executor, nowMs: number): Promise<SenderPause[]> {
  return db
    .select(pauseColumns)
    .from(senderPauses)
    .where(inEffect(new Date(nowMs)))
    .orderBy(asc(senderPauses.pausedAt), asc(senderPauses.provider));
}

export interface SenderState {
  provider: string;
  status: SenderStatus;
  pause: SenderPause | null;
}

/** Every enabled sender, by name, with its pause when one is in effect. */
export async function listSenders(db: Executor, enabled: Iterable<string>, nowMs: number): Promise<SenderState[]> {
  const pauses = new Map((await activePauses(db, nowMs)).map((pause) => [pause.provider, pause]));
  return [...enabled].sort().map((provider) => {
    const pause = pauses.get(provider) ?? null;
    return { provider, status: pause === null ? 'active' : 'paused', pause };
  });
}

/** A pause's audit detail: what it was given beyond its target. */
const detailOf = (pause: Pick<SenderPause, 'until' | 'note'>) => ({
  until: pause.until?.toISOString() ?? null,
  note: pause.note,
});

export interface PauseRequest {
  provider: string;
  operator: string;
  /** At most one of the two; neither: paused until an operator resumes. */
  minutes?: number | undefined;
  until?: Date | undefined;
  note?: string | undefined;
}

/** Why a note cannot be kept, or undefined: too long, or holding control characters or malformed text. */
export function pauseNoteProblem(note: string): string | undefined {
  if (note.length > PAUSE_NOTE_MAX) return `at most ${PAUSE_NOTE_MAX} characters`;
  if (/\p{Cc}/u.test(note) || !isStorableText(note)) return 'control characters and malformed text are refused';
  return undefined;
}

/** Why a pause cannot end at `until`, or undefined: it must end after now and within PAUSE_MAX_MINUTES. */
export function pauseEndProblem(until: Date, nowMs: number): string | undefined {
  const ms = until.getTime();
  if (Number.isNaN(ms) || ms <= nowMs) return 'must be in the future';
  if (ms - nowMs > PAUSE_MAX_MINUTES * 60_000) return `at most ${PAUSE_MAX_MINUTES / (24 * 60)} days ahead`;
  return undefined;
}

/** The pause's end from a request (checked), or null for a pause until resumed. */
function requestedEnd(request: PauseRequest, nowMs: number): Date | null {
  const invalid = (field: string) => new AppError('invalid_request', { field });
  if (request.minutes !== undefined && request.until !== undefined) throw invalid('until');
  if (request.minutes !== undefined) {
    const { minutes } = request;
    if (!Number.isInteger(minutes) || minutes < 1 || minutes > PAUSE_MAX_MINUTES) throw invalid('minutes');
    return new Date(nowMs + minutes * 60_000);
  }
  if (request.until !== undefined) {
    if (pauseEndProblem(request.until, nowMs) !== undefined) throw invalid('until');
    return request.until;
  }
  return null;
}

/**
 * Pauses a sender in `tx` and audits it there. Pausing a paused sender replaces its end, note and
 * operator and keeps when it began; one past its end counts as active and starts again now. The row
 * is locked (or inserted) before it is read, so two operators at once each record what they found.
 */
export async function writePause(
  tx: Transaction,
  pause: Omit<SenderPause, 'pausedAt'>,
  now: Date,
): Promise<{ before: SenderStatus; pause: SenderPause }> {
  const { provider } = pause;
  // Twice at most: an insert lost to another operator's is followed by locking the row theirs made.
  for (let attempt = 0; attempt < 2; attempt++) {
    const [prior] = await tx
      .select(pauseColumns)
      .from(senderPauses)
      .where(eq(senderPauses.provider, provider))
      .for('update');
    if (prior === undefined) {
      const [inserted] = await tx
        .insert(senderPauses)
        .values({ ...pause, pausedAt: now })
        .onConflictDoNothing()
        .returning(pauseColumns);
      if (inserted !== undefined) return { before: 'active', pause: await audited(tx, 'active', inserted, now) };
      continue;
    }
    const before: SenderStatus = prior.until !== null && prior.until <= now ? 'active' : 'paused';
    const [updated] = await tx
      .update(senderPauses)
      .set({
        pausedBy: pause.pausedBy,
        until: pause.until,
        note: pause.note,
        pausedAt: before === 'active' ? now : prior.pausedAt,
      })
      .where(eq(senderPauses.provider, provider))
      .returning(pauseColumns);
    if (updated !== undefined) return { before, pause: await audited(tx, before, updated, now) };
  }
  // Inserted and resumed by others between our two looks: let the operator try again.
  throw new AppError('unavailable', { why: { reason: 'pause changed concurrently' } });
}

async function audited(tx: Transaction, before: SenderStatus, pause: SenderPause, now: Date): Promise<SenderPause> {
  await recordOperatorActions(tx, now, [
    {
      operator: pause.pausedBy,
      action: 'pause',
      targetKind: 'sender',
      target: pause.provider,
      beforeStatus: before,
      afterStatus: 'paused',
      detail: detailOf(pause),
    },
  ]);
  return pause;
}

/**
 * Resumes a sender in `tx` and audits it there: the pause in effect, deleted, or undefined when there
 * is none (a pause past its end is left for endExpiredPauses, which records when it really ended).
 */
export async function writeResume(
  tx: Transaction,
  request: { provider: string; operator: string },
  now: Date,
): Promise<SenderPause | undefined> {
  const [ended] = await tx
    .delete(senderPauses)
    .where(and(eq(senderPauses.provider, request.provider), inEffect(now)))
    .returning(pauseColumns);
  if (ended === undefined) return undefined;
  await recordOperatorActions(tx, now, [
    {
      operator: request.operator,
      action: 'resume',
      targetKind: 'sender',
      target: request.provider,
      beforeStatus: 'paused',
      afterStatus: 'active',
      detail: detailOf(ended),
    },
  ]);
  return ended;
}

export interface SenderPauseContext {
  db: Database;
  clock: Clock;
  logger: Logger;
  /** The senders enabled where the pause applies: only those can be paused. */
  enabled: ReadonlySet<string>;
}

export type PauseResult =
  | { kind: 'paused'; before: SenderStatus; pause: SenderPause; warnings: string[] }
  | { kind: 'not_found' };

/**
 * Pauses an enabled sender (else `not_found`). An operator name, note, duration or end that cannot
 * be kept is refused (invalid_request naming the field) before anything is read.
 */
export async function pauseSender(context: SenderPauseContext, request: PauseRequest): Promise<PauseResult> {
  assertOperatorName(request.operator);
  const nowMs = context.clock();
  const until = requestedEnd(request, nowMs);
  const note = request.note?.trim() || null;
  if (note !== null && pauseNoteProblem(note) !== undefined) throw new AppError('invalid_request', { field: 'note' });
  if (!context.enabled.has(request.provider)) return { kind: 'not_found' };
  const now = new Date(nowMs);
  const { before, pause } = await context.db.transaction((tx) =>
    writePause(tx, { provider: request.provider, pausedBy: request.operator, until, note }, now),
  );
  const warnings = pauseWarnings(request.provider, until, nowMs);
  context.logger.info('operator pause', {
    operator: request.operator,
    provider: request.provider,
    before,
    after: 'paused',
    until: pause.until?.toISOString() ?? null,
  });
  return { kind: 'paused', before, pause, warnings };
}

export type ResumeResult = { kind: 'resumed'; pause: SenderPause } | { kind: 'not_paused' } | { kind: 'not_found' };

/** The log line of an operator's resume, a sender's or a destination's: who, which, paused to active. */
export function logResume(
  logger: Logger,
  line: string,
  operator: string,
  resumed: { provider: string } | { destination: string },
): void {
  logger.info(line, { operator, ...resumed, before: 'paused', after: 'active' });
}

/**
 * Resumes a paused sender: `not_paused` (nothing changed, nothing recorded) when no pause is in
 * effect, `not_found` when the sender is not enabled and not paused either. A sender disabled while
 * paused can still be resumed, so its pause does not come back with its secret.
 */
export async function resumeSender(
  context: SenderPauseContext,
  request: { provider: string; operator: string },
): Promise<ResumeResult> {
  assertOperatorName(request.operator);
  const now = new Date(context.clock());
  const ended = await context.db.transaction((tx) => writeResume(tx, request, now));
  if (ended === undefined)
    return context.enabled.has(request.provider) ? { kind: 'not_paused' } : { kind: 'not_found' };
  logResume(context.logger, 'operator resume', request.operator, { provider: request.provider });
  return { kind: 'resumed', pause: ended };
}

/**
 * Deletes the pauses whose end has passed and records each automatic resume (operator `system`, at
 * the pause's end, when the intake stopped refusing), in one statement: a pause an operator extends
 * meanwhile keeps its row (the delete re-checks the end on the row it waited for).
 */
export async function endExpiredPauses(db: Executor, nowMs: number): Promise<{ resumed: string[] }> {
  const rows = await db.execute<{ target: string }>(sql`
    with ended as (
      delete from ${senderPauses} where ${senderPauses.until} <= ${new Date(nowMs).toISOString()}::timestamptz
      returning provider, until, note
    )
    insert into ${operatorActions} (operator, action, target_kind, target, before_status, after_status, at, detail)
    select ${SYSTEM_OPERATOR}, 'resume', 'sender', provider, 'paused', 'active', until,
      jsonb_build_object('until', to_char(until at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'note', note,
        'reason', 'ended by itself')
    from ended
    returning target`);
  return { resumed: rows.map((row) => row.target).sort() };
}
