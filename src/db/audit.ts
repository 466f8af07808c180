// The one writer of `operator_actions`: every action an operator takes (and the system's own, such as
// a pause that ends by itself) is recorded through `recordOperatorActions`, in the caller's
// transaction (the audit commits with the change it records, or neither does), stamped by the
// caller's clock (the service's, passed in like every dependency), each row checked against the
// closed set of actions and targets before anything is written.
import { z } from 'zod';
import { operatorNameProblem } from '../lib/operator-name.ts';
import type { Executor } from './client.ts';
import { operatorActions } from './schema.ts';

/** Every action the audit knows; a new kind of action is added here first. */
export const OPERATOR_ACTIONS = [
  'replay',
  'retry',
  'send',
  'pause',
  'resume',
  'bulk_replay',
  'bulk_retry',
  'bulk_send',
  'bulk_cancel',
] as const;

const operatorAction = z.object({
  operator: z.string().refine((name) => operatorNameProblem(name) === undefined),
  action: z.enum(OPERATOR_ACTIONS),
  targetKind: z.enum(operatorActions.targetKind.enumValues),
  target: z.string().min(1),
  beforeStatus: z.string().nullable().optional(),
  afterStatus: z.string().nullable().optional(),
  /** The bulk job an item's row belongs to. */
  jobId: z.uuid().nullable().optional(),
  /** What the action was given beyond its target: a job's filter, a pause's duration and note. */
  detail: z.record(z.string(), z.unknown()).nullable().optional(),
});

export type OperatorAction = z.input<typeof operatorAction>;

/** Writes one row per action, all at `at`; nothing when the list is empty. Throws on a malformed action. */
export async function recordOperatorActions(tx: Executor, at: Date, actions: readonly OperatorAction[]): Promise<void> {
  if (actions.length === 0) return;
  const rows = actions.map((action) => ({ ...operatorAction.parse(action), at }));
  await tx.insert(operatorActions).values(rows);
}

/**
 * One row per target for the same action of one operator (a batch of retries, a job's copies): the
 * shared fields once, and what is each target's own (its id, its detail) from `each`.
 */
export function recordOnEach<Target>(
  tx: Executor,
  at: Date,
  targets: readonly Target[],
  shared: Omit<OperatorAction, 'target'>,
  each: (target: Target) => Pick<OperatorAction, 'target' | 'detail'>,
): Promise<void> {
  return recordOperatorActions(
    tx,
    at,
    targets.map((target) => ({ ...shared, ...each(target) })),
  );
}
