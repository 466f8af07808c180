// PROCESSING_MODE=async end to end against real PostgreSQL: the 202 only after the row is stored,
// duplicates, the backlog gate, the worker's retries and dead letters, re-queueing on redelivery,
// the sweeper and retention. Time moves through the injected clocks, never by sleeping.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defaultHandlers, defineHandler, type HandlerMap } from '../src/domain/handlers.ts';
import { purgeByRetention } from '../src/inbox/retention.ts';
import { sweepExpiredLeases } from '../src/inbox/sweep.ts';
import { acmeEvent, TEST_NOW_MS, uniqueId } from './helpers/acme.ts';
import { buildTestApp } from './helpers/app.ts';
import { useTestDatabase } from './helpers/database.ts';
import { countEvents, eventRow, subscriptionRow } from './helpers/facts.ts';
import { failingAfterDefault } from './helpers/handlers.ts';
import { buildTestWorker, deliver } from './helpers/worker.ts';

const { sql, db } = await useTestDatabase();
/** The backlog test counts every `received` row, so it gets a database of its own. */
const backlogDatabase = await useTestDatabase();
const DAY_MS = 86_400_000;
const asyncApp = (overrides: Parameters<typeof buildTestApp>[1] = {}) =>
  buildTestApp(db, { ...overrides, config: { PROCESSING_MODE: 'async', ...overrides.config } });

async function leaseOf(eventId: string) {
  const [row] = await sql<{ available_at: Date; locked_by: string | null; locked_until: Date | null }[]>`
    select available_at, locked_by, locked_until from webhook_events where event_id = ${eventId}`;
  return row;
}

/** Throws (a transient-looking bug, not a DomainRejection) the first `failures` times, then applies. */
function flaky(failures: number): HandlerMap {
  const real = defaultHandlers.acme?.['subscription.updated'];
  if (real === undefined) throw new Error('no default handler');
  let calls = 0;
  return {
    acme: {
      'subscription.updated': defineHandler({
        schema: z.unknown(),
        async apply(context, payload) {
          calls += 1;
          await real.apply(context, payload);
          if (calls <= failures) throw new Error('ledger unavailable');
        },
      }),
    },
  };
}

