// The in-process schedule the Node entry runs its background steps on: one run at a time, failures
// logged and survived, interval 0 is off, and stop() waits for the run in progress (so the database
// can close). The Node process and the Worker's cron run one list of steps, under the same names.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createLogger } from '../src/lib/logger.ts';
import type { BackgroundStep } from '../src/ops/maintenance/background.ts';
import { backgroundSteps, cronSteps, processSteps } from '../src/ops/maintenance/background-steps.ts';
import { type ScheduleOptions, scheduleSteps, startSchedule } from '../src/ops/maintenance/schedule.ts';
import { useTestDatabase } from './helpers/database.ts';
import { deferred } from './helpers/facts.ts';
import { WAIT_MS } from './helpers/patience.ts';
import { cronParts } from './helpers/step-parts.ts';

const { db } = await useTestDatabase();

/** A schedule every 5 ms with fixed jitter; its log lines are kept for assertions. */
function schedule(run: ScheduleOptions['run'], overrides: Partial<ScheduleOptions> = {}) {
  const lines: string[] = [];
  const logger = createLogger({ level: 'debug', now: () => new Date(), write: (line) => lines.push(line) });
  return { lines, ...startSchedule({ name: 'test', intervalMs: 5, random: () => 0.5, logger, run, ...overrides }) };
}

describe('startSchedule', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  // The schedule's timers are faked and each run lasts until the test ends it, so "no second run
  // while one is in progress" holds over as many intervals as the test lets pass, on any machine.
  it('never overlaps runs, and stop() waits for the one in progress', async () => {
    vi.useFakeTimers();
    let active = 0;
    let maxActive = 0;
    const runs: Array<ReturnType<typeof deferred>> = [];
    const running = schedule(async () => {
      const run = deferred();
      runs.push(run);
      active += 1;
      maxActive = Math.max(maxActive, active);
      await run.promise;
      active -= 1;
    });
    // A thousand intervals while the first run is in progress: no second one starts.
    await vi.advanceTimersByTimeAsync(5_000);
    expect(runs).toHaveLength(1);
    runs[0]?.resolve();
    await vi.advanceTimersByTimeAsync(5_000);
    expect(runs).toHaveLength(2);

    let stopped = false;
    const stopping = running.stop().then(() => {
      stopped = true;
    });
    await vi.advanceTimersByTimeAsync(5_000);
    expect(stopped).toBe(false);
    runs[1]?.resolve();
    await stopping;
    expect(active).toBe(0);
    // Stopped: however long the schedule waits now, no run starts again.
    await vi.advanceTimersByTimeAsync(5_000);
    expect(runs).toHaveLength(2);
    expect(maxActive).toBe(1);
  });

  it('runs again at once after a run that stopped with work left, else an interval later', async () => {
    vi.useFakeTimers();
    let runs = 0;
    const running = schedule(
      async () => {
        runs += 1;
        return { again: runs <= 3 };
      },
      { intervalMs: 5_000 },
    );
    await vi.advanceTimersByTimeAsync(5_010);
    // The first run, and the three it asked for at once, without an interval between them.
    expect(runs).toBe(4);
    await vi.advanceTimersByTimeAsync(4_980);
    expect(runs).toBe(4);
    await vi.advanceTimersByTimeAsync(20);
    expect(runs).toBe(5);
    await running.stop();
  });

  it('logs a failed run by class and keeps going', async () => {
    let runs = 0;
    const running = schedule(
      async () => {
        runs += 1;
        if (runs === 1) throw new TypeError('secret detail');
      },
      { name: 'outbox_drain' },
    );
    await expect.poll(() => runs, { timeout: WAIT_MS }).toBeGreaterThanOrEqual(2);
    await running.stop();
    expect(JSON.parse(running.lines[0] ?? '{}')).toMatchObject({
      level: 'error',
      msg: 'maintenance step',
      step: 'outbox_drain',
      outcome: 'failed',
      error: 'TypeError',
    });
    expect(running.lines.join('\n')).not.toContain('secret detail');
  });

  it('does nothing with an interval of 0', async () => {
    vi.useFakeTimers();
    let runs = 0;
    const running = schedule(
      async () => {
        runs += 1;
      },
      { intervalMs: 0 },
    );
    expect(vi.getTimerCount()).toBe(0);
    await vi.advanceTimersByTimeAsync(5_000);
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
    await expect.poll(() => started, { timeout: WAIT_MS }).toBe(true);
    await running.stop();
    expect(aborted).toBe(true);
  });
});

