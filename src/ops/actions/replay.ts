// Operator replay of stored events, shared by the CLI (`replay`), the admin API and the dashboard:
// explicit ids only, all known or nothing done, each event applied through the one idempotent path
// (applyStoredEvent) and each replay recorded in `operator_actions` and in one log line.

import { and, eq, inArray } from 'drizzle-orm';
import { recordOperatorActions } from '../../db/audit.ts';
import type { Executor, Transaction } from '../../db/client.ts';
import { type WebhookEventStatus, webhookEvents } from '../../db/schema.ts';
import type { HandlerMap } from '../../domain/handlers.ts';
import { applyStoredEvent, type StoredContext, type StoredOutcome } from '../../inbox/stored.ts';
import type { Clock } from '../../lib/clock.ts';
import type { Logger } from '../../lib/logger.ts';
import type { Metrics } from '../../lib/metrics.ts';
import { assertOperatorName } from '../../lib/operator-name.ts';
import { isStorableText } from '../../lib/text.ts';
import { sendersByName } from '../../senders/registry.ts';
import { type EventDetail, getEvent } from '../reads/events.ts';

/** The states a replay takes an event from; anything else is left as it is (and still recorded). */
export const REPLAYABLE: readonly WebhookEventStatus[] = ['failed', 'parked', 'dead_letter'];

export interface ReplayContext {
  /** A transaction too: a bulk job replays a batch in one (src/ops/jobs/bulk-runner.ts). */
  db: Executor;
  handlers: HandlerMap;
  clock: Clock;
  logger: Logger;
  /** Providers asked whether they know a parked payload's schema now; every sender by default. */
  sendersByName?: StoredContext['sendersByName'];
  /** Counts each replay by the status it left (the CLI, a short process, has none). */
  metrics?: Pick<Metrics, 'countReplay'>;
}

export interface ReplayRequest {
  provider: string;
  eventIds: readonly string[];
  operator: string;
  /** The bulk job this replay is an item of: written on each audit row and log line. */
  jobId?: string | undefined;
}

/**
 * What a replay did to one event: `applied`, taken through the domain path and done (completed or
 * ignored); `failed`, taken through it and failed or parked again (nothing applied); `skipped`, not
 * taken through it (not replayable, or another worker or replay took it first).
 */
export type ReplayOutcome = 'applied' | 'failed' | 'skipped';

export interface ReplayedEvent {
  eventId: string;
  before: WebhookEventStatus;
  outcome: ReplayOutcome;
  /** Whether the event's change is now applied by this replay (outcome `applied`). */
  applied: boolean;
  /** The event as it stands after the replay. */
  after: EventDetail;
  /** Why the replay did not leave the event done (completed or ignored); absent when it did. */
  reason?: string;
}

export type ReplayResult = { kind: 'replayed'; events: ReplayedEvent[] } | { kind: 'not_found'; eventIds: string[] };

/** Finished: nothing left to apply (an ignored event was recorded as needing nothing). */
const isFinished = (status: WebhookEventStatus) => status === 'completed' || status === 'ignored';

/**
 * In words, why a replay left an event where it is: not in a replayable state, taken by someone
 * else, parked again (with the rule and the value that parked it: its `last_error`), or failed with
 * its recorded error.
 */
export function replayReason(before: WebhookEventStatus, ran: boolean, after: EventDetail): string | undefined {
  if (!REPLAYABLE.includes(before)) {
    return `it was ${before}: only failed, parked or dead-lettered events are applied again (nothing applied, recorded)`;
  }
  if (!ran) return 'another worker or replay took the event first; this one applied nothing';
  if (isFinished(after.status)) return undefined;
  if (after.status === 'parked') {
    return `parked again: ${after.lastError ?? "this service still does not know the payload's schema version"}`;
  }
  return after.lastError ?? `it is ${after.status}`;
}

