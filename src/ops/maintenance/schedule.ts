// The background steps inside a long-running process (the Node entry): each on a timer of its own,
// one run at a time, the next one an interval with jitter after the previous one ended (at once when
// the run says it stopped with work left), and a stop
// that waits for the run in progress, so shutdown can close the database after it. A run logs the
// cron's line (`maintenance step`, under the step's name) when it fails or changed something.
import { describeError } from '../../db/errors.ts';
import type { RandomSource } from '../../lib/backoff.ts';
import { elapsedMs } from '../../lib/clock.ts';
import type { Logger } from '../../lib/logger.ts';
import type { BackgroundStep, StepParts } from './background.ts';

export interface ScheduleOptions {
  name: string;
  /** 0 turns the schedule off. */
  intervalMs: number;
  random: RandomSource;
  logger: Logger;
  /**
   * One run; `signal` aborts when the schedule stops, so a long run can end early. `again`: it
   * stopped with work left, and the next starts at once rather than an interval later.
   */
  run(signal: AbortSignal): Promise<{ again: boolean } | undefined>;
}

export interface Schedule {
  /** Resolves once no run is in progress and none will start. */
  stop(): Promise<void>;
}

/** ±20% around the interval, so several processes started together do not poll in lockstep. */
function jittered(intervalMs: number, random: RandomSource): number {
  return Math.round(intervalMs * (0.8 + 0.4 * random()));
}

/** The longest wait between one run's end and the next run's start: the interval at its jitter's top. */
export function longestIntervalMs(intervalMs: number): number {
  return Math.round(intervalMs * 1.2);
}

export function startSchedule(options: ScheduleOptions): Schedule {
  if (options.intervalMs === 0) return { stop: async () => {} };
  const controller = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
  let running: Promise<void> = Promise.resolve();
  let again = false;

  const tick = () => {
    timer = undefined;
    running = options.run(controller.signal).then(
      (outcome) => {
        again = outcome?.again === true;
      },
      (error: unknown) => {
        again = false;
        // A failed run (database down, say) is retried at the next tick; the process keeps serving.
        options.logger.error('maintenance step', {
          step: options.name,
          outcome: 'failed',
          error: describeError(error),
        });
      },
    );
    void running.then(() => {
      if (controller.signal.aborted) return;
      timer = setTimeout(tick, again ? 0 : jittered(options.intervalMs, options.random));
    });
  };
  timer = setTimeout(tick, jittered(options.intervalMs, options.random));

  return {
    async stop() {
      controller.abort();
      if (timer !== undefined) clearTimeout(timer);
      await running;
    },
  };
}

/** Starts every step whose interval is not 0 in this configuration: what start-up and shutdown stop. */
export function scheduleSteps(
  steps: readonly BackgroundStep[],
  parts: StepParts,
  options: Pick<ScheduleOptions, 'random' | 'logger'>,
): Schedule[] {
  return steps.flatMap((step) => {
    const intervalMs = step.intervalMs(parts.config);
    if (intervalMs === 0) return [];
    const run = step.prepare(parts);
    const schedule = startSchedule({
      ...options,
      name: step.name,
      intervalMs,
      run: async (signal) => {
        const started = performance.now();
        const fields = await run({ budgetMs: step.processBudgetMs, signal });
        const again = fields !== undefined && step.againAtOnce?.(fields) === true;
        const level = fields === undefined ? undefined : step.lineFor?.(fields);
        if (level !== undefined) {
          options.logger[level]('maintenance step', {
            step: step.name,
            outcome: 'ok',
            duration_ms: elapsedMs(started),
            ...fields,
          });
        }
        return { again };
      },
    });
    return [schedule];
  });
}