describe('one list of background steps', () => {
  it('the process and the cron take theirs from it, under the same snake_case names', () => {
    const names = backgroundSteps.map((step) => step.name);
    expect(new Set(names).size).toBe(names.length);
    for (const name of names) expect(name).toMatch(/^[a-z]+(_[a-z]+)*$/);
    expect(cronSteps.map((step) => step.name)).toEqual(
      names.filter((name) => !name.startsWith('refused_') && name !== 'delivery_log'),
    );
    expect(processSteps.map((step) => step.name)).toEqual(names.filter((name) => name !== 'database_readiness'));
  });

  it('a process starts only the steps on in its configuration', () => {
    const sync = cronParts(db);
    const async_ = cronParts(db, { config: { ...sync.config, PROCESSING_MODE: 'async' } });
    const on = (parts: typeof sync) =>
      processSteps.filter((step) => step.intervalMs(parts.config) > 0).map((step) => step.name);
    expect(on(sync)).not.toContain('inbox_work');
    expect(on(sync)).not.toContain('inbox_sweep');
    expect(on(async_)).toEqual(expect.arrayContaining(['inbox_work', 'inbox_sweep', 'outbox_drain', 'bulk_jobs']));
  });

  it("logs a run under the step's name when it changed something, and keeps quiet when not", async () => {
    const lines: Array<Record<string, unknown>> = [];
    const logger = createLogger({
      level: 'debug',
      now: () => new Date(),
      write: (line) => lines.push(JSON.parse(line)),
    });
    let runs = 0;
    const counting: BackgroundStep = {
      name: 'counting_step',
      runsIn: 'both',
      intervalMs: () => 5,
      prepare: () => async () => {
        runs += 1;
        return { changed: runs === 2 ? 1 : 0 };
      },
      lineFor: (fields) => (fields.changed === 1 ? 'warn' : undefined),
    };
    const off: BackgroundStep = { ...counting, name: 'off_step', intervalMs: () => 0 };
    const schedules = scheduleSteps(
      [counting, off],
      { ...cronParts(db), runtime: 'process' },
      { random: () => 0.5, logger },
    );
    expect(schedules).toHaveLength(1);
    await expect.poll(() => runs, { timeout: WAIT_MS }).toBeGreaterThanOrEqual(3);
    await Promise.all(schedules.map((schedule) => schedule.stop()));
    expect(lines).toEqual([
      expect.objectContaining({
        level: 'warn',
        msg: 'maintenance step',
        step: 'counting_step',
        outcome: 'ok',
        changed: 1,
      }),
    ]);
  });

  it('a step whose fields say it stopped with work left runs again at once, with its budget and the stop signal', async () => {
    vi.useFakeTimers();
    const logger = createLogger({ level: 'silent', now: () => new Date(), write: () => {} });
    const given: Array<{ budgetMs?: number | undefined; signal?: AbortSignal | undefined }> = [];
    // An hour's interval: only `againAtOnce` brings the second and third runs within the first hour.
    const busy: BackgroundStep = {
      name: 'busy_step',
      runsIn: 'both',
      intervalMs: () => 3_600_000,
      processBudgetMs: 1234,
      prepare: () => async (options) => {
        given.push(options);
        return { stopped_by: given.length < 3 ? 'budget' : 'drained' };
      },
      againAtOnce: (fields) => fields.stopped_by === 'budget',
    };
    const [running] = scheduleSteps([busy], { ...cronParts(db), runtime: 'process' }, { random: () => 0.5, logger });
    try {
      await vi.advanceTimersByTimeAsync(3_600_000);
      // The runs that go again at once follow within a few milliseconds, not another hour.
      for (let ms = 0; ms < 10 && given.length < 3; ms += 1) await vi.advanceTimersByTimeAsync(1);
      expect(given).toHaveLength(3);
      await vi.advanceTimersByTimeAsync(60_000);
      expect(given).toHaveLength(3);
      expect(given[0]?.budgetMs).toBe(1234);
      expect(given[0]?.signal).toBeInstanceOf(AbortSignal);
    } finally {
      await running?.stop();
      vi.useRealTimers();
    }
  });

  it('a step that reports nothing and has no line runs on quietly, and stop() ends its timer', async () => {
    const lines: string[] = [];
    const logger = createLogger({ level: 'debug', now: () => new Date(), write: (line) => lines.push(line) });
    let runs = 0;
    const quiet: BackgroundStep = {
      name: 'quiet_step',
      runsIn: 'both',
      intervalMs: () => 5,
      prepare: () => async () => {
        runs += 1;
        return undefined;
      },
    };
    const schedules = scheduleSteps([quiet], { ...cronParts(db), runtime: 'process' }, { random: () => 0.5, logger });
    await expect.poll(() => runs, { timeout: WAIT_MS }).toBeGreaterThanOrEqual(3);
    await Promise.all(schedules.map((each) => each.stop()));
    const stoppedAt = runs;
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(runs).toBe(stoppedAt);
    expect(lines).toEqual([]);
  });
});
