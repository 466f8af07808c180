// The async worker and the outbox relay defer to a saturated intake: the load the intake route
// reports, how long a batch waits for it (bounded, so a backlog moves under sustained overload), and
// that it goes at once when the intake is not saturated. The wait itself is measured on faked timers (deferToIntake's setTimeout
// and performance.now), so its bounds are exact; the worker's passes run on real timers with bounds a
// busy machine cannot miss.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { parseConfig } from '../src/config.ts';
import { deferToIntake, IntakeLoad } from '../src/inbox/intake-load.ts';
import { createLogger } from '../src/lib/logger.ts';
import { outboxDrain } from '../src/ops/maintenance/background-steps.ts';
import { RELAY_MAX_DEFER_MS } from '../src/ops/maintenance/drainers.ts';
import { configuredRouting } from '../src/outbox/destinations.ts';
import { nodeDestinationPublishers } from '../src/outbox/publishers/node.ts';
import { acmeEvent, TEST_NOW_MS } from './helpers/acme.ts';
import { buildTestApp } from './helpers/app.ts';
import { useTestDatabase } from './helpers/database.ts';
import { deferred, eventRow } from './helpers/facts.ts';
import { insertMessages, outboxRows } from './helpers/outbox.ts';
import { patience, WAIT_MS } from './helpers/patience.ts';
import { cronParts } from './helpers/step-parts.ts';
import { buildTestWorker, deliver } from './helpers/worker.ts';

const { sql, db } = await useTestDatabase();

function saturated(at: number): IntakeLoad {
  const load = new IntakeLoad(at);
  for (let i = 0; i < at; i += 1) load.enter();
  // From here on the mean is `at`: the time before the deliveries entered no longer counts.
  load.meanInFlightSinceLastLook();
  return load;
}

/** An async app counting into `intakeLoad` whose deliveries stop before the insert until `held` resolves. */
async function heldAsyncApp(intakeLoad: IntakeLoad) {
  const held = deferred();
  const reached = deferred();
  const test = await buildTestApp(db, {
    intakeLoad,
    config: { PROCESSING_MODE: 'async' },
    beforeStore: async () => {
      reached.resolve();
      await held.promise;
    },
  });
  return { test, held, reached };
}
/** deferToIntake on faked timers: the milliseconds it reports are exactly those it let pass. */
async function deferredOnFakeTimers(load: IntakeLoad, options: { maxWaitMs: number; pollMs: number }) {
  if (!vi.isFakeTimers()) vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
  const waited = deferToIntake(load, options);
  await vi.runAllTimersAsync();
  return waited;
}

