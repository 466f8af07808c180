// Synchronous processing of one authenticated event: claim its id, apply the domain change and
// complete the claim in a single transaction; on a handler failure, roll back and record the failure
// in a transaction of its own. Also what both modes decide before any database work (the plan).
import type { Database } from '../db/client.ts';
import { describeCause, isTransientDatabaseError } from '../db/errors.ts';
import { type EventHandler, findHandler, type HandlerMap } from '../domain/handlers.ts';
import { AppError, refusedField } from '../lib/errors.ts';
import { enqueuerFor } from '../outbox/enqueue.ts';
import { type Deadline, transactionBefore } from './deadline.ts';
import { type AppliedStatus, type InboxEvent, insertOrTakeBack, recordDeliveryFailure } from './event-rows.ts';

/** What a delivery's answer says happened to its event. */
export type DeliveryOutcome = 'completed' | 'ignored' | 'parked' | 'duplicate';

/** What the service will do with an event, decided before any database work. */
export type Plan =
  | { kind: 'apply'; handler: EventHandler<unknown>; payload: unknown }
  | { kind: 'ignored' }
  | { kind: 'parked' };

/** Unknown schema version -> parked; no handler -> ignored; else the handler's own validation. */
export function planFor(handlers: HandlerMap, event: InboxEvent): Plan {
  if (event.unknownSchemaVersion) return { kind: 'parked' };
  const handler = findHandler(handlers, event.provider, event.eventType);
  if (handler === undefined) return { kind: 'ignored' };
  const parsed = handler.schema.safeParse(event.payload);
  if (!parsed.success) throw new AppError('invalid_payload', { why: { field: refusedField(parsed.error) } });
  return { kind: 'apply', handler, payload: parsed.data };
}

export const finalStatus = { apply: 'completed', ignored: 'ignored', parked: 'parked' } as const satisfies Record<
  Plan['kind'],
  AppliedStatus
>;

/** A handler failed; `lastError` is the cause as recorded in the row, and its log line says the same. */
export class ProcessingFailure extends AppError {
  constructor(
    readonly attempt: number,
    cause: unknown,
    lastError: string,
  ) {
    super('processing_failed', { cause, why: { error: lastError } });
  }
}

export interface Processed {
  outcome: DeliveryOutcome;
  /** 1 for the first application, n+1 after n recorded failures; absent for a duplicate. */
  attempt?: number;
}

export async function processEvent(
  db: Database,
  deadline: Deadline,
  event: InboxEvent,
  plan: Plan,
): Promise<Processed> {
  try {
    return await transactionBefore(db, deadline, async (tx): Promise<Processed> => {
      const claimed = await insertOrTakeBack(tx, event, { status: finalStatus[plan.kind] });
      if (claimed === null) return { outcome: 'duplicate' };
      if (plan.kind === 'apply') {
        const stored = { ...event, eventId: claimed.eventId };
        await plan.handler.apply({ tx, event: stored, enqueue: enqueuerFor(tx, stored) }, plan.payload);
      }
      return { outcome: finalStatus[plan.kind], attempt: claimed.attemptCount + 1 };
    });
  } catch (error) {
    if (error instanceof AppError) throw error;
    if (isTransientDatabaseError(error)) throw new AppError('unavailable', { cause: error });
    const lastError = describeCause(error);
    let attempt: number;
    try {
      attempt = await recordDeliveryFailure(db, event, lastError);
    } catch (recordError) {
      throw new AppError('unavailable', { cause: recordError });
    }
    throw new ProcessingFailure(attempt, error, lastError);
  }
}
