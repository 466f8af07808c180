// The in-process schedule the Node entry runs the relay on: one run at a time, failures logged and
// survived, interval 0 is off, and stop() waits for the run in progress (so the database can close).
import { describe, expect, it } from 'vitest';
import { createLogger } from '../src/lib/logger.ts';
import { type ScheduleOptions, startSchedule } from '../src/ops/schedule.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A schedule every 5 ms with fixed jitter; its log lines are kept for assertions. */
function schedule(run: ScheduleOptions['run'], overrides: Partial<ScheduleOptions> = {}) {
  const lines: string[] = [];
  const logger = createLogger({ level: 'debug', now: () => new Date(), write: (line) => lines.push(line) });
  return { lines, ...startSchedule({ name: 'test', intervalMs: 5, random: () => 0.5, logger, run, ...overrides }) };
}

describe('startSchedule', () => {
  it('never overlaps runs, and stop() waits for the one in progress', async () => {
    let active = 0;
    let maxActive = 0;
    let runs = 0;
    let finished = 0;
    const running = schedule(async () => {
      runs += 1;
      active += 1;
      maxActive = Math.max(maxActive, active);
      await sleep(30);
      active -= 1;
      finished += 1;
    });
    await sleep(100);
    await running.stop();
    expect(runs).toBeGreaterThanOrEqual(2);
    expect(maxActive).toBe(1);
    expect(finished).toBe(runs);
    await sleep(50);
    expect(runs).toBe(finished);
  });

  it('logs a failed run by class and keeps going', async () => {
    let runs = 0;
    const running = schedule(
      async () => {
        runs += 1;
        if (runs === 1) throw new TypeError('secret detail');
      },
      { name: 'relay' },
    );
    await expect.poll(() => runs).toBeGreaterThanOrEqual(2);
    await running.stop();
    expect(JSON.parse(running.lines[0] ?? '{}')).toMatchObject({
      level: 'error',
      msg: 'relay run failed',
      error: 'TypeError',
    });
    expect(running.lines.join('\n')).not.toContain('secret detail');
  });

  it('does nothing with an interval of 0', async () => {
    let runs = 0;
    const running = schedule(
      async () => {
        runs += 1;
      },
      { intervalMs: 0 },
    );
    await sleep(30);
    await running.stop();
    expect(runs).toBe(0);
  });

  it('aborts the signal of the run in progress when stopped', async () => {
    let aborted = false;
    let started = false;
    const running = schedule(async (signal) => {
      started = true;
      await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
      aborted = signal.aborted;
    });
    await expect.poll(() => started).toBe(true);
    await running.stop();
    expect(aborted).toBe(true);
  });
});
