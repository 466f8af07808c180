// Scheduled maintenance (the Worker's cron trigger): the background steps (background-steps.ts) run
// one after another, each made afresh and run under its own share of the invocation's time budget.
// A step that fails or overruns is logged and the next one still runs; every step logs one JSON line
// with its outcome.
import { describeError } from '../../db/errors.ts';
import { elapsedMs } from '../../lib/clock.ts';
import type { LogFields } from '../../lib/logger.ts';
import { type BackgroundStep, StepFailure, type StepParts } from './background.ts';

export type StepOutcome = 'ok' | 'failed' | 'overran' | 'skipped';

export interface StepResult {
  step: string;
  outcome: StepOutcome;
  durationMs: number;
}

export interface MaintenanceOptions {
  /** Wall-clock time the whole run may take, all steps together. */
  budgetMs: number;
  /** Extra fields for the run's summary line (the cron expression, say). */
  fields?: LogFields;
}

/**
 * A step is told 80% of its share and cut off at the whole share: the slack is for the batch it was
 * in when its own budget ran out, so a well-behaved step is never reported as overrun.
 */
const PLANNING_RATIO = 0.8;

class Overrun extends Error {}

/** Resolves with the step's report, or rejects with Overrun once `limitMs` has passed. */
function withinLimit<T>(work: Promise<T>, limitMs: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | null = null;
  const limit = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Overrun()), limitMs);
  });
  // An overrun step keeps running in the background; its late failure must not go unhandled.
  work.catch(() => {});
  return Promise.race([work, limit]).finally(() => {
    if (timer !== null) clearTimeout(timer);
  });
}

export async function runMaintenance(
  steps: readonly BackgroundStep[],
  parts: StepParts,
  options: MaintenanceOptions,
): Promise<StepResult[]> {
  const { logger } = parts;
  const runStarted = performance.now();
  const results: StepResult[] = [];
  for (const [index, step] of steps.entries()) {
    // Whole milliseconds: a share is planned in whole milliseconds.
    const remaining = options.budgetMs - Math.round(elapsedMs(runStarted));
    const shareMs = Math.floor(remaining / (steps.length - index));
    const budgetMs = Math.floor(shareMs * PLANNING_RATIO);
    const started = performance.now();
    const line = (outcome: StepOutcome, extra?: LogFields): StepResult => {
      const durationMs = elapsedMs(started);
      const fields = { step: step.name, outcome, duration_ms: durationMs, budget_ms: budgetMs, ...extra };
      if (outcome === 'ok') logger.info('maintenance step', fields);
      else logger.error('maintenance step', fields);
      return { step: step.name, outcome, durationMs };
    };
    if (budgetMs < 1) {
      results.push(line('skipped', { error: 'no time left in this run' }));
      continue;
    }
    try {
      // Made and called inside the try: a step that throws before its first await is a failure like any other.
      const report = await withinLimit(step.prepare(parts)({ budgetMs }), shareMs);
      results.push(line('ok', report));
    } catch (error) {
      if (error instanceof Overrun) results.push(line('overran', { error: `still running after ${shareMs} ms` }));
      else results.push(line('failed', { error: error instanceof StepFailure ? error.message : describeError(error) }));
    }
  }
  const failed = results.filter((result) => result.outcome !== 'ok').length;
  const summary = { ...options.fields, steps: results.length, failed, duration_ms: elapsedMs(runStarted) };
  if (failed === 0) logger.info('maintenance run', summary);
  else logger.warn('maintenance run', summary);
  return results;
}
