// What an operator does with the outbox by hand (CLI, admin API, dashboard): send dead messages back
// to `pending`, each retry audited in `operator_actions` in the same transaction as the change it
// records. Reading messages is src/ops/reads/outbox-view.ts.

import { inArray } from 'drizzle-orm';
import { recordOnEach } from '../db/audit.ts';
import type { Executor } from '../db/client.ts';
import { type OutboxStatus, outboxMessages } from '../db/schema.ts';
import { resurrectDead } from './message-rows.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isMessageId(value: string): boolean {
  return UUID.test(value);
}

export type RetryResult =
  | { kind: 'retried'; ids: string[]; skipped: Array<{ id: string; status: OutboxStatus }> }
  | { kind: 'not_found'; ids: string[] };

export interface RetryRequest {
  ids: readonly string[];
  operator: string;
  now: Date;
  /** The bulk job this retry is a batch of: written on each audit row. */
  jobId?: string | undefined;
}

/** Thrown inside the transaction to roll it back when an id is unknown. */
class RetryRolledBack extends Error {
  constructor(readonly missing: string[]) {
    // Stryker disable next-line StringLiteral: never shown: retryDeadMessages catches it and answers not_found
    super('unknown message ids');
    // Stryker disable next-line StringLiteral: never shown, as above
    this.name = 'RetryRolledBack';
  }
}

/**
 * Dead -> pending with attempts 0, due at `now` and no lease, plus one audit row per message. All
 * or nothing: when any id is unknown nothing changes. A message that is not dead is left alone and
 * reported as skipped (retrying is for dead letters; a pending message is on its way already and a
 * published one was delivered).
 */
export async function retryDeadMessages(db: Executor, request: RetryRequest): Promise<RetryResult> {
  const ids = [...new Set(request.ids.map((id) => id.toLowerCase()))];
  const table = outboxMessages;
  try {
    return await db.transaction(async (tx) => {
      const retried = await resurrectDead(tx, ids, request.now);
      const retriedIds = new Set(retried);
      const others = ids.filter((id) => !retriedIds.has(id));
      const found =
        others.length === 0
          ? []
          : await tx.select({ id: table.id, status: table.status }).from(table).where(inArray(table.id, others));
      const missing = others.filter((id) => !found.some((row) => row.id === id));
      if (missing.length > 0) throw new RetryRolledBack(missing);
      const retry = { action: 'retry', targetKind: 'outbox', beforeStatus: 'dead', afterStatus: 'pending' } as const;
      const by = { operator: request.operator, jobId: request.jobId ?? null };
      await recordOnEach(tx, request.now, retried, { ...retry, ...by }, (id) => ({ target: id }));
      return { kind: 'retried' as const, ids: retried, skipped: found };
    });
  } catch (error) {
    if (error instanceof RetryRolledBack) return { kind: 'not_found', ids: error.missing };
    throw error;
  }
}
