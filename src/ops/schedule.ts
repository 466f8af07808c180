// A periodic job inside a long-running process (the Node entry's outbox relay, inbox worker, lease
// sweeper and retention purge): one run at a time, the next one an interval with jitter after the previous one ended, and
// a stop that waits for the run in progress, so shutdown can close the database after it.
import { describeError } from '../db/errors.ts';
import type { RandomSource } from '../lib/backoff.ts';
import type { Logger } from '../lib/logger.ts';

export interface ScheduleOptions {
  name: string;
  /** 0 turns the schedule off. */
  intervalMs: number;
  random: RandomSource;
  logger: Logger;
  /** One run; `signal` aborts when the schedule stops, so a long run can end early. */
  run(signal: AbortSignal): Promise<void>;
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

  const tick = () => {
    timer = undefined;
    running = options.run(controller.signal).then(
      () => {},
      (error: unknown) => {
        // A failed run (database down, say) is retried at the next tick; the process keeps serving.
        options.logger.error(`${options.name} run failed`, { error: describeError(error) });
      },
    );
    void running.then(() => {
      if (!controller.signal.aborted) timer = setTimeout(tick, jittered(options.intervalMs, options.random));
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