describe('async intake', () => {
  it('answers 202 only once the event is stored as received, then the worker applies it', async () => {
    const test = await asyncApp();
    const subscription = uniqueId('sub');
    const event = acmeEvent({ version: 4, data: { id: subscription, status: 'past_due' } });

    const response = await deliver(test, event);
    expect(response.status).toBe(202);
    expect(await response.text()).toBe('{"received":true,"queued":true}');
    // Read from another connection right after the answer: committed, untouched by any handler.
    expect(await eventRow(sql, event.id)).toMatchObject({ status: 'received', attempt_count: 0, completed_at: null });
    expect(await subscriptionRow(sql, subscription)).toBeUndefined();

    const duplicate = await deliver(test, event);
    expect(duplicate.status).toBe(200);
    expect(await duplicate.text()).toBe('{"received":true,"duplicate":true}');
    expect(await countEvents(sql, event.id)).toBe(1);

    const { worker, logs } = buildTestWorker(db);
    expect(await worker.work()).toMatchObject({ claimed: 1, completed: 1, failed: 0, stoppedBy: 'drained' });
    expect(await eventRow(sql, event.id)).toMatchObject({ status: 'completed', attempt_count: 0, last_error: null });
    expect(await leaseOf(event.id)).toMatchObject({ locked_by: null, locked_until: null });
    expect(await subscriptionRow(sql, subscription)).toMatchObject({ status: 'past_due', provider_version: '4' });
    const messages =
      await sql`select 1 from outbox_messages where deduplication_key = ${`acme:${event.id}:subscription.changed`}`;
    expect(messages).toHaveLength(1);
    expect(logs).toContainEqual(
      expect.objectContaining({
        msg: 'inbox event applied',
        event_id: event.id,
        event_type: 'subscription.updated',
        provider: 'acme',
        outcome: 'completed',
        attempt: 1,
        duration_ms: expect.any(Number),
      }),
    );

    expect((await deliver(test, event)).status).toBe(200);
    expect((await worker.work()).claimed).toBe(0);
  });

  it('stores parked and ignored events in their final state, as synchronous mode does', async () => {
    const test = await asyncApp();
    const parked = acmeEvent({ api_version: '2031-01-01' });
    const ignored = acmeEvent({ type: 'invoice.paid', data: {} });
    expect((await deliver(test, parked)).status).toBe(202);
    expect((await deliver(test, ignored)).status).toBe(200);
    expect((await eventRow(sql, parked.id))?.status).toBe('parked');
    expect((await eventRow(sql, ignored.id))?.status).toBe('ignored');
  });

  it('refuses new events with 503 and Retry-After while the backlog is full, storing nothing', async () => {
    const isolated = backlogDatabase;
    const test = await buildTestApp(isolated.db, { config: { PROCESSING_MODE: 'async', INBOX_MAX_BACKLOG: 2 } });
    for (let i = 0; i < 3; i++) expect((await deliver(test)).status).toBe(202);
    // The third one fit (2 waiting, not more than 2); the count is cached for a second.
    test.setNow(TEST_NOW_MS + 1000);
    const refused = acmeEvent();
    const response = await deliver(test, refused);
    expect(response.status).toBe(503);
    expect(response.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(await response.text()).toBe('{"error":"unavailable"}');
    expect(await countEvents(isolated.sql, refused.id)).toBe(0);

    const { worker } = buildTestWorker(isolated.db, { now: TEST_NOW_MS + 1000 });
    expect((await worker.work()).completed).toBe(3);
    test.setNow(TEST_NOW_MS + 2000);
    expect((await deliver(test, refused)).status).toBe(202);
  });
});

describe('async worker', () => {
  it('retries a failed application after its backoff, then completes it', async () => {
    const test = await asyncApp();
    const event = acmeEvent();
    await deliver(test, event);
    const worker = buildTestWorker(db, { handlers: flaky(1), random: () => 0.5 });

    expect(await worker.worker.work()).toMatchObject({ claimed: 1, failed: 1 });
    const failed = await eventRow(sql, event.id);
    expect(failed).toMatchObject({ status: 'failed', attempt_count: 1, last_error: 'Error: ledger unavailable' });
    // Full jitter at 0.5 of the first ceiling (base 1000 ms).
    expect((await leaseOf(event.id))?.available_at.getTime()).toBe(TEST_NOW_MS + 500);
    expect((await leaseOf(event.id))?.locked_by).toBeNull();

    expect((await worker.worker.work()).claimed).toBe(0);
    worker.setNow(TEST_NOW_MS + 500);
    expect(await worker.worker.work()).toMatchObject({ claimed: 1, completed: 1 });
    expect(await eventRow(sql, event.id)).toMatchObject({ status: 'completed', attempt_count: 1, last_error: null });
    expect(worker.metrics.render([])).toMatch(/outcome="failed"} 1/);
    expect(worker.metrics.render([])).toMatch(/outcome="retried"} 1/);
  });

  it('retries after the pass even when the jitter draws no delay: one attempt per pass', async () => {
    const test = await asyncApp();
    const event = acmeEvent();
    await deliver(test, event);
    // Batches of one, so the lane would claim again at once in the same pass if the row were due.
    const worker = buildTestWorker(db, { handlers: flaky(99), random: () => 0, settings: { lanes: 1, batchSize: 1 } });

    expect(await worker.worker.work()).toMatchObject({ claimed: 1, failed: 1 });
    expect(await eventRow(sql, event.id)).toMatchObject({ status: 'failed', attempt_count: 1 });
    // Just past the pass's cut-off, so the next pass takes it.
    expect((await leaseOf(event.id))?.available_at.getTime()).toBe(TEST_NOW_MS + 1);
    worker.setNow(TEST_NOW_MS + 1);
    expect(await worker.worker.work()).toMatchObject({ claimed: 1, failed: 1 });
    expect(await eventRow(sql, event.id)).toMatchObject({ status: 'failed', attempt_count: 2 });
    await sql`update webhook_events set status = 'completed' where event_id = ${event.id}`;
  });

  it('parks again, without applying it, a queued event whose schema version this service does not know', async () => {
    const test = await asyncApp();
    const subscription = uniqueId('sub');
    const event = acmeEvent({ api_version: '2031-01-01', data: { id: subscription, status: 'active' } });
    expect((await deliver(test, event)).status).toBe(202);
    // Queued again as it is (as an operator's replay to the queue would), still of an unknown version.
    await sql`update webhook_events set status = 'received', available_at = ${new Date(TEST_NOW_MS)},
      completed_at = null where event_id = ${event.id}`;

    const worker = buildTestWorker(db);
    expect(await worker.worker.work()).toMatchObject({ claimed: 1, parked: 1, completed: 0 });
    expect(await eventRow(sql, event.id)).toMatchObject({ status: 'parked', attempt_count: 0 });
    expect(await subscriptionRow(sql, subscription)).toBeUndefined();
  });

  it('releases an event whose application hit a database error: no attempt counted, due again after a backoff', async () => {
    const test = await asyncApp();
    const event = acmeEvent();
    await deliver(test, event);
    let calls = 0;
    const lostConnection: HandlerMap = {
      acme: {
        'subscription.updated': defineHandler({
          schema: z.unknown(),
          async apply() {
            calls += 1;
            throw Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
          },
        }),
      },
    };
    const worker = buildTestWorker(db, { handlers: lostConnection, random: () => 0.5 });

    expect(await worker.worker.work()).toMatchObject({ claimed: 1, released: 1, failed: 0, completed: 0 });
    expect(calls).toBe(1);
    expect(await eventRow(sql, event.id)).toMatchObject({ status: 'received', attempt_count: 0, last_error: null });
    // The backoff of the attempt it would have been (full jitter at 0.5 of the base, 1000 ms).
    expect(await leaseOf(event.id)).toMatchObject({ locked_by: null, locked_until: null });
    expect((await leaseOf(event.id))?.available_at.getTime()).toBe(TEST_NOW_MS + 500);
    expect(worker.logs.filter((line) => line.msg === 'inbox event released after a database error')).toEqual([
      expect.objectContaining({
        level: 'warn',
        worker: worker.worker.id,
        provider: 'acme',
        event_id: event.id,
        event_type: 'subscription.updated',
        attempt: 1,
      }),
    ]);

    // Applied by a later pass once due.
    const later = buildTestWorker(db, { now: TEST_NOW_MS + 500 });
    expect(await later.worker.work()).toMatchObject({ claimed: 1, completed: 1 });
    expect(await eventRow(sql, event.id)).toMatchObject({ status: 'completed', attempt_count: 0 });
  });

  it('dead-letters after INBOX_MAX_ATTEMPTS failures', async () => {
    const test = await asyncApp();
    const event = acmeEvent();
    await deliver(test, event);
    const worker = buildTestWorker(db, { handlers: flaky(99), settings: { maxAttempts: 3 }, random: () => 0 });
    for (let pass = 1; pass <= 3; pass++) {
      worker.setNow(TEST_NOW_MS + pass * 1000);
      await worker.worker.work();
      expect((await eventRow(sql, event.id))?.attempt_count).toBe(pass);
    }
    const dead = await eventRow(sql, event.id);
    expect(dead).toMatchObject({ status: 'dead_letter', attempt_count: 3 });
    expect(dead?.completed_at).not.toBeNull();
    worker.setNow(TEST_NOW_MS + 3_600_000);
    expect((await worker.worker.work()).claimed).toBe(0);
    expect(worker.logs).toContainEqual(expect.objectContaining({ msg: 'inbox event dead-lettered', alert: true }));
    expect(worker.metrics.render([])).toMatch(/outcome="dead_letter"} 1/);
  });

  it('dead-letters a permanent rejection at once, rolling its domain change back', async () => {
    const test = await asyncApp();
    const subscription = uniqueId('sub');
    const event = acmeEvent({ data: { id: subscription, status: 'active' } });
    await deliver(test, event);
    const worker = buildTestWorker(db, { handlers: failingAfterDefault('subscription.updated', 'impossible') });
    expect(await worker.worker.work()).toMatchObject({ deadLettered: 1 });
    expect(await eventRow(sql, event.id)).toMatchObject({ status: 'dead_letter', attempt_count: 1 });
    expect(await subscriptionRow(sql, subscription)).toBeUndefined();
  });

  it('re-queues a failed event on redelivery: 202, received, due now, attempts unchanged', async () => {
    const test = await asyncApp();
    const event = acmeEvent();
    await deliver(test, event);
    const worker = buildTestWorker(db, { handlers: flaky(1), random: () => 0.99 });
    await worker.worker.work();
    expect((await eventRow(sql, event.id))?.status).toBe('failed');

    test.setNow(TEST_NOW_MS + 10);
    const redelivery = await deliver(test, event);
    expect(redelivery.status).toBe(202);
    expect(await redelivery.text()).toBe('{"received":true,"queued":true}');
    expect(await eventRow(sql, event.id)).toMatchObject({ status: 'received', attempt_count: 1 });
    expect((await leaseOf(event.id))?.available_at.getTime()).toBe(TEST_NOW_MS + 10);

    worker.setNow(TEST_NOW_MS + 10);
    expect((await worker.worker.work()).completed).toBe(1);
    expect(await eventRow(sql, event.id)).toMatchObject({ status: 'completed', attempt_count: 1 });
  });
});

