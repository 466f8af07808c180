// One locked event row costs nothing unrelated (src/inbox/committer.ts): a second connection holds
// one webhook_events row FOR UPDATE (an operator's open transaction, a stuck statement) for longer than
// any deadline, while a duplicate delivery of that event and sixty unrelated deliveries arrive
// together, through the intake's group commit with as many lanes as `npm start` gives it. The
// duplicate waits on the row lock; the unrelated ones are applied once and answered 200, every time.
import { afterAll, describe, expect, it } from 'vitest';
import { connectDatabase } from '../src/db/client.ts';
import { type AcmeEventShape, acmeEvent, signedHeaders } from './helpers/acme.ts';
import { buildTestApp, type TestApp } from './helpers/app.ts';
import { useTestDatabase } from './helpers/database.ts';
import { countEvents, eventRow, holdEventLock } from './helpers/facts.ts';
import { patience, WAIT_MS } from './helpers/patience.ts';

/** `npm start`'s request pool with DB_POOL_MAX=10 (src/entry/setup/pools.ts): nine connections, nine lanes. */
const REQUEST_CONNECTIONS = 9;
const UNRELATED = 60;
/** The request deadline: the unrelated deliveries must be answered well within it on a busy machine. */
const DEADLINE_MS = patience(5000);

const { sql, url } = await useTestDatabase();
/** The intake's own pool, sized as `npm start` sizes it, so a lane stuck on the lock holds a real connection. */
const requests = connectDatabase({ url, maxConnections: REQUEST_CONNECTIONS, statementTimeoutMs: 4 * WAIT_MS });
afterAll(() => requests.close());

async function send(test: TestApp, event: AcmeEventShape) {
  const body = JSON.stringify(event);
  const response = await test.request('/webhooks/acme', { method: 'POST', body, headers: await signedHeaders(body) });
  return { status: response.status, body: await response.text() };
}

/** Where, among the concurrent deliveries, the duplicate of the locked event is sent. */
const placements = ['first', 'middle', 'last', 'first', 'middle'] as const;

describe('a duplicate of an event whose row is locked elsewhere', () => {
  const test = buildTestApp(requests.db, {
    groupCommit: { maxBatch: 64, lanes: REQUEST_CONNECTIONS },
    config: { HANDLER_DEADLINE_MS: DEADLINE_MS },
    // The duplicate is a byte-identical copy: it must meet the locked row, not the intake's memory.
    answeredDeliveries: false,
  });

  for (const [run, placement] of placements.entries()) {
    it(`run ${run + 1} of ${placements.length} (duplicate sent ${placement}): none of ${UNRELATED} unrelated deliveries is answered 503`, async () => {
      const app = await test;
      const locked = acmeEvent();
      expect(await send(app, locked)).toEqual({ status: 200, body: '{"received":true}' });
      const lock = await holdEventLock(sql, locked.id);
      try {
        const unrelated = Array.from({ length: UNRELATED }, () => acmeEvent());
        const at = placement === 'first' ? 0 : placement === 'middle' ? UNRELATED / 2 : UNRELATED;
        const deliveries = [...unrelated.slice(0, at), locked, ...unrelated.slice(at)];
        // The order the answers came in: the duplicate's, at its deadline, must be the last.
        const answeredInOrder: AcmeEventShape[] = [];
        const answers = await Promise.all(
          deliveries.map(async (event) => {
            const answer = await send(app, event);
            answeredInOrder.push(event);
            return answer;
          }),
        );
        const statuses = new Map<number, number>();
        for (const [index, answer] of answers.entries()) {
          if (deliveries[index] !== locked) statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
        }
        expect(Object.fromEntries(statuses)).toEqual({ 200: UNRELATED });
        // None of them waited for the lane the duplicate holds until its deadline: those queued behind
        // it (fewer than a quarter of a batch) used to, and were answered after it, when still in time.
        expect(answeredInOrder.indexOf(locked)).toBe(UNRELATED);
        for (const event of unrelated) {
          expect(await eventRow(sql, event.id)).toMatchObject({ status: 'completed', attempt_count: 0 });
          expect(await countEvents(sql, event.id)).toBe(1);
        }
        // The duplicate waited on the row lock until its deadline: 503, nothing stored or changed.
        expect(answers[at]).toEqual({ status: 503, body: '{"error":"unavailable"}' });
        expect(await countEvents(sql, locked.id)).toBe(1);
        expect(await eventRow(sql, locked.id)).toMatchObject({ status: 'completed', attempt_count: 0 });
      } finally {
        await lock.release();
      }
    });
  }
});
