// `npm start` in async mode as a real process: a delivery is answered 202 with the row stored, the
// in-process worker (WORKER_INTERVAL_MS) applies it and the relay publishes its outbox message, and
// SIGTERM stops the schedules before the pools close (exit 0).
// Needs a process: `npm start` in async mode, as an operator runs it: the built service and its in-process
// worker.
import { expect, it } from 'vitest';
import { acmeEvent, deliverAcme, uniqueId } from './helpers/acme.ts';
import { useTestDatabase } from './helpers/database.ts';
import { eventRow, subscriptionRow } from './helpers/facts.ts';
import { WAIT_MS } from './helpers/patience.ts';
import { startListeningService } from './helpers/process.ts';

const { sql, url } = await useTestDatabase();

it('npm start in async mode queues, applies on its schedule and stops cleanly', async () => {
  const secret = 'async-schedule-secret';
  const service = await startListeningService({
    DATABASE_URL: url,
    ACME_WEBHOOK_SECRET: secret,
    PROCESSING_MODE: 'async',
    WORKER_INTERVAL_MS: '100',
    RELAY_INTERVAL_MS: '100',
  });
  try {
    const nowSeconds = Math.floor(Date.now() / 1000);
    const subscription = uniqueId('sub');
    const event = acmeEvent({ created: nowSeconds, version: 2, data: { id: subscription, status: 'active' } });
    const response = await deliverAcme(service.origin, event, { secret, timestamp: nowSeconds });
    expect(response.status).toBe(202);
    expect(await response.json()).toEqual({ received: true, queued: true });
    expect(await eventRow(sql, event.id)).toBeDefined();

    await expect.poll(async () => (await eventRow(sql, event.id))?.status, { timeout: WAIT_MS }).toBe('completed');
    expect(await subscriptionRow(sql, subscription)).toMatchObject({ status: 'active', provider_version: '2' });
    const key = `acme:${event.id}:subscription.changed`;
    await expect
      .poll(
        async () =>
          (await sql`select status::text as status from outbox_messages where deduplication_key = ${key}`)[0]?.status,
        {
          timeout: WAIT_MS,
        },
      )
      .toBe('published');
    await service.waitForLine(/"msg":"inbox event applied"/);
  } finally {
    service.child.kill('SIGTERM');
  }
  expect(await service.exited).toEqual({ code: 0, signal: null });
});
