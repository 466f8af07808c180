// One slow handler, one answer (src/inbox/committer.ts): a second connection holds one subscription's
// row lock for longer than a batch may wait, while a batch of deliveries, a few of them changing that
// subscription and the rest unrelated, goes through the intake's group commit together. The batch
// times out; each member runs again alone, bounded by its own deadline: the unrelated ones are
// applied once and answered 200, only those that wait on the lock again are answered 503 (stored
// nowhere), and the sender's retry after the lock is gone applies them once.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defaultHandlers, defineHandler, type HandlerMap } from '../src/domain/handlers.ts';
import { enableSenders } from '../src/senders/registry.ts';
import {
  type AcmeEventShape,
  acmeEvent,
  PREVIOUS_SECRET,
  signedHeaders,
  TEST_SECRET,
  uniqueId,
} from './helpers/acme.ts';
import { buildTestApp, type TestApp } from './helpers/app.ts';
import { useTestDatabase } from './helpers/database.ts';
import { barrier, countEvents, deferred, eventRow, holdSubscriptionLock, subscriptionRow } from './helpers/facts.ts';
import { patience, WAIT_MS } from './helpers/patience.ts';

/**
 * The request deadline: a batch may wait half of it, then each member runs alone with what it has
 * left. It has to cover twelve requests reaching the barrier and nine transactions run one after the
 * other on a busy machine, so it scales with the suite's patience; the victims take all of it.
 */
const DEADLINE_MS = patience(8000);

/**
 * The connections' statement_timeout, far beyond anything this test waits for: a connection that
 * stops waiting on the lock while it is still held was stopped by the delivery's own deadline.
 */
const { sql, db } = await useTestDatabase({ statementTimeoutMs: 4 * WAIT_MS });

async function send(test: TestApp, event: AcmeEventShape) {
  const body = JSON.stringify(event);
  const response = await test.request('/webhooks/acme', { method: 'POST', body, headers: await signedHeaders(body) });
  return { status: response.status, retryAfter: response.headers.get('retry-after'), body: await response.text() };
}

const outboxFor = async (eventId: string) =>
  Number(
    (await sql`select count(*)::int as n from outbox_messages where deduplication_key like ${`acme:${eventId}:%`}`)[0]
      ?.n,
  );

/** Connections of this database waiting on a lock right now. */
async function lockWaiters(): Promise<number> {
  const [row] = await sql`select count(*)::int as n from pg_stat_activity
    where datname = current_database() and wait_event_type = 'Lock'`;
  return Number(row?.n);
}

/** `work`, or a failure that says what did not happen once WAIT_MS passed (instead of a bare test timeout). */
function orFail<T>(work: Promise<T>, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const limit = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(what)), WAIT_MS);
  });
  return Promise.race([work, limit]).finally(() => clearTimeout(timer));
}

/** The one log line each delivery wrote, by event id: its level and outcome. */
function linesByEvent(logs: readonly string[]): Map<string, Array<{ level: string; outcome: string }>> {
  const line = z.object({ level: z.string(), outcome: z.string(), event_id: z.string() });
  const byEvent = new Map<string, Array<{ level: string; outcome: string }>>();
  for (const text of logs) {
    const parsed = line.safeParse(JSON.parse(text));
    if (!parsed.success) continue;
    const { event_id: eventId, level, outcome } = parsed.data;
    byEvent.set(eventId, [...(byEvent.get(eventId) ?? []), { level, outcome }]);
  }
  return byEvent;
}

