// Concurrent workers never apply one event twice: several workers claim from one backlog at once
// (SKIP LOCKED splits it), and a worker whose lease runs out mid-apply keeps the row locked, so no
// other worker can take it over and apply it a second time. The counter handler is deliberately not
// idempotent, so a double application would show up as a fact in the database.
import { expect, it } from 'vitest';
import { takeLease } from '../src/db/lease.ts';
import { defineHandler } from '../src/domain/handlers.ts';
import { claimDue, releaseClaim } from '../src/inbox/event-rows.ts';
import { acmeEvent, TEST_NOW_MS } from './helpers/acme.ts';
import { buildTestApp } from './helpers/app.ts';
import { newCounter } from './helpers/counter.ts';
import { useTestDatabase } from './helpers/database.ts';
import { barrier, deferred, eventRows } from './helpers/facts.ts';
import { buildTestWorker, deliver } from './helpers/worker.ts';

const { sql, db } = await useTestDatabase();

it('four workers working one backlog at once apply every event exactly once', async () => {
  const counter = await newCounter(sql);
  const handlers = { acme: { 'subscription.updated': counter.handler } };
  const test = await buildTestApp(db, { config: { PROCESSING_MODE: 'async' } });
  const events = Array.from({ length: 60 }, () => acmeEvent());
  for (const event of events) expect((await deliver(test, event)).status).toBe(202);

  const workers = Array.from({ length: 4 }, () => buildTestWorker(db, { handlers, settings: { batchSize: 7 } }));
  const arrive = barrier(workers.length);
  const summaries = await Promise.all(
    workers.map(async ({ worker }) => {
      await arrive();
      return worker.work();
    }),
  );

  expect(await counter.value()).toBe(events.length);
  expect(summaries.reduce((sum, summary) => sum + summary.completed, 0)).toBe(events.length);
  const rows = await eventRows(sql);
  expect(rows.every((row) => row.status === 'completed' && row.attempt_count === 0)).toBe(true);
});

it('a worker whose lease expired mid-apply keeps the event: nobody else applies it', async () => {
  const counter = await newCounter(sql);
  const applying = deferred();
  const inside = deferred();
  const slow = defineHandler({
    schema: counter.handler.schema,
    async apply(context, payload) {
      inside.resolve();
      await applying.promise;
      await counter.handler.apply(context, payload);
    },
  });
  const test = await buildTestApp(db, { config: { PROCESSING_MODE: 'async' } });
  const event = acmeEvent();
  await deliver(test, event);

  const first = buildTestWorker(db, { handlers: { acme: { 'subscription.updated': slow } } });
  const second = buildTestWorker(db, { handlers: { acme: { 'subscription.updated': counter.handler } } });
  const firstPass = first.worker.work();
  await inside.promise;
  // Long after the first worker's lease: its row is still locked inside its apply transaction.
  second.setNow(TEST_NOW_MS + 10 * 60_000);
  expect((await second.worker.work()).claimed).toBe(0);
  applying.resolve();
  expect(await firstPass).toMatchObject({ completed: 1 });
  expect((await second.worker.work()).claimed).toBe(0);
  expect(await counter.value()).toBe(1);
});

it("a worker whose lease expired and was taken over cannot give back the new holder's claim", async () => {
  const test = await buildTestApp(db, { config: { PROCESSING_MODE: 'async' } });
  const event = acmeEvent();
  await deliver(test, event);
  const key = { provider: 'acme', eventId: event.id };
  const leaseMs = 30_000;
  const dueBy = new Date(TEST_NOW_MS);
  const holderOf = async () =>
    (await sql`select status::text as status, locked_by from webhook_events where event_id = ${event.id}`)[0];

  expect(await claimDue(db, takeLease('worker-a', TEST_NOW_MS, leaseMs), dueBy, 10)).toHaveLength(1);
  // Worker A stalled past its lease; worker B claims the row under a lease of its own.
  const later = TEST_NOW_MS + leaseMs + 1;
  expect(await claimDue(db, takeLease('worker-b', later, leaseMs), dueBy, 10)).toHaveLength(1);

  // A wakes up and gives back what it believes is its claim: B's stays.
  await releaseClaim(db, 'worker-a', key);
  expect(await holderOf()).toEqual({ status: 'processing', locked_by: 'worker-b' });
  await releaseClaim(db, 'worker-b', key);
  expect(await holderOf()).toEqual({ status: 'received', locked_by: null });
});