/** Current states of the events asked for, keyed by id. */
export async function eventStates(
  db: Executor,
  provider: string,
  eventIds: readonly string[],
): Promise<Map<string, WebhookEventStatus>> {
  // An id the database cannot hold names no stored event (and would fail the statement).
  const storable = eventIds.filter(isStorableText);
  if (storable.length === 0) return new Map();
  const rows = await db
    .select({ eventId: webhookEvents.eventId, status: webhookEvents.status })
    .from(webhookEvents)
    .where(and(eq(webhookEvents.provider, provider), inArray(webhookEvents.eventId, storable)));
  return new Map(rows.map((row) => [row.eventId, row.status]));
}

/**
 * Replays each event in turn. Unknown ids are checked first, so a typo changes nothing (like
 * `outbox retry`). A completed or ignored event is not applied again, only recorded: replaying is
 * safe to repeat. A failure is recorded as `failed`, due now, and never dead-letters by itself (no
 * maxAttempts): the operator who replays decides what happens next. The audit row is written in the
 * transaction that commits the outcome, so a replay is never applied unaudited (nor audited undone).
 * An operator name the database cannot store is refused (invalid_request) before anything is read.
 */
export async function replayEvents(context: ReplayContext, request: ReplayRequest): Promise<ReplayResult> {
  assertOperatorName(request.operator);
  const eventIds = [...new Set(request.eventIds)];
  const states = await eventStates(context.db, request.provider, eventIds);
  const missing = eventIds.filter((id) => !states.has(id));
  if (missing.length > 0) return { kind: 'not_found', eventIds: missing };

  const stored: StoredContext = {
    db: context.db,
    handlers: context.handlers,
    // Every provider, secret or not: one switched off since can still have its events replayed.
    sendersByName: context.sendersByName ?? sendersByName,
  };
  const events: ReplayedEvent[] = [];
  for (const eventId of eventIds) {
    const before = states.get(eventId) as WebhookEventStatus;
    const key = { provider: request.provider, eventId };
    let afterStatus: WebhookEventStatus = before;
    // The audit row, in the transaction that commits what the replay did (or found): both or neither.
    const audit = async (tx: Transaction, outcome: StoredOutcome) => {
      afterStatus =
        outcome === 'skipped' ? ((await eventStates(tx, request.provider, [eventId])).get(eventId) ?? before) : outcome;
      await recordOperatorActions(tx, new Date(context.clock()), [
        {
          operator: request.operator,
          action: 'replay',
          targetKind: 'event',
          target: `${request.provider}/${eventId}`,
          beforeStatus: before,
          afterStatus,
          jobId: request.jobId ?? null,
        },
      ]);
    };
    // `skipped`: not replayable, or a concurrent replay or worker took the row first; nothing applied.
    const outcome = REPLAYABLE.includes(before)
      ? (
          await applyStoredEvent(stored, key, {
            from: REPLAYABLE,
            onFailure: { retryAt: new Date(context.clock()) },
            alongside: audit,
          })
        ).outcome
      : await context.db.transaction(async (tx) => {
          await audit(tx, 'skipped');
          return 'skipped' as const;
        });
    // Whether the event went through the domain path; it is applied only if it came out done.
    const ran = outcome !== 'skipped';
    const after = await getEvent(context.db, key);
    context.logger.info('operator replay', {
      operator: request.operator,
      ...(request.jobId === undefined ? {} : { job_id: request.jobId }),
      provider: request.provider,
      event_id: eventId,
      before,
      after: afterStatus,
      ran,
      applied: ran && after !== undefined && isFinished(after.status),
      attempt: after?.attempts,
    });
    if (after === undefined) continue;
    context.metrics?.countReplay(
      ran && after.status !== 'received' && after.status !== 'processing' ? after.status : 'not_applied',
    );
    const reason = replayReason(before, ran, after);
    const result: ReplayOutcome = !ran ? 'skipped' : isFinished(after.status) ? 'applied' : 'failed';
    events.push({
      eventId,
      before,
      outcome: result,
      applied: result === 'applied',
      after,
      ...(reason === undefined ? {} : { reason }),
    });
  }
  return { kind: 'replayed', events };
}
