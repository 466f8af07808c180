// Refused deliveries from the Worker entry: written after the answer, in the request's waitUntil,
// through the request's own database client, before that client is closed.
import { createExecutionContext, waitOnExecutionContext } from 'cloudflare:test';
import { env } from 'cloudflare:workers';
import postgres from 'postgres';
import { afterAll, describe, expect, it } from 'vitest';
import worker from '../../src/entry/worker.ts';

const sql = postgres(env.HYPERDRIVE.connectionString, { max: 2, fetch_types: false, onnotice: () => {} });
afterAll(() => sql.end());

const hex = (bytes: number) =>
  Array.from(crypto.getRandomValues(new Uint8Array(bytes)), (byte) => byte.toString(16).padStart(2, '0')).join('');

describe('refused deliveries on Workers', () => {
  it('are in the ring and the counts once the request has finished, credentials redacted', async () => {
    const traceId = hex(16);
    const ctx = createExecutionContext();
    const response = await worker.fetch(
      new Request('https://inbox.test/webhooks/acme', {
        method: 'POST',
        body: '{"secret":"in-the-body-zq"}',
        headers: {
          'content-type': 'application/json',
          'x-acme-timestamp': String(Math.floor(Date.now() / 1000)),
          'x-acme-signature': '0'.repeat(64),
          traceparent: `00-${traceId}-${hex(8)}-01`,
        },
      }),
      env,
      ctx,
    );
    expect(response.status).toBe(401);
    await waitOnExecutionContext(ctx);
    const rows = await sql`select provider, status_code, reason, headers from webhook_rejections
      where trace_id = ${traceId}`;
    expect(rows).toEqual([
      expect.objectContaining({ provider: 'acme', status_code: 401, reason: 'signature_mismatch' }),
    ]);
    expect(rows[0]?.headers).toMatchObject({ 'x-acme-signature': '[redacted]' });
    expect(JSON.stringify(rows)).not.toContain('in-the-body-zq');
    const [counted] = await sql`select sum(n)::int as n from webhook_rejection_counts
      where provider = 'acme' and reason = 'signature_mismatch'`;
    expect(counted?.n).toBeGreaterThanOrEqual(1);
  });
});
