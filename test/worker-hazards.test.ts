// The worker's batch path where it can go wrong (claim, apply and complete in one transaction): a
// handler failing in the middle of a batch, a lease that runs out while a batch is being applied, and
// two workers or two lanes reaching for one row at the same moment. Database facts are the verdict:
// each row's status, attempt count and lease, the subscription rows the handler writes and the outbox
// messages it enqueues (one per applied event). Barriers, never sleeps.
import { sql as drizzleSql } from 'drizzle-orm';
import { beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { lockInQueueOrder, takeLease } from '../src/db/lease.ts';
import { defaultHandlers, defineHandler, type HandlerMap } from '../src/domain/handlers.ts';
import { dueBatchStatement, lockDueBatch, sweepExpiredBatch } from '../src/inbox/event-rows.ts';
import { type WorkSummary, workUntilCaughtUp } from '../src/inbox/worker.ts';
import { acmeEvent, TEST_NOW_MS, uniqueId } from './helpers/acme.ts';
import { buildTestApp } from './helpers/app.ts';
import { useTestDatabase } from './helpers/database.ts';
import { deferred, holdInboxTable, subscriptionRow } from './helpers/facts.ts';
import { buildTestWorker, deliver } from './helpers/worker.ts';

const { sql, db } = await useTestDatabase();
const LEASE_MS = 30_000;

// Each test's workers see only its own rows: a row an earlier test left `failed` is due again later
// by the clock these tests move.
beforeEach(async () => {
  await sql`delete from webhook_events`;
});

interface Queued {
  eventId: string;
  subscription: string;
}

/** Queues one event per fresh subscription through the async intake, oldest first. */
async function queue(count: number): Promise<Queued[]> {
  const test = await buildTestApp(db, { config: { PROCESSING_MODE: 'async' } });
  const queued: Queued[] = [];
  for (let index = 0; index < count; index += 1) {
    const subscription = uniqueId('sub');
    const event = acmeEvent({ data: { id: subscription, status: 'active' } });
    expect((await deliver(test, event)).status).toBe(202);
    queued.push({ eventId: event.id, subscription });
  }
  return queued;
}

/**
 * The real acme handler with a hook run before it, given the event's subscription id: the hook may
 * throw (that application fails) or wait (the application, and its transaction, stays open).
 */
function withHook(hook: (subscription: string) => Promise<void> | void): HandlerMap {
  const real = defaultHandlers.acme?.['subscription.updated'];
  if (real === undefined) throw new Error('no default handler');
  const subscriptionOf = z.object({ data: z.object({ id: z.string() }) });
  return {
    acme: {
      'subscription.updated': defineHandler({
        schema: real.schema,
        async apply(context, payload) {
          await hook(subscriptionOf.parse(payload).data.id);
          await real.apply(context, payload);
        },
      }),
    },
  };
}

interface RowFacts {
  event_id: string;
  status: string;
  attempt_count: number;
  locked_by: string | null;
  last_error: string | null;
}

async function rowOf(eventId: string): Promise<RowFacts | undefined> {
  const [row] = await sql<RowFacts[]>`select event_id, status::text as status, attempt_count, locked_by, last_error
    from webhook_events where provider = 'acme' and event_id = ${eventId}`;
  return row;
}

/** Outbox messages the event's application enqueued: exactly one when it was applied once. */
async function messagesOf(eventId: string): Promise<number> {
  const [row] = await sql<{ n: number }[]>`select count(*)::int as n from outbox_messages
    where deduplication_key = ${`acme:${eventId}:subscription.changed`}`;
  return row?.n ?? 0;
}

async function expectAppliedOnce(item: Queued): Promise<void> {
  expect(await rowOf(item.eventId)).toMatchObject({ status: 'completed', attempt_count: 0, locked_by: null });
  expect(await subscriptionRow(sql, item.subscription)).toMatchObject({ status: 'active' });
  expect(await messagesOf(item.eventId)).toBe(1);
}

/** Resolves once `count` sessions of this database wait for a lock on the webhook_events table. */
async function waitersOnInbox(count: number): Promise<void> {
  for (;;) {
    const [row] = await sql<{ n: number }[]>`select count(*)::int as n from pg_locks
      where not granted and relation = 'webhook_events'::regclass
        and database = (select oid from pg_database where datname = current_database())`;
    if ((row?.n ?? 0) >= count) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/**
 * Handlers whose first application stops inside its transaction: `inside` resolves once it has,
 * and it goes on when the test resolves `goOn`; every later application runs straight through.
 */
function holdingTheFirstApplication() {
  const inside = deferred();
  const goOn = deferred();
  let held = false;
  const handlers = withHook(async () => {
    if (held) return;
    held = true;
    inside.resolve();
    await goOn.promise;
  });
  return { inside, goOn, handlers };
}

describe('the batch claim', () => {
  it("locks the due rows oldest first, and leaves the planner's settings as they were for the handlers", async () => {
    const items = await queue(3);
    const settings = () =>
      sql`select current_setting('enable_sort') as sort, current_setting('enable_bitmapscan') as bitmap`;
    const [before] = await settings();
    const seen = await db.transaction(async (tx) => {
      const rows = await lockDueBatch(tx, takeLease('worker-a', TEST_NOW_MS, LEASE_MS), new Date(TEST_NOW_MS), 10);
      const [after] = await tx.execute<{ sort: string; bitmap: string }>(
        drizzleSql`select current_setting('enable_sort') as sort, current_setting('enable_bitmapscan') as bitmap`,
      );
      return { ids: rows.map((row) => row.event_id), after };
    });
    expect(seen.ids).toEqual(items.map((item) => item.eventId));
    expect(seen.after).toEqual(before);
    expect(before).toEqual({ sort: 'on', bitmap: 'on' });
  });

  it('is planned as a walk of the queue index in order, even when the statistics have not seen the backlog', async () => {
    // As in claim-plan.test.ts: a burst the last ANALYZE did not see, which without the settings is
    // read whole and sorted for every batch.
    await sql`alter table webhook_events set (autovacuum_enabled = false)`;
    await sql`insert into webhook_events (provider, event_id, event_type, status, payload, available_at)
      select 'acme', 'evt_burst_' || g, 'subscription.updated', 'received', '{}'::jsonb, now() - interval '1 minute'
      from generate_series(1, 5000) g`;
    interface PlanNode {
      'Node Type': string;
      'Index Name'?: string;
      Plans?: PlanNode[];
    }
    const nodesOf = (plan: PlanNode): PlanNode[] => [plan, ...(plan.Plans ?? []).flatMap(nodesOf)];
    const statement = dueBatchStatement(takeLease('plan-check', Date.now(), LEASE_MS), new Date(), 100);
    const nodes = await db.transaction(async (tx) => {
      const [row] = await lockInQueueOrder<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(
        tx,
        drizzleSql`explain (format json) ${statement}`,
      );
      const plan = row?.['QUERY PLAN'][0].Plan;
      if (plan === undefined) throw new Error('no plan');
      return nodesOf(plan);
    });
    expect(nodes.map((node) => node['Index Name'])).toContain('webhook_events_claimable_idx');
    expect(nodes.map((node) => node['Node Type'])).not.toContain('Bitmap Heap Scan');
    expect(nodes.map((node) => node['Node Type'])).not.toContain('Sort');
  });
});

describe('a handler failing in the middle of a batch', () => {
  it('applies the others once, and counts the failing one failed once, under a lease until it was recorded', async () => {
    const items = await queue(5);
    const failing = items[2] as Queued;
    const calls = new Map<string, number>();
    const leasedDuringRetry: Array<RowFacts | undefined> = [];
    const test = buildTestWorker(db, {
      handlers: withHook(async (subscription) => {
        const call = (calls.get(subscription) ?? 0) + 1;
        calls.set(subscription, call);
        // The second call of the event after the failing one is the one-at-a-time path: by then the
        // batch's rows must be committed under this worker's lease (what a crash leaves to the sweeper).
        if (subscription === items[3]?.subscription && call === 2) leasedDuringRetry.push(await rowOf(failing.eventId));
        if (subscription === failing.subscription) throw new Error('ledger unavailable');
      }),
      settings: { lanes: 1, batchSize: 5, leaseMs: LEASE_MS },
    });

    expect(await test.worker.work()).toMatchObject({ claimed: 5, completed: 4, failed: 1, released: 0, skipped: 0 });

    for (const item of items) if (item !== failing) await expectAppliedOnce(item);
    // Counted once: one attempt, its error kept, its lease ended, nothing of its handler committed.
    expect(await rowOf(failing.eventId)).toMatchObject({
      status: 'failed',
      attempt_count: 1,
      locked_by: null,
      last_error: 'Error: ledger unavailable',
    });
    expect(await subscriptionRow(sql, failing.subscription)).toBeUndefined();
    expect(await messagesOf(failing.eventId)).toBe(0);
    // Tried in the batch and once alone; every other handler ran in the batch and again alone, but
    // committed once (one message each, above).
    expect(calls.get(failing.subscription)).toBe(2);
    // The event after the failing one was applied alone after it: the failing row was then already recorded.
    expect(leasedDuringRetry).toEqual([expect.objectContaining({ status: 'failed', attempt_count: 1 })]);
    expect(test.metrics.render([])).toMatch(/outcome="failed"} 1/);
    const rolledBack = test.logs.filter(
      (line) => line.msg === 'inbox batch rolled back, applying its events one at a time',
    );
    expect(rolledBack).toMatchObject([{ batch_size: 5, error: 'Error' }]);
  });

  it('holds the batch under its lease, committed, while the events are applied one at a time', async () => {
    const items = await queue(3);
    const [first, second, third] = items as [Queued, Queued, Queued];
    const inAlone = deferred();
    const goOn = deferred();
    let firstCalls = 0;
    const test = buildTestWorker(db, {
      handlers: withHook(async (subscription) => {
        if (subscription === first.subscription) {
          firstCalls += 1;
          // Its first call is in the batch, which then fails on the third; the second call is alone.
          if (firstCalls === 2) {
            inAlone.resolve();
            await goOn.promise;
          }
        }
        if (subscription === third.subscription) throw new Error('ledger unavailable');
      }),
      settings: { lanes: 1, batchSize: 3, leaseMs: LEASE_MS },
    });

    const pass = test.worker.work();
    await inAlone.promise;
    // The batch rolled back to its savepoint and committed its lease: every row `processing` under
    // this worker, none counted yet, so a crash now would leave them to the lease's expiry.
    for (const item of items) {
      expect(await rowOf(item.eventId)).toMatchObject({
        status: 'processing',
        attempt_count: 0,
        locked_by: test.worker.id,
      });
    }
    goOn.resolve();
    expect(await pass).toMatchObject({ claimed: 3, completed: 2, failed: 1 });
    await expectAppliedOnce(first);
    await expectAppliedOnce(second);
    expect(await rowOf(third.eventId)).toMatchObject({ status: 'failed', attempt_count: 1, locked_by: null });
  });
});

describe('a lease that expires mid-batch', () => {
  it('leaves the batch to its worker: nobody else claims or sweeps its rows, and each is applied once', async () => {
    const items = await queue(3);
    const { inside, goOn, handlers } = holdingTheFirstApplication();
    const first = buildTestWorker(db, {
      handlers,
      settings: { lanes: 1, batchSize: 3, leaseMs: LEASE_MS },
    });
    const second = buildTestWorker(db, { settings: { lanes: 2, batchSize: 3, leaseMs: LEASE_MS } });

    const firstPass = first.worker.work();
    await inside.promise;
    // Long past the first worker's lease, by everyone else's clock.
    const later = TEST_NOW_MS + 10 * LEASE_MS;
    second.setNow(later);
    expect(await second.worker.work()).toMatchObject({ claimed: 0, completed: 0 });
    expect(await sweepExpiredBatch(db, new Date(later), 100)).toBe(0);
    // The batch writes its rows only when it commits: until then they are as the intake left them.
    for (const item of items) {
      expect(await rowOf(item.eventId)).toMatchObject({ status: 'received', attempt_count: 0, locked_by: null });
    }
    goOn.resolve();
    expect(await firstPass).toMatchObject({ claimed: 3, completed: 3, skipped: 0 });

    expect(await second.worker.work()).toMatchObject({ claimed: 0 });
    for (const item of items) await expectAppliedOnce(item);
  });

  it('on the one-at-a-time path, another worker takes over the rows not yet started and the first skips them', async () => {
    const items = await queue(3);
    const [first, second, third] = items as [Queued, Queued, Queued];
    const inAlone = deferred();
    const goOn = deferred();
    let firstCalls = 0;
    const slow = buildTestWorker(db, {
      handlers: withHook(async (subscription) => {
        if (subscription === first.subscription && ++firstCalls === 2) {
          inAlone.resolve();
          await goOn.promise;
        }
        if (subscription === third.subscription && firstCalls === 1) throw new Error('ledger unavailable');
      }),
      settings: { lanes: 1, batchSize: 3, leaseMs: LEASE_MS },
    });
    const other = buildTestWorker(db, { settings: { lanes: 1, batchSize: 3, leaseMs: LEASE_MS } });

    const slowPass = slow.worker.work();
    // The batch failed on the third event; the first is now being applied alone, its row locked.
    await inAlone.promise;
    other.setNow(TEST_NOW_MS + LEASE_MS + 1);
    // The lease has expired for the two rows waiting their turn: the other worker takes them.
    expect(await other.worker.work()).toMatchObject({ claimed: 2, completed: 2 });
    goOn.resolve();
    expect(await slowPass).toMatchObject({ claimed: 3, completed: 1, skipped: 2, failed: 0 });

    for (const item of items) await expectAppliedOnce(item);
    const skipped = slow.logs.filter((line) => line.msg === 'inbox event skipped: no longer held by this worker');
    expect(skipped.map((line) => line.event_id).sort()).toEqual([second.eventId, third.eventId].sort());
  });
});

describe('two claimers reaching for one row', () => {
  /** Starts `start()` while the table is held, waits until `claims` claims wait on it, then lets them all go. */
  async function atOnce<T>(claims: number, start: () => T): Promise<T> {
    const table = await holdInboxTable(sql);
    try {
      const started = start();
      await waitersOnInbox(claims);
      return started;
    } finally {
      await table.release();
    }
  }

  /** Counts each subscription's applications that got as far as the handler. */
  function counting() {
    const calls = new Map<string, number>();
    const handlers = withHook((subscription) => {
      calls.set(subscription, (calls.get(subscription) ?? 0) + 1);
    });
    return { calls, handlers };
  }

  it('two workers claiming one row at once: one applies it, once; the other finds nothing', async () => {
    const [item] = (await queue(1)) as [Queued];
    const { calls, handlers } = counting();
    const workers = [1, 2].map(() => buildTestWorker(db, { handlers, settings: { lanes: 1, batchSize: 10 } }));
    const summaries = await Promise.all(await atOnce(2, () => workers.map((test) => test.worker.work())));
    expect(summaries.map((summary) => summary.claimed).sort()).toEqual([0, 1]);
    expect(summaries.reduce((sum, summary) => sum + summary.completed, 0)).toBe(1);
    expect(calls.get(item.subscription)).toBe(1);
    await expectAppliedOnce(item);
  });

  it('two workers claiming batches at once split the rows: each row is applied once', async () => {
    const items = await queue(4);
    const { calls, handlers } = counting();
    const workers = [1, 2].map(() => buildTestWorker(db, { handlers, settings: { lanes: 1, batchSize: 10 } }));
    const summaries = await Promise.all(await atOnce(2, () => workers.map((test) => test.worker.work())));
    expect(summaries.reduce((sum, summary) => sum + summary.claimed, 0)).toBe(4);
    expect(summaries.reduce((sum, summary) => sum + summary.completed, 0)).toBe(4);
    for (const item of items) {
      expect(calls.get(item.subscription)).toBe(1);
      await expectAppliedOnce(item);
    }
  });

  it('two lanes of one worker claiming one row at once: it is applied once', async () => {
    const [item] = (await queue(1)) as [Queued];
    const { calls, handlers } = counting();
    const test = buildTestWorker(db, { handlers, settings: { lanes: 2, batchSize: 10 } });
    const summary = await (await atOnce(2, () => [test.worker.work()]))[0];
    expect(summary).toMatchObject({ claimed: 1, completed: 1, skipped: 0, released: 0 });
    expect(calls.get(item.subscription)).toBe(1);
    await expectAppliedOnce(item);
  });

  it('a worker claiming while another holds the row in its batch skips it, and never applies it', async () => {
    const items = await queue(2);
    const { inside, goOn, handlers } = holdingTheFirstApplication();
    const first = buildTestWorker(db, {
      handlers,
      settings: { lanes: 1, batchSize: 2 },
    });
    let secondCalls = 0;
    const second = buildTestWorker(db, {
      handlers: withHook(() => {
        secondCalls += 1;
      }),
      settings: { lanes: 2, batchSize: 2 },
    });
    const firstPass = first.worker.work();
    await inside.promise;
    expect(await second.worker.work()).toMatchObject({ claimed: 0 });
    goOn.resolve();
    expect(await firstPass).toMatchObject({ claimed: 2, completed: 2 });
    expect(secondCalls).toBe(0);
    for (const item of items) await expectAppliedOnce(item);
  });
});

describe('passes after a burst', () => {
  it('goes on at once after a pass that waited for a saturated intake, however little it claimed', async () => {
    // What passes claim and wait during and after a burst: the first waited for the intake and took
    // only what was due when it began; the burst's rows are then taken at once, not an interval later.
    const script: Array<Pick<WorkSummary, 'claimed' | 'deferredMs'>> = [
      { claimed: 3, deferredMs: 2500 },
      { claimed: 100, deferredMs: 0 },
      { claimed: 40, deferredMs: 0 },
      { claimed: 100, deferredMs: 0 },
    ];
    const passes: number[] = [];
    const worker = {
      async work() {
        const pass = script[passes.length] ?? { claimed: 0, deferredMs: 0 };
        passes.push(pass.claimed);
        return pass as WorkSummary;
      },
    };
    await workUntilCaughtUp(worker, 100);
    expect(passes).toEqual([3, 100, 40]);
  });

  it('drains a burst left by a pass that waited for the intake without waiting its interval', async () => {
    const items = await queue(5);
    const test = buildTestWorker(db, { settings: { lanes: 1, batchSize: 10 } });
    let passes = 0;
    const scripted = {
      async work() {
        passes += 1;
        // The first pass: the intake was saturated throughout, and nothing was due when it began.
        if (passes === 1) return { claimed: 0, deferredMs: 1000 } as WorkSummary;
        return test.worker.work();
      },
    };
    await workUntilCaughtUp(scripted, 10);
    expect(passes).toBe(2);
    for (const item of items) await expectAppliedOnce(item);
  });
});
