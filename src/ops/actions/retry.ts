// Operator retry of dead outbox messages, shared by the CLI (`outbox retry`), the admin API and the
// dashboard: the outbox's own all-or-nothing retry (src/outbox/operator.ts), plus the one log line
// per retried message that every operator action leaves beside its audit row. A name the audit
// cannot store is refused before anything changes.
import type { Executor } from '../../db/client.ts';
import type { Clock } from '../../lib/clock.ts';
import type { Logger } from '../../lib/logger.ts';
import type { Metrics } from '../../lib/metrics.ts';
import { assertOperatorName } from '../../lib/operator-name.ts';
import { type RetryRequest, type RetryResult, retryDeadMessages } from '../../outbox/operator.ts';

export async function retryOutbox(
  context: { db: Executor; clock: Clock; logger: Logger; metrics?: Pick<Metrics, 'countRetry'> },
  request: Omit<RetryRequest, 'now'>,
): Promise<RetryResult> {
  assertOperatorName(request.operator);
  const result = await retryDeadMessages(context.db, { ...request, now: new Date(context.clock()) });
  if (result.kind === 'retried') {
    for (const _ of result.skipped) context.metrics?.countRetry('skipped');
    for (const id of result.ids) {
      context.metrics?.countRetry('retried');
      context.logger.info('operator retry', {
        operator: request.operator,
        ...(request.jobId === undefined ? {} : { job_id: request.jobId }),
        message_id: id,
        before: 'dead',
        after: 'pending',
      });
    }
  }
  return result;
}