describe('intake load', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('goes at once when the intake is below saturation', async () => {
    const load = new IntakeLoad(3);
    load.enter();
    load.enter();
    expect(await deferredOnFakeTimers(load, { maxWaitMs: 5000, pollMs: 5 })).toBe(0);
  });

  it('waits while saturated, and goes ahead after the bound even if it stays saturated', async () => {
    expect(await deferredOnFakeTimers(saturated(2), { maxWaitMs: 120, pollMs: 5 })).toBe(120);
  });

  it('resumes soon after the load falls, without waiting out the bound', async () => {
    const load = saturated(2);
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
    setTimeout(() => {
      load.leave();
      load.leave();
    }, 60);
    // Within one poll of the load falling, nowhere near the bound.
    const waited = await deferredOnFakeTimers(load, { maxWaitMs: 5000, pollMs: 5 });
    expect(waited).toBeGreaterThanOrEqual(60);
    expect(waited).toBeLessThanOrEqual(65);
  });

  it('counts a request pool as saturated at twice its connections, not at its size', async () => {
    const load = IntakeLoad.forRequestPool(3);
    const inFlight = (count: number) => {
      while (load.inFlight < count) load.enter();
      // From here on the mean is `count`.
      load.meanInFlightSinceLastLook();
    };
    inFlight(3);
    expect(await deferredOnFakeTimers(load, { maxWaitMs: 5000, pollMs: 5 })).toBe(0);
    inFlight(6);
    expect(await deferredOnFakeTimers(load, { maxWaitMs: 100, pollMs: 5 })).toBe(100);
  });

  it('averages the deliveries in flight over the time since the last look', () => {
    let now = 0;
    const load = new IntakeLoad(2, () => now);
    load.enter();
    load.enter();
    load.enter();
    now = 50;
    load.leave();
    load.leave();
    load.leave();
    now = 100;
    // Three for half the window, none for the other half.
    expect(load.meanInFlightSinceLastLook()).toBe(1.5);
    load.enter();
    now = 150;
    load.enter();
    now = 200;
    expect(load.meanInFlightSinceLastLook()).toBe(1.5);
    now = 300;
    // Two in flight the whole window, and no time passing shows the count itself.
    expect(load.saturatedSinceLastLook()).toBe(true);
    expect(load.meanInFlightSinceLastLook()).toBe(2);
    load.leave();
    expect(load.inFlight).toBe(1);
  });

  it('is the number of deliveries the intake route has in flight', async () => {
    const intakeLoad = new IntakeLoad(4);
    const { test, held, reached } = await heldAsyncApp(intakeLoad);
    const answer = deliver(test);
    await reached.promise;
    expect(intakeLoad.inFlight).toBe(1);
    held.resolve();
    expect((await answer).status).toBe(202);
    expect(intakeLoad.inFlight).toBe(0);
    // A refused delivery is let go too.
    expect((await test.request('/webhooks/acme', { method: 'POST', body: '{}' })).status).toBe(415);
    expect(intakeLoad.inFlight).toBe(0);
  });

  it('counts a whole body from its arrival, its verification included: a refused one leaves its time in the mean', async () => {
    // Each reading of the clock one tick later: any time in flight at all shows in the mean.
    let tick = 0;
    const intakeLoad = new IntakeLoad(1, () => ++tick);
    const { test } = await heldAsyncApp(intakeLoad);
    intakeLoad.meanInFlightSinceLastLook();
    const refused = await test.request('/webhooks/acme', {
      method: 'POST',
      body: JSON.stringify(acmeEvent()),
      headers: { 'content-type': 'application/json', 'x-acme-timestamp': '1', 'x-acme-signature': 'f'.repeat(64) },
    });
    expect(refused.status).toBe(401);
    expect(intakeLoad.inFlight).toBe(0);
    expect(intakeLoad.meanInFlightSinceLastLook()).toBeGreaterThan(0);
  });

  it('does not count unsigned bodies still trickling in: the worker goes at once beside sixteen of them', async () => {
    // Saturated at one: a single delivery counted as load would make the worker wait.
    const intakeLoad = new IntakeLoad(1);
    const { test, held, reached } = await heldAsyncApp(intakeLoad);
    // A byte at a time, as the attack sent them (every 20 ms here), as fast as the route reads them,
    // until the test ends the upload. `pulls` counts the bytes the route has asked for.
    const uploads = Array.from({ length: 16 }, () => {
      const ended = deferred();
      let pulls = 0;
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(new TextEncoder().encode('{'));
        },
        async pull(controller) {
          const more = await Promise.race([
            new Promise<boolean>((resolve) => setTimeout(() => resolve(true), 20)),
            ended.promise.then(() => false),
          ]);
          if (more) {
            pulls += 1;
            controller.enqueue(new TextEncoder().encode(' '));
          } else {
            controller.enqueue(new TextEncoder().encode('}'));
            controller.close();
          }
        },
      });
      const answer = test.request('/webhooks/acme', {
        method: 'POST',
        body,
        headers: { 'content-type': 'application/json' },
        duplex: 'half',
      });
      return { answer, end: () => ended.resolve(), pulls: () => pulls };
    });
    try {
      intakeLoad.meanInFlightSinceLastLook();
      // A window in which the route has been reading every one of them for several bytes.
      await expect
        .poll(() => Math.min(...uploads.map((upload) => upload.pulls())), { timeout: WAIT_MS })
        .toBeGreaterThanOrEqual(3);
      // Without them: nothing in flight, over the whole window the worker looks at.
      expect(intakeLoad.inFlight).toBe(0);
      expect(intakeLoad.meanInFlightSinceLastLook()).toBe(0);
      // A bound many seconds long: a worker that counted them would wait it out, one that goes at once
      // reports a few milliseconds however busy the machine.
      const maxDeferMs = patience(10_000);
      const { worker } = buildTestWorker(db, {
        intakeLoad,
        clock: Date.now,
        settings: { maxDeferMs, budgetMs: 2 * maxDeferMs },
      });
      expect((await worker.work()).deferredMs).toBeLessThan(maxDeferMs);

      // A genuine delivery beside them is what counts, and all it counts.
      const genuine = deliver(test);
      await reached.promise;
      expect(intakeLoad.inFlight).toBe(1);
      held.resolve();
      expect((await genuine).status).toBe(202);
    } finally {
      for (const upload of uploads) upload.end();
    }
    // Unsigned once they end: refused, and counted only while they were verified.
    for (const upload of uploads) expect((await upload.answer).status).toBe(401);
    expect(intakeLoad.inFlight).toBe(0);
  });

  it('a worker beside a saturated intake waits, then still applies the batch', async () => {
    const test = await buildTestApp(db, { config: { PROCESSING_MODE: 'async' } });
    const event = acmeEvent();
    expect((await deliver(test, event)).status).toBe(202);
    // A pass long beside the bound: however late a busy machine starts the other lanes, each waits
    // for more than half of it.
    const budgetMs = patience(2000);
    const { worker } = buildTestWorker(db, {
      intakeLoad: saturated(1),
      // The real clock: the pass's budget and the waits are measured in the same time.
      clock: Date.now,
      settings: { maxDeferMs: 150, budgetMs },
    });

    const summary = await worker.work();
    // The route test above left its event queued too: the worker applies whatever is due.
    expect(summary.completed).toBe(summary.claimed);
    // The intake never stopped being saturated: the first lane waited out the bound, then went
    // ahead; the other three waited for the end of the pass.
    expect(summary.deferredMs).toBeGreaterThanOrEqual(140 + (3 * budgetMs) / 2);
    expect(await eventRow(sql, event.id)).toMatchObject({ status: 'completed' });
  });

  it('under sustained saturation moves one batch per bound in all, not one per lane', async () => {
    const test = await buildTestApp(db, { config: { PROCESSING_MODE: 'async' } });
    for (let i = 0; i < 40; i += 1) expect((await deliver(test)).status).toBe(202);
    const { worker } = buildTestWorker(db, {
      intakeLoad: saturated(1),
      clock: Date.now,
      settings: { lanes: 3, batchSize: 5, maxDeferMs: 500, budgetMs: 2250 },
    });

    const summary = await worker.work();
    // About four batches of five at 0.5, 1, 1.5 and 2 s, all by the first lane; three lanes going a
    // batch per bound each would have moved all 40. At least one batch: a loaded machine may fit fewer
    // than four into the budget, but not none into the 1.75 s after the first bound.
    expect(summary.claimed).toBeGreaterThanOrEqual(5);
    expect(summary.claimed).toBeLessThanOrEqual(25);
    // A batch claimed as the budget ran out is given back unstarted.
    expect(summary.completed + summary.released).toBe(summary.claimed);
    expect(summary.stoppedBy).toBe('budget');
  });

  /** An intake saturated at one delivery in flight, on a clock of its own that stands still. */
  function heldSaturated(): IntakeLoad {
    const load = new IntakeLoad(1, () => 0);
    load.enter();
    return load;
  }

  it('lanes waiting for the intake start nothing once the pass has spent its budget', async () => {
    const test = await buildTestApp(db, { config: { PROCESSING_MODE: 'async' } });
    const event = acmeEvent();
    expect((await deliver(test, event)).status).toBe(202);
    const load = heldSaturated();
    const worker = buildTestWorker(db, {
      intakeLoad: load,
      settings: { lanes: 2, maxDeferMs: 60_000, budgetMs: 1000 },
    });

    // Both lanes are waiting for the intake as soon as the pass has begun.
    const pass = worker.worker.work();
    // The budget is spent, to the millisecond, when the intake frees up.
    worker.setNow(TEST_NOW_MS + 1000);
    load.leave();
    expect(await pass).toMatchObject({ claimed: 0, released: 0, batches: 0, stoppedBy: 'budget' });
    expect(await eventRow(sql, event.id)).toMatchObject({ status: 'received', attempt_count: 0 });
  });

  it("the first lane's wait for the intake ends with the pass, however long its bound", async () => {
    const test = await buildTestApp(db, { config: { PROCESSING_MODE: 'async' } });
    const event = acmeEvent();
    expect((await deliver(test, event)).status).toBe(202);
    const worker = buildTestWorker(db, {
      intakeLoad: saturated(1),
      // The real clock: the pass's budget and the wait are measured in the same time.
      clock: Date.now,
      settings: { lanes: 1, maxDeferMs: 60_000, budgetMs: 100 },
    });

    const summary = await worker.worker.work();
    expect(summary).toMatchObject({ claimed: 0, batches: 0, stoppedBy: 'budget' });
    expect(summary.deferredMs).toBeLessThan(60_000);
    expect(await eventRow(sql, event.id)).toMatchObject({ status: 'received', attempt_count: 0 });
  });

  it('lanes waiting for the intake stop at once when the signal aborts, starting nothing', async () => {
    const test = await buildTestApp(db, { config: { PROCESSING_MODE: 'async' } });
    const event = acmeEvent();
    expect((await deliver(test, event)).status).toBe(202);
    const worker = buildTestWorker(db, {
      intakeLoad: heldSaturated(),
      settings: { lanes: 2, maxDeferMs: 60_000, budgetMs: 60_000 },
    });
    const controller = new AbortController();

    const pass = worker.worker.work({ signal: controller.signal });
    controller.abort();
    expect(await pass).toMatchObject({ claimed: 0, released: 0, batches: 0, stoppedBy: 'aborted' });
    expect(await eventRow(sql, event.id)).toMatchObject({ status: 'received', attempt_count: 0 });
  });
});

