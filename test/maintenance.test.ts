// The scheduled maintenance runner (src/ops/maintenance/cron.ts): every step runs under its share of the
// budget, a failing or overrunning step is logged and does not stop the others, and the database
// readiness step against real databases. The runner's shares are measured on faked timers
// (setTimeout and performance.now), so what a step is given and when it is left behind are exact.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { connectDatabase, type Database } from '../src/db/client.ts';
import { createLogger } from '../src/lib/logger.ts';
import { type BackgroundStep, StepFailure } from '../src/ops/maintenance/background.ts';
import {
  countersFold,
  databaseReadiness,
  deliveryLog,
  inboxSweep,
  inboxWork,
  outboxDrain,
  pauseExpiry,
  refusedDeliveries,
  retentionPurge,
} from '../src/ops/maintenance/background-steps.ts';
import { runMaintenance } from '../src/ops/maintenance/cron.ts';
import { useEmptyDatabase, useTestDatabase } from './helpers/database.ts';
import { cronParts } from './helpers/step-parts.ts';

const { db } = await useTestDatabase();
const empty = await useEmptyDatabase();

function depsFor(database: Database) {
  const lines: Array<Record<string, unknown>> = [];
  const deps = cronParts(database, {
    logger: createLogger({ level: 'debug', now: () => new Date(), write: (line) => lines.push(JSON.parse(line)) }),
  });
  return { deps, lines, steps: () => lines.filter((line) => line.msg === 'maintenance step') };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A step that records the budget it was given and answers with `work`'s result. */
function step(name: string, work: (budgetMs: number) => Promise<Record<string, number> | undefined>) {
  const budgets: number[] = [];
  const definition: BackgroundStep = {
    name,
    runsIn: 'cron',
    intervalMs: () => 0,
    prepare:
      () =>
      ({ budgetMs = 0 }) => {
        budgets.push(budgetMs);
        return work(budgetMs);
      },
  };
  return { definition, budgets };
}

/** The runner's timers and clock, faked: time passes only when the test lets it. */
const fakeRunnerTimers = () => vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });

describe('runMaintenance', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('runs every step in order and logs each outcome with what the step reported', async () => {
    fakeRunnerTimers();
    const { deps, lines, steps } = depsFor(db);
    const first = step('first', async () => ({ published: 3 }));
    const second = step('second', async () => undefined);

    const results = await runMaintenance([first.definition, second.definition], deps, {
      budgetMs: 10_000,
      fields: { cron: '* * * * *' },
    });

    expect(results.map(({ step, outcome }) => [step, outcome])).toEqual([
      ['first', 'ok'],
      ['second', 'ok'],
    ]);
    expect(steps()).toEqual([
      expect.objectContaining({ level: 'info', step: 'first', outcome: 'ok', published: 3 }),
      expect.objectContaining({ level: 'info', step: 'second', outcome: 'ok' }),
    ]);
    // Each step plans for 80% of an equal share of what is left; no time passed during the first.
    expect(first.budgets[0]).toBe(4000);
    expect(second.budgets[0]).toBe(8000);
    expect(lines.at(-1)).toMatchObject({
      level: 'info',
      msg: 'maintenance run',
      cron: '* * * * *',
      steps: 2,
      failed: 0,
    });
    // Each step's time limit was cleared when it answered: no timer is left to hold the invocation.
    expect(vi.getTimerCount()).toBe(0);
  });

  it('logs a failing step and still runs the ones after it', async () => {
    const { deps, lines, steps } = depsFor(db);
    const thrown = step('throws_at_once', () => {
      throw new StepFailure('relay target refused the batch');
    });
    const rejected = step('rejects', async () => {
      throw Object.assign(new Error('duplicate key value violates "secret-value"'), { code: 'E_SOMETHING' });
    });
    const after = step('after', async () => ({ swept: 1 }));

    await runMaintenance([thrown.definition, rejected.definition, after.definition], deps, { budgetMs: 9000 });

    expect(steps()).toEqual([
      expect.objectContaining({
        level: 'error',
        step: 'throws_at_once',
        outcome: 'failed',
        error: 'relay target refused the batch',
      }),
      expect.objectContaining({ level: 'error', step: 'rejects', outcome: 'failed', error: 'Error: E_SOMETHING' }),
      expect.objectContaining({ level: 'info', step: 'after', outcome: 'ok', swept: 1 }),
    ]);
    expect(JSON.stringify(lines)).not.toContain('secret-value');
    expect(lines.at(-1)).toMatchObject({ level: 'warn', msg: 'maintenance run', steps: 3, failed: 2 });
  });

  it('moves on from a step that overruns its share, and the next one gets the time that is left', async () => {
    const { deps, steps } = depsFor(db);
    fakeRunnerTimers();
    const stuck = step('stuck', () => sleep(2_000).then(() => undefined));
    const next = step('next', async () => undefined);

    const started = performance.now();
    let finishedAfterMs = Number.NaN;
    const run = runMaintenance([stuck.definition, next.definition], deps, { budgetMs: 600 }).then(() => {
      finishedAfterMs = performance.now() - started;
    });
    // Every timer fires in order, the stuck step's own 2 s last: the run ended at its share, before it.
    await vi.runAllTimersAsync();
    await run;

    expect(finishedAfterMs).toBe(300);
    expect(steps()).toEqual([
      expect.objectContaining({ step: 'stuck', outcome: 'overran', error: 'still running after 300 ms' }),
      expect.objectContaining({ step: 'next', outcome: 'ok' }),
    ]);
    expect(next.budgets[0]).toBe(240);
  });

  it('skips the steps no time is left for, and says so', async () => {
    const { deps, steps } = depsFor(db);
    const never = step('never', async () => undefined);

    await runMaintenance([never.definition], deps, { budgetMs: 0 });

    expect(never.budgets).toEqual([]);
    expect(steps()).toEqual([
      expect.objectContaining({ step: 'never', outcome: 'skipped', error: 'no time left in this run' }),
    ]);
  });

  it('runs a step planned a single millisecond', async () => {
    fakeRunnerTimers();
    const { deps, steps } = depsFor(db);
    const brief = step('brief', async () => undefined);

    // A 2 ms share plans 80% of it, floored: 1 ms, the least a step is run with.
    await runMaintenance([brief.definition], deps, { budgetMs: 2 });

    expect(brief.budgets).toEqual([1]);
    expect(steps()).toEqual([expect.objectContaining({ step: 'brief', outcome: 'ok' })]);
  });
});

