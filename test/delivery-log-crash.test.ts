// The delivery log's promise under a crash (docs/admin.md#delivery-log): a process killed without
// SIGTERM loses only the records of its last flush interval, in async mode too, while the worker
// holds every background connection applying a backlog. Issue 34 found the log's write queued behind
// the worker's batches, records acknowledged up to 6.2 s before the kill lost; the write now has a
// connection of its own (src/entry/setup/pools.ts).
// Needs a process: the service is killed with SIGKILL, which only a separate process can show.
import { expect, it } from 'vitest';
import { splitPool } from '../src/entry/setup/pools.ts';
import { deliveryLogDelayBoundMs } from '../src/inbox/delivery-log.ts';
import { longestIntervalMs } from '../src/ops/maintenance/schedule.ts';
import { acmeEvent, deliverAcme, TEST_SECRET, uniqueId } from './helpers/acme.ts';
import { useTestDatabase } from './helpers/database.ts';
import { holdSubscriptionLock, lockWaitingBackends } from './helpers/facts.ts';
import { patience, until } from './helpers/patience.ts';
import { startListeningService } from './helpers/process.ts';

const { sql, url, name } = await useTestDatabase();

const FLUSH_MS = 250;
const DB_POOL_MAX = 10;
/** Applications blocked on the test's lock must not time out while it runs (the lease covers them). */
const HANDLER_DEADLINE_MS = patience(30_000);

/**
 * `count` queued events of one subscription, inserted as the intake stores them: enough for every
 * worker lane to claim a batch of its own (200 each), every batch then waiting on the row's lock.
 */
async function queueBacklog(subscription: string, count: number): Promise<void> {
  const prefix = uniqueId('backlog');
  await sql`insert into webhook_events (provider, event_id, event_type, status, payload)
    select 'acme', ${prefix} || '_' || n, 'subscription.updated', 'received',
      jsonb_build_object('id', ${prefix} || '_' || n, 'type', 'subscription.updated', 'api_version', '2024-06-01',
        'created', ${Math.floor(Date.now() / 1000)}::int, 'version', n + 1,
        'data', jsonb_build_object('id', ${subscription}::text, 'status', 'active'))
    from generate_series(1, ${count}::int) as n`;
}

it('records of acknowledged deliveries survive a SIGKILL after the flush bound, the async worker busy', async () => {
  const lanes = splitPool(DB_POOL_MAX, 'async', { deliveryLog: true }).background;
  const subscription = uniqueId('sub');
  await sql`insert into subscriptions (external_id, status, provider_version, updated_at)
    values (${subscription}, 'trialing', 1, now())`;
  const lock = await holdSubscriptionLock(sql, subscription);
  const timestamp = Math.floor(Date.now() / 1000);
  const events = Array.from({ length: 20 }, () => acmeEvent({ created: timestamp }));
  const service = await startListeningService({
    DATABASE_URL: url,
    ACME_WEBHOOK_SECRET: TEST_SECRET,
    PROCESSING_MODE: 'async',
    DB_POOL_MAX: String(DB_POOL_MAX),
    DELIVERY_LOG_FLUSH_MS: String(FLUSH_MS),
    WORKER_INTERVAL_MS: '100',
    HANDLER_DEADLINE_MS: String(HANDLER_DEADLINE_MS),
    INBOX_LEASE_MS: String(HANDLER_DEADLINE_MS * 3),
    LOG_LEVEL: 'info',
  });
  try {
    await queueBacklog(subscription, lanes * 200 + 1);
    // Every background connection is in a worker's transaction, waiting on the lock.
    await until(async () => (await lockWaitingBackends(sql, name)).length >= lanes);

    const answers = await Promise.all(
      events.map(
        async (event) => (await deliverAcme(service.origin, event, { secret: TEST_SECRET, timestamp })).status,
      ),
    );
    expect(answers).toEqual(events.map(() => 202));
    // The promise itself, scaled for a slow machine: nothing to poll for, the kill must not wait.
    await new Promise((resolve) => setTimeout(resolve, patience(deliveryLogDelayBoundMs(longestIntervalMs(FLUSH_MS)))));
    service.child.kill('SIGKILL');
    expect(await service.exited).toEqual({ code: null, signal: 'SIGKILL' });
  } finally {
    service.child.kill('SIGKILL');
    await lock.release();
  }

  const logged = await sql<{ event_id: string }[]>`select event_id from webhook_deliveries
    where provider = 'acme' and outcome = 'queued' and status_code = 202 order by event_id`;
  expect(logged.map((row) => row.event_id)).toEqual(events.map((event) => event.id).sort());
});