describe('sweeper', () => {
  it('makes a processing row whose lease expired claimable again, counting nothing', async () => {
    const test = await asyncApp();
    const stale = acmeEvent();
    const held = acmeEvent();
    await deliver(test, stale);
    await deliver(test, held);
    await sql`update webhook_events set status = 'processing', locked_by = 'crashed',
      locked_until = ${new Date(TEST_NOW_MS - 1)} where event_id = ${stale.id}`;
    await sql`update webhook_events set status = 'processing', locked_by = 'alive',
      locked_until = ${new Date(TEST_NOW_MS + 60_000)} where event_id = ${held.id}`;

    const summary = await sweepExpiredLeases(db, { nowMs: () => TEST_NOW_MS, budgetMs: 10_000 });
    expect(summary.swept).toBeGreaterThanOrEqual(1);
    expect(await eventRow(sql, stale.id)).toMatchObject({ status: 'received', attempt_count: 0 });
    expect(await leaseOf(stale.id)).toMatchObject({ locked_by: null, locked_until: null });
    expect(await eventRow(sql, held.id)).toMatchObject({ status: 'processing' });

    const worker = buildTestWorker(db);
    await worker.worker.work();
    expect((await eventRow(sql, stale.id))?.status).toBe('completed');
    expect((await eventRow(sql, held.id))?.status).toBe('processing');
    await sql`update webhook_events set status = 'completed', locked_by = null, locked_until = null where event_id = ${held.id}`;
  });
});

