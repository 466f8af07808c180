// A real deadlock between two intake batches (src/inbox/committer.ts): two lanes, each batch's handler
// locks two subscription rows in the opposite order of the other's. PostgreSQL aborts one of them with
// 40P01, which Drizzle wraps in a DrizzleQueryError; the committer must see the SQLSTATE through the
// wrapper and run the losing batch again, so both deliveries are answered 200 and applied once.
import { sql as drizzleSql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineHandler, type HandlerMap } from '../src/domain/handlers.ts';
import { acmeEvent, signedHeaders, uniqueId } from './helpers/acme.ts';
import { buildTestApp } from './helpers/app.ts';
import { useTestDatabase } from './helpers/database.ts';
import { barrier, eventRow } from './helpers/facts.ts';

const { sql, db } = await useTestDatabase();

describe('intake batches that deadlock', () => {
  it('retries the batch PostgreSQL chose as the victim: both deliveries 200, each applied once', async () => {
    const [first, second] = [uniqueId('sub'), uniqueId('sub')];
    await sql`insert into subscriptions (external_id, status, provider_version, updated_at)
      values (${first}, 'active', 0, now()), (${second}, 'active', 0, now())`;
    const bothHoldOne = barrier(2);
    let runs = 0;
    const applied: string[] = [];
    const schema = z.looseObject({ id: z.string(), data: z.looseObject({ lock: z.array(z.string()) }) });
    const handlers: HandlerMap = {
      acme: {
        'subscription.updated': defineHandler({
          schema,
          async apply({ tx }, payload) {
            runs += 1;
            const [one, other] = payload.data.lock;
            await tx.execute(drizzleSql`select 1 from subscriptions where external_id = ${one} for update`);
            // The first run of each waits until both hold their first row: the second lock then closes the cycle.
            if (runs <= 2) await bothHoldOne();
            await tx.execute(drizzleSql`select 1 from subscriptions where external_id = ${other} for update`);
            applied.push(payload.id);
          },
        }),
      },
    };
    // Two lanes and a spill point of one: the second delivery opens its own batch beside the first.
    const test = await buildTestApp(db, { handlers, groupCommit: { maxBatch: 4, lanes: 2 } });
    const events = [
      acmeEvent({ data: { id: first, status: 'active', lock: [first, second] } }),
      acmeEvent({ data: { id: second, status: 'active', lock: [second, first] } }),
    ];
    const answers = await Promise.all(
      events.map(async (event) => {
        const body = JSON.stringify(event);
        const response = await test.request('/webhooks/acme', {
          method: 'POST',
          body,
          headers: await signedHeaders(body),
        });
        return { status: response.status, body: await response.text() };
      }),
    );

    for (const answer of answers) expect(answer).toEqual({ status: 200, body: '{"received":true}' });
    // At least three runs: both first runs, one of which PostgreSQL aborted, and the victim's second
    // run; on a loaded machine a retry may meet the other batch again and run once more.
    expect(runs).toBeGreaterThanOrEqual(3);
    expect(applied.sort()).toEqual(events.map((event) => event.id).sort());
    for (const event of events) {
      expect(await eventRow(sql, event.id)).toMatchObject({ status: 'completed', attempt_count: 0, last_error: null });
    }
  });
});
