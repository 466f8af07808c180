// The in-process schedule the Node entry runs the relay on: one run at a time, failures logged and
// survived, interval 0 is off, and stop() waits for the run in progress (so the database can close).
import { describe, expect, it } from 'vitest';
import { createLogger } from '../src/ops/logger.ts';
import { startSchedule } from '../src/ops/schedule.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function capture() {
  const lines: string[] = [];
  return { lines, logger: createLogger({ level: 'debug', now: () => new Date(), write: (line) => lines.push(line) }) };
}

describe('startSchedule', () => {
  it('never overlaps runs, and stop() waits for the one in progress', async () => {
    let active = 0;
    let maxActive = 0;
    let runs = 0;
    let finished = 0;
    const schedule = startSchedule({
      name: 'test',
      intervalMs: 5,
      random: () => 0.5,
      logger: capture().logger,
      run: async () => {
        runs += 1;
        active += 1;
        maxActive = Math.max(maxActive, active);
        await sleep(30);
        active -= 1;
        finished += 1;
      },
    });
    await sleep(100);
    await schedule.stop();
    expect(runs).toBeGreaterThanOrEqual(2);
    expect(maxActive).toBe(1);
    expect(finished).toBe(runs);
    await sleep(50);
    expect(runs).toBe(finished);
  });

  it('logs a failed run by class and keeps going', async () => {
    const { lines, logger } = capture();
    let runs = 0;
    const schedule = startSchedule({
      name: 'relay',
      intervalMs: 5,
      random: () => 0.5,
      logger,
      run: async () => {
        runs += 1;
        if (runs === 1) throw new TypeError('secret detail');
      },
    });
    await expect.poll(() => runs).toBeGreaterThanOrEqual(2);
    await schedule.stop();
    expect(JSON.parse(lines[0] ?? '{}')).toMatchObject({ level: 'error', msg: 'relay run failed', error: 'TypeError' });
    expect(lines.join('\n')).not.toContain('secret detail');
  });

  it('does nothing with an interval of 0', async () => {
    let runs = 0;
    const schedule = startSchedule({
      name: 'off',
      intervalMs: 0,
      random: () => 0.5,
      logger: capture().logger,
      run: async () => {
        runs += 1;
      },
    });
    await sleep(30);
    await schedule.stop();
    expect(runs).toBe(0);
  });

  it('aborts the signal of the run in progress when stopped', async () => {
    let aborted = false;
    let started = false;
    const schedule = startSchedule({
      name: 'abort',
      intervalMs: 1,
      random: () => 0.5,
      logger: capture().logger,
      run: async (signal) => {
        started = true;
        await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
        aborted = signal.aborted;
      },
    });
    await expect.poll(() => started).toBe(true);
    await schedule.stop();
    expect(aborted).toBe(true);
  });
});
