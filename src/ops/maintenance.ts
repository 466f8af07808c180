// Scheduled maintenance (the Worker's cron trigger): a list of named steps run one after another,
// each under its own share of the invocation's time budget. A step that fails or overruns is logged
// and the next one still runs; every step logs one JSON line with its outcome.
import type { Config } from '../config.ts';
import type { Database } from '../db/client.ts';
import { describeError } from '../db/errors.ts';
import type { MigrationMark } from '../db/migrations.ts';
import { type Clock, elapsedMs } from '../lib/clock.ts';
import type { LogFields, Logger } from '../lib/logger.ts';
import type { Tracer } from '../lib/tracing.ts';
import type { QueueProducer } from '../outbox/publishers/queues.ts';

/** What a step may use: the whole configuration, since each step reads its own settings. */
export interface MaintenanceDeps {
  config: Config;
  db: Database;
  clock: Clock;
  logger: Logger;
  expectedMigration: MigrationMark;
  /**
   * The Worker's Queues producer bindings by name: OUTBOX_QUEUE is the `default` destination's target
   * when OUTBOX_TARGET_URL is unset, and a destination's `queue:BINDING` names one.
   */
  outboxQueues?: ReadonlyMap<string, QueueProducer>;
  /** Spans for the drains' publishes and applications (the Worker's, when OTEL_* asks for them). */
  tracer?: Tracer;
}

export interface MaintenanceStep {
  /** snake_case; the `step` field of the step's log line. */
  readonly name: string;
  /**
   * Works for at most `budgetMs` (a batching step loops while batches come back full and time is
   * left), then returns counts for its log line: never ids, payloads or messages from the database.
   */
  run(deps: MaintenanceDeps, budgetMs: number): Promise<LogFields | undefined>;
}

/** A failure whose message we wrote ourselves, so it is safe to log as is. */
export class StepFailure extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StepFailure';
  }
}

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
  steps: readonly MaintenanceStep[],
  deps: MaintenanceDeps,
  options: MaintenanceOptions,
): Promise<StepResult[]> {
  const { logger } = deps;
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
      // Called inside the try: a step that throws before its first await is a failure like any other.
      const report = await withinLimit(step.run(deps, budgetMs), shareMs);
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