describe('the outbox relay beside the intake', () => {
  /** The process's outbox_drain step, publishing to the log, deferring to `intakeLoad`. */
  function processRelay(intakeLoad: IntakeLoad) {
    const config = parseConfig({});
    const logger = createLogger({ level: 'silent', now: () => new Date(), write: () => {} });
    const publishers = nodeDestinationPublishers(configuredRouting(config), {
      clock: Date.now,
      logger,
      timeoutMs: 1000,
    });
    return outboxDrain.prepare(cronParts(db, { runtime: 'process', config, logger, intakeLoad, publishers }));
  }

  it('holds a batch back while the intake stays saturated, up to its bound, then publishes it', async () => {
    const ids = await insertMessages(sql, 3);
    const startedMs = Date.now();
    const fields = await processRelay(saturated(1))({ budgetMs: patience(20_000) });

    // The worker's tests above left messages of their own: the relay publishes whatever is due.
    expect(fields).toMatchObject({ stopped_by: 'drained' });
    expect(fields?.published).toBeGreaterThanOrEqual(3);
    // Waited out the whole bound (the intake never stopped being saturated), and no more.
    expect(fields?.deferred_ms).toBeGreaterThanOrEqual(RELAY_MAX_DEFER_MS - 5);
    expect(fields?.deferred_ms).toBeLessThanOrEqual(Date.now() - startedMs);
    expect((await outboxRows(sql, ids)).map((row) => row.status)).toEqual(['published', 'published', 'published']);
  });

  it('claims at once when the intake is not saturated', async () => {
    const ids = await insertMessages(sql, 2);
    const fields = await processRelay(new IntakeLoad(1))({ budgetMs: patience(20_000) });

    expect(fields).toMatchObject({ published: 2, deferred_ms: 0, stopped_by: 'drained' });
    expect((await outboxRows(sql, ids)).map((row) => row.status)).toEqual(['published', 'published']);
  });

  it('stops waiting when the signal aborts, claiming nothing', async () => {
    const ids = await insertMessages(sql, 1);
    const controller = new AbortController();
    const pass = processRelay(saturated(1))({ budgetMs: patience(20_000), signal: controller.signal });
    controller.abort();

    expect(await pass).toMatchObject({ claimed: 0, stopped_by: 'aborted' });
    expect((await outboxRows(sql, ids)).map((row) => row.status)).toEqual(['pending']);
  });
});
