// Pausing an outbox destination, shared by the CLI (`destinations pause|resume`) and the admin API:
// checks the request (operator name, note, a configured destination), then writes and audits it in
// one transaction through src/outbox/destination-state.ts. While paused the destination's relays claim
// nothing; its rows wait, attempts untouched, and flow again once it is resumed.
import type { Database } from '../../db/client.ts';
import type { Clock } from '../../lib/clock.ts';
import { AppError } from '../../lib/errors.ts';
import type { Logger } from '../../lib/logger.ts';
import { assertOperatorName } from '../../lib/operator-name.ts';
import {
  type DestinationState,
  type DestinationStatus,
  destinationState,
  writeDestinationPause,
  writeDestinationResume,
} from '../../outbox/destination-state.ts';
import { logResume, pauseNoteProblem } from './sender-pauses.ts';

export interface DestinationPauseContext {
  db: Database;
  clock: Clock;
  logger: Logger;
  /** The configured destinations' names: only those can be paused or resumed. */
  configured: ReadonlySet<string>;
}

export type DestinationPauseResult =
  | { kind: 'paused'; before: DestinationStatus; destination: DestinationState }
  | { kind: 'not_found' };

/** Pauses a configured destination (else `not_found`); a bad operator name or note is refused first. */
export async function pauseDestination(
  context: DestinationPauseContext,
  request: { name: string; operator: string; note?: string | undefined },
): Promise<DestinationPauseResult> {
  assertOperatorName(request.operator);
  const note = request.note?.trim() || null;
  if (note !== null && pauseNoteProblem(note) !== undefined) throw new AppError('invalid_request', { field: 'note' });
  if (!context.configured.has(request.name)) return { kind: 'not_found' };
  const now = new Date(context.clock());
  const { before, destination } = await context.db.transaction((tx) =>
    writeDestinationPause(tx, { name: request.name, operator: request.operator, note }, now),
  );
  context.logger.info('operator destination pause', {
    operator: request.operator,
    destination: request.name,
    before,
    after: 'paused',
  });
  return { kind: 'paused', before, destination };
}

export type DestinationResumeResult =
  | { kind: 'resumed' | 'not_paused'; destination: DestinationState }
  | { kind: 'not_found' };

/** Resumes a configured destination: `not_paused` (nothing changed, nothing recorded) when it was not paused. */
export async function resumeDestination(
  context: DestinationPauseContext,
  request: { name: string; operator: string },
): Promise<DestinationResumeResult> {
  assertOperatorName(request.operator);
  if (!context.configured.has(request.name)) return { kind: 'not_found' };
  const now = new Date(context.clock());
  const resumed = await context.db.transaction((tx) => writeDestinationResume(tx, request, now));
  if (resumed === undefined) {
    return { kind: 'not_paused', destination: await destinationState(context.db, request.name) };
  }
  logResume(context.logger, 'operator destination resume', request.operator, { destination: request.name });
  return { kind: 'resumed', destination: resumed };
}