describe('the database readiness step', () => {
  it('passes on a migrated database', async () => {
    expect(await databaseReadiness.prepare(depsFor(db).deps)({ budgetMs: 1000 })).toEqual({ migrations: 'current' });
  });

  it('fails, naming the fix, on a database that was never migrated', async () => {
    const handle = connectDatabase({ url: empty.url, maxConnections: 1, statementTimeoutMs: 2000 });
    try {
      await expect(databaseReadiness.prepare(depsFor(handle.db).deps)({ budgetMs: 1000 })).rejects.toThrow(
        /npm run db:migrate/,
      );
    } finally {
      await handle.close();
    }
  });
});

// Each step as the cron runs it, on a database with nothing to do: what its line reports, and when a
// process logs it. These steps otherwise run only in the Worker and the started service (dist/).
describe("the cron's steps, each run by hand", () => {
  it('the sweep reports what it swept, and warns only when a lease had expired', async () => {
    expect(await inboxSweep.prepare(depsFor(db).deps)({ budgetMs: 1000 })).toEqual({ swept: 0, stopped_by: 'drained' });
    expect(inboxSweep.lineFor?.({ swept: 0 })).toBeUndefined();
    expect(inboxSweep.lineFor?.({ swept: 1 })).toBe('warn');
  });

  it('the worker skips in sync mode and reports its pass in async mode', async () => {
    const { deps } = depsFor(db);
    expect(await inboxWork.prepare(deps)({ budgetMs: 1000 })).toEqual({ skipped: 'sync mode' });
    const async_ = { ...deps, config: { ...deps.config, PROCESSING_MODE: 'async' as const } };
    expect(await inboxWork.prepare(async_)({ budgetMs: 1000 })).toEqual({
      claimed: 0,
      completed: 0,
      failed: 0,
      dead_lettered: 0,
      released: 0,
      stopped_by: 'drained',
    });
  });

  it('the retention purge and the counters fold report what they removed and merged', async () => {
    const { deps } = depsFor(db);
    expect(await retentionPurge.prepare(deps)({ budgetMs: 1000 })).toEqual({
      payloads_nulled: 0,
      rows_deleted: 0,
      rejection_counts_deleted: 0,
      deliveries_deleted: 0,
      stopped_by: 'drained',
    });
    expect(retentionPurge.lineFor?.({ rows_deleted: 0 })).toBe('info');
    expect(retentionPurge.intervalMs(deps.config)).toBe(60 * 60_000);
    expect(await countersFold.prepare(deps)({ budgetMs: 1000 })).toEqual({
      merged: expect.any(Number),
      stopped_by: 'drained',
    });
  });

  it('a drain that spent its budget goes again at once; a resume and nothing else is logged', () => {
    expect(outboxDrain.againAtOnce?.({ stopped_by: 'budget' })).toBe(true);
    expect(outboxDrain.againAtOnce?.({ stopped_by: 'drained' })).toBe(false);
    expect(pauseExpiry.lineFor?.({ resumed: 0 })).toBeUndefined();
    expect(pauseExpiry.lineFor?.({ resumed: 1 })).toBe('info');
  });

  it('the flushes write what requests spooled, and do nothing where nothing spools', async () => {
    const flushed: string[] = [];
    const spooled = {
      flushRefusals: async () => void flushed.push('refusals'),
      flushDeliveryLog: async () => void flushed.push('delivery log'),
    };
    const { deps } = depsFor(db);
    expect(await refusedDeliveries.prepare(deps)({ budgetMs: 1000 })).toBeUndefined();
    expect(await deliveryLog.prepare(deps)({ budgetMs: 1000 })).toBeUndefined();
    await refusedDeliveries.prepare({ ...deps, spooled })({ budgetMs: 1000 });
    await deliveryLog.prepare({ ...deps, spooled })({ budgetMs: 1000 });
    expect(flushed).toEqual(['refusals', 'delivery log']);
  });
});