describe('a batch that meets a row lock held elsewhere', () => {
  it('answers 503 only to the deliveries that wait on it; the unrelated members of its batch are applied once', async () => {
    const locked = uniqueId('sub');
    await sql`insert into subscriptions (external_id, status, provider_version, updated_at)
      values (${locked}, 'active', 1, now())`;
    // Three changes of the locked subscription (versions 2..4) among nine unrelated deliveries.
    const victims = [2, 3, 4].map((version) => acmeEvent({ version, data: { id: locked, status: 'past_due' } }));
    const unrelated = Array.from({ length: 9 }, () => acmeEvent());
    const deliveries = [...unrelated.slice(0, 4), ...victims, ...unrelated.slice(4)];

    // A `lane.hold` delivery holds the only lane while the others queue, so they all share the next batch.
    const hold = deferred();
    const holding = deferred();
    const handlers: HandlerMap = {
      acme: {
        ...defaultHandlers.acme,
        'lane.hold': defineHandler({
          schema: z.unknown(),
          apply: () => {
            holding.resolve();
            return hold.promise;
          },
        }),
      },
    };
    const enabledSenders = await enableSenders({ acme: [TEST_SECRET, PREVIOUS_SECRET] });
    const batchSizes: number[] = [];
    const gate = barrier(deliveries.length);
    const queued = deferred();
    let through = 0;
    const test = await buildTestApp(db, {
      enabledSenders,
      handlers,
      groupCommit: { maxBatch: 64, lanes: 1, onBatch: (size) => batchSizes.push(size) },
      config: { HANDLER_DEADLINE_MS: DEADLINE_MS },
      beforeStore: async ({ eventId }) => {
        if (!deliveries.some((event) => event.id === eventId)) return;
        await gate();
        through += 1;
        // Past the barrier a delivery joins the committer's queue without waiting again.
        if (through === deliveries.length) setImmediate(queued.resolve);
      },
    });

    // The second connection: the subscription's row stays locked until the test says so.
    const lock = await holdSubscriptionLock(sql, locked);

    const holder = send(test, acmeEvent({ type: 'lane.hold' }));
    await holding.promise;
    const answers = deliveries.map((event) => send(test, event));
    await queued.promise;
    hold.resolve();
    expect((await holder).status).toBe(200);
    // The victims waited out their deadline, not the lock: every delivery is answered while the lock
    // is still held (it is released only below), and the statement_timeout is far longer than this wait.
    const answered = await orFail(Promise.all(answers), 'the deliveries were not answered while the lock was held');
    // Their runs alone were bounded by their deadline, not by the connection's statement_timeout: their
    // connections stop waiting on the lock while it is still held.
    await expect.poll(lockWaiters, { timeout: WAIT_MS }).toBe(0);
    await lock.release();

    // They shared one batch: the holder's, then all twelve together.
    expect(batchSizes).toEqual([1, deliveries.length]);
    const byEvent = linesByEvent(test.logs);
    for (const [index, event] of deliveries.entries()) {
      const isVictim = victims.includes(event);
      const answer = answered[index];
      if (isVictim) {
        expect(answer).toMatchObject({ status: 503, retryAfter: expect.stringMatching(/^\d+$/) });
        expect(await countEvents(sql, event.id)).toBe(0);
        expect(await outboxFor(event.id)).toBe(0);
        expect(byEvent.get(event.id)).toEqual([{ level: 'error', outcome: 'unavailable' }]);
      } else {
        expect(answer).toEqual({ status: 200, retryAfter: null, body: '{"received":true}' });
        expect(await eventRow(sql, event.id)).toMatchObject({
          status: 'completed',
          attempt_count: 0,
          last_error: null,
        });
        expect(await countEvents(sql, event.id)).toBe(1);
        expect(await subscriptionRow(sql, String(event.data.id))).toMatchObject({
          status: 'active',
          provider_version: '1',
        });
        expect(await outboxFor(event.id)).toBe(1);
        expect(byEvent.get(event.id)).toEqual([{ level: 'info', outcome: 'completed' }]);
      }
    }
    expect(await subscriptionRow(sql, locked)).toMatchObject({ status: 'active', provider_version: '1' });

    // The sender's retries, once the lock is gone: each applied once, in version order.
    for (const event of victims) {
      expect(await send(test, event)).toEqual({ status: 200, retryAfter: null, body: '{"received":true}' });
      expect(await eventRow(sql, event.id)).toMatchObject({ status: 'completed', attempt_count: 0, last_error: null });
      expect(await outboxFor(event.id)).toBe(1);
    }
    expect(await subscriptionRow(sql, locked)).toMatchObject({ status: 'past_due', provider_version: '4' });
    for (const event of unrelated) expect(await outboxFor(event.id)).toBe(1);
  });
});
