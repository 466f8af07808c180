// Inside workerd: a delivery through the Worker enqueues its side effect, and the cron trigger's
// maintenance run publishes it to the real HTTP sink with the message's Idempotency-Key.
import { createExecutionContext, createScheduledController, waitOnExecutionContext } from 'cloudflare:test';
import { env, exports } from 'cloudflare:workers';
import postgres from 'postgres';
import { afterAll, describe, expect, it } from 'vitest';
import worker from '../../src/entry/worker.ts';
import { acmeEvent, signedHeaders, uniqueId } from '../helpers/acme.ts';

const sql = postgres(env.HYPERDRIVE.connectionString, { max: 2, fetch_types: false, onnotice: () => {} });
afterAll(() => sql.end());

const sinkUrl = (env as Env & { OUTBOX_TARGET_URL: string }).OUTBOX_TARGET_URL;

describe('the cron trigger in workerd', () => {
  it('publishes a pending outbox message with its Idempotency-Key', async () => {
    const subscription = uniqueId('sub');
    const event = acmeEvent({ created: Math.floor(Date.now() / 1000), data: { id: subscription, status: 'active' } });
    const body = JSON.stringify(event);
    const headers = await signedHeaders(body, { timestamp: Math.floor(Date.now() / 1000) });
    const delivered = await exports.default.fetch('https://inbox.test/webhooks/acme', {
      method: 'POST',
      body,
      headers,
    });
    expect(delivered.status).toBe(200);

    const key = `acme:${event.id}:subscription.changed`;
    const [pending] = await sql<
      { status: string }[]
    >`select status::text from outbox_messages where deduplication_key = ${key}`;
    expect(pending?.status).toBe('pending');

    const ctx = createExecutionContext();
    worker.scheduled(createScheduledController({ cron: '* * * * *', scheduledTime: Date.now() }), env, ctx);
    await waitOnExecutionContext(ctx);

    const [published] = await sql<{ status: string; attempts: number }[]>`
      select status::text, attempts from outbox_messages where deduplication_key = ${key}`;
    expect(published).toEqual({ status: 'published', attempts: 0 });
    const received = (await (await fetch(new URL('/received', sinkUrl))).json()) as Array<{
      idempotencyKey: string;
      body: string;
    }>;
    const ours = received.filter((message) => message.idempotencyKey === key);
    expect(ours).toHaveLength(1);
    expect(JSON.parse(ours[0]?.body ?? '{}')).toMatchObject({
      topic: 'subscription.changed',
      deduplication_key: key,
      payload: { external_id: subscription, status: 'active' },
    });
  });
});