describe('retention', () => {
  it('nulls old terminal payloads, deletes older terminal rows, and never touches unfinished ones', async () => {
    const test = await asyncApp();
    const config = { PAYLOAD_RETENTION_DAYS: 7, EVENT_RETENTION_DAYS: 30 };
    const events = Object.fromEntries(
      ['recent', 'payloadOld', 'rowOld', 'received', 'failed', 'parked', 'processing', 'deadOld'].map((name) => [
        name,
        acmeEvent(),
      ]),
    );
    for (const event of Object.values(events)) await deliver(test, event);
    const age = async (name: string, status: string, days: number) => {
      const at = new Date(TEST_NOW_MS - days * DAY_MS);
      await sql`update webhook_events set status = ${status}::webhook_event_status, received_at = ${at},
        completed_at = ${status === 'completed' || status === 'dead_letter' ? at : null}
        where event_id = ${events[name]?.id ?? ''}`;
    };
    await age('recent', 'completed', 1);
    await age('payloadOld', 'completed', 8);
    await age('rowOld', 'completed', 31);
    await age('deadOld', 'dead_letter', 8);
    for (const status of ['received', 'failed', 'parked', 'processing']) await age(status, status, 400);

    const summary = await purgeByRetention(db, config, { nowMs: () => TEST_NOW_MS, budgetMs: 10_000, batchSize: 2 });
    expect(summary.rowsDeleted).toBeGreaterThanOrEqual(1);
    expect(summary.payloadsNulled).toBeGreaterThanOrEqual(2);

    const row = (name: string) => eventRow(sql, events[name]?.id ?? '');
    expect((await row('recent'))?.payload).not.toBeNull();
    expect(await row('payloadOld')).toMatchObject({ status: 'completed', payload: null });
    expect(await row('deadOld')).toMatchObject({ status: 'dead_letter', payload: null });
    expect(await row('rowOld')).toBeUndefined();
    for (const status of ['received', 'failed', 'parked', 'processing']) {
      expect(await row(status)).toMatchObject({ status, payload: expect.anything() });
    }

    // The key outlives the payload: a redelivery after the purge is still a duplicate.
    const redelivered = await deliver(test, events.payloadOld ?? {});
    expect(redelivered.status).toBe(200);
    expect(await redelivered.text()).toBe('{"received":true,"duplicate":true}');
    await sql`update webhook_events set status = 'completed', locked_by = null where status in ('received', 'failed', 'processing')`;
  });
});
