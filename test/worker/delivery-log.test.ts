// The Worker entry writes the delivery log after each request (waitUntil), with that request's own
// client: once the invocation's background work has settled, each delivery has its row.
import { createExecutionContext, waitOnExecutionContext } from 'cloudflare:test';
import { env } from 'cloudflare:workers';
import postgres from 'postgres';
import { afterAll, describe, expect, it } from 'vitest';
import worker from '../../src/entry/worker.ts';
import { acmeEvent, signedHeaders } from '../helpers/acme.ts';

const nowSeconds = () => Math.floor(Date.now() / 1000);
const sql = postgres(env.HYPERDRIVE.connectionString, { max: 2, fetch_types: false, onnotice: () => {} });
afterAll(() => sql.end());

/**
 * `event` delivered signed at `signedAt` (unix seconds). A sender signs each retry anew: a
 * byte-identical copy would be answered from memory, with no record (test/repeated-deliveries.test.ts).
 */
async function deliver(event: object, traceId: string, signedAt = nowSeconds()): Promise<Response> {
  const body = JSON.stringify(event);
  const headers = {
    ...(await signedHeaders(body, { timestamp: signedAt })),
    traceparent: `00-${traceId}-00f067aa0ba902b7-01`,
  };
  const ctx = createExecutionContext();
  const response = await worker.fetch(
    new Request('https://inbox.test/webhooks/acme', { method: 'POST', body, headers }),
    env,
    ctx,
  );
  await waitOnExecutionContext(ctx);
  return response;
}

describe('the delivery log on Workers', () => {
  it('records each delivery, the first and the duplicate, after its request', async () => {
    const event = acmeEvent({ created: Math.floor(Date.now() / 1000) - 10 });
    const traces = [crypto.randomUUID().replaceAll('-', ''), crypto.randomUUID().replaceAll('-', '')];
    // Signed a second apart from one reading of the clock: two readings could straddle a second and
    // sign both alike, and the second would then be answered from memory, with no record.
    const signedAt = nowSeconds();
    expect((await deliver(event, traces[0] ?? '', signedAt)).status).toBe(200);
    expect((await deliver(event, traces[1] ?? '', signedAt - 1)).status).toBe(200);
    const rows = await sql<{ trace_id: string; status_code: number; outcome: string }[]>`
      select trace_id, status_code, outcome from webhook_deliveries
      where provider = 'acme' and event_id = ${event.id} order by delivered_at, trace_id`;
    expect(new Set(rows.map((row) => `${row.trace_id} ${row.status_code} ${row.outcome}`))).toEqual(
      new Set([`${traces[0]} 200 completed`, `${traces[1]} 200 duplicate`]),
    );
  });

  it('answers a byte-identical copy of a delivery answered in full from memory, with no record', async () => {
    const event = acmeEvent({ created: Math.floor(Date.now() / 1000) - 10 });
    const traces = [crypto.randomUUID().replaceAll('-', ''), crypto.randomUUID().replaceAll('-', '')];
    const signedAt = nowSeconds();
    expect((await deliver(event, traces[0] ?? '', signedAt)).status).toBe(200);
    const copy = await deliver(event, traces[1] ?? '', signedAt);
    expect([copy.status, await copy.text()]).toEqual([200, '{"received":true,"duplicate":true}']);
    const rows = await sql<{ trace_id: string; outcome: string }[]>`
      select trace_id, outcome from webhook_deliveries where provider = 'acme' and event_id = ${event.id}`;
    expect(rows.map((row) => `${row.trace_id} ${row.outcome}`)).toEqual([`${traces[0]} completed`]);
  });

  it('folds further duplicates into the duplicate row, each flushed after its own request', async () => {
    const event = acmeEvent({ created: Math.floor(Date.now() / 1000) - 10 });
    const traces = Array.from({ length: 4 }, () => crypto.randomUUID().replaceAll('-', ''));
    const signedAt = nowSeconds();
    for (const [attempt, trace] of traces.entries()) {
      expect((await deliver(event, trace, signedAt - attempt)).status).toBe(200);
    }
    const rows = await sql<{ trace_id: string; outcome: string; repeats: number; last_delivered_at: Date | null }[]>`
      select trace_id, outcome, repeats, last_delivered_at from webhook_deliveries
      where provider = 'acme' and event_id = ${event.id} order by delivered_at, trace_id`;
    expect(rows.map((row) => [row.trace_id, row.outcome, row.repeats, row.last_delivered_at !== null])).toEqual([
      [traces[0], 'completed', 0, false],
      [traces[1], 'duplicate', 2, true],
    ]);
  });
});
