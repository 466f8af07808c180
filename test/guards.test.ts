// Guards that a plausible one-line bug would remove without any other test noticing: a handler's
// own `enqueue` rolls back with it; a worker never applies a row another worker holds, nor starts one
// its lease no longer covers; a relay whose lease expired mid-publish has its late outcome dropped.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { takeLease } from '../src/db/lease.ts';
import { defineHandler, type HandlerMap } from '../src/domain/handlers.ts';
import { claimDue } from '../src/inbox/event-rows.ts';
import { applyStoredEvent } from '../src/inbox/stored.ts';
import { sendersByName } from '../src/senders/registry.ts';
import { acmeEvent, TEST_NOW_MS, uniqueId } from './helpers/acme.ts';
import { buildTestApp } from './helpers/app.ts';
import { newCounter } from './helpers/counter.ts';
import { useTestDatabase } from './helpers/database.ts';
import { eventRow } from './helpers/facts.ts';
import { buildTestRelay, insertMessages } from './helpers/outbox.ts';
import { startSink } from './helpers/sink.ts';
import { buildTestWorker, deliver } from './helpers/worker.ts';

const { sql, db } = await useTestDatabase();
const outboxRows = async (topic: string) =>
  Number((await sql`select count(*)::int as n from outbox_messages where topic = ${topic}`)[0]?.n);

/** A handler that writes its side effect through `enqueue`, then fails. */
function enqueueThenThrow(topic: string): HandlerMap {
  return {
    acme: {
      'subscription.updated': defineHandler({
        schema: z.unknown(),
        async apply({ enqueue }) {
          await enqueue({ topic, payload: { written: true } });
          throw new Error('downstream refused');
        },
      }),
    },
  };
}

describe("a handler's enqueue", () => {
  it('leaves no outbox row when the handler throws after it (sync intake)', async () => {
    const topic = uniqueId('topic');
    const test = await buildTestApp(db, { handlers: enqueueThenThrow(topic) });
    const event = acmeEvent();
    expect((await deliver(test, event)).status).toBe(500);
    expect(await eventRow(sql, event.id)).toMatchObject({ status: 'failed', attempt_count: 1 });
    expect(await outboxRows(topic)).toBe(0);
  });

  it('leaves no outbox row when the handler throws after it (async worker)', async () => {
    const topic = uniqueId('topic');
    const test = await buildTestApp(db, { config: { PROCESSING_MODE: 'async' } });
    const event = acmeEvent();
    expect((await deliver(test, event)).status).toBe(202);
    const { worker } = buildTestWorker(db, { handlers: enqueueThenThrow(topic) });
    const summary = await worker.work();
    expect(summary.failed).toBe(1);
    expect(await eventRow(sql, event.id)).toMatchObject({ status: 'failed', attempt_count: 1 });
    expect(await outboxRows(topic)).toBe(0);
  });
});

describe('the async worker and its lease', () => {
  async function queued(count: number) {
    const counter = await newCounter(sql);
    const test = await buildTestApp(db, { config: { PROCESSING_MODE: 'async' } });
    const events = Array.from({ length: count }, () => acmeEvent());
    for (const event of events) expect((await deliver(test, event)).status).toBe(202);
    return { counter, events, handlers: { acme: { 'subscription.updated': counter.handler } } as HandlerMap };
  }

  it('never applies a row another worker took over, in a batch or alone, and records no failure for it', async () => {
    const { counter, events, handlers } = await queued(2);
    const ids = events.map((event) => event.id);
    const claimed = await claimDue(db, takeLease('worker-a', TEST_NOW_MS, 30_000), new Date(TEST_NOW_MS), 10);
    const ours = claimed.filter((row) => ids.includes(row.eventId));
    expect(ours).toHaveLength(2);
    // Worker A's lease expired and worker B claimed the rows.
    await sql`update webhook_events set locked_by = 'worker-b' where event_id = any(${ids})`;

    // In a batch: a worker's pass locks only rows whose lease has expired (lockDueBatch), so the two
    // worker B holds are neither taken nor applied.
    const { worker } = buildTestWorker(db, { handlers });
    const summary = await worker.work();
    expect(summary.claimed).toBe(0);
    // Alone: worker A applying one of them under the lease it lost.
    const context = { db, handlers, sendersByName };
    const alone = await applyStoredEvent(context, ours[0] ?? { provider: 'acme', eventId: '' }, {
      from: ['processing'],
      leaseOwner: 'worker-a',
      onFailure: { retryAt: new Date(TEST_NOW_MS), maxAttempts: 10 },
    });
    expect(alone).toEqual({ outcome: 'skipped' });
    expect(await counter.value()).toBe(0);
    const rows =
      await sql`select status::text, attempt_count, locked_by from webhook_events where event_id = any(${ids})`;
    expect(rows).toEqual(ids.map(() => ({ status: 'processing', attempt_count: 0, locked_by: 'worker-b' })));
    await sql`update webhook_events set status = 'completed', locked_by = null where event_id = any(${ids})`;
  });

  it('gives rows back unapplied when its lease no longer covers an application', async () => {
    const { counter, events, handlers } = await queued(3);
    // A lease shorter than one application's timeout never covers an application.
    const { worker } = buildTestWorker(db, { handlers, settings: { lanes: 1, leaseMs: 4000, applyTimeoutMs: 5000 } });
    const summary = await worker.work();
    expect(summary.released).toBeGreaterThanOrEqual(3);
    expect(await counter.value()).toBe(0);
    const ids = events.map((event) => event.id);
    const rows =
      await sql`select status::text, attempt_count, locked_by from webhook_events where event_id = any(${ids})`;
    expect(rows).toEqual(ids.map(() => ({ status: 'received', attempt_count: 0, locked_by: null })));
  });
});

describe('a relay whose lease expired while it published', () => {
  it('has its late outcome dropped: the new holder keeps its lease and no attempt is counted', async () => {
    const sink = await startSink();
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    sink.respond(async () => {
      await held;
      return { status: 500, body: '{}' };
    });
    const [id] = await insertMessages(sql, 1, { topic: uniqueId('topic') });
    const { relay } = buildTestRelay(db, {
      target: sink.url,
      settings: { concurrency: 1, leaseMs: 30_000, timeoutMs: 20_000 },
    });
    const draining = relay.drain();
    await sink.waitForRequests(1);
    // Meanwhile the lease expired and another relay claimed the message.
    await sql`update outbox_messages set locked_by = 'relay-b', locked_until = now() + interval '1 minute' where id = ${id ?? ''}`;
    release();
    await draining;

    const [row] = await sql`select status, attempts, locked_by, last_error from outbox_messages where id = ${id ?? ''}`;
    expect(row).toMatchObject({ status: 'pending', attempts: 0, locked_by: 'relay-b', last_error: null });
  });
});
