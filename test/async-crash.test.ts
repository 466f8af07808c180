// A real crash: `webhook-inbox work` runs in a child process and is killed with SIGKILL while its
// apply transaction waits on a subscription row this test holds locked. Nothing it did commits; its
// lease keeps everyone off the event until it expires; then another worker applies the event, once.
// Needs a process: a worker is killed with SIGKILL mid-apply, which only a separate process can show.
import { expect, it } from 'vitest';
import { acmeEvent, signedHeaders, uniqueId } from './helpers/acme.ts';
import { buildTestApp } from './helpers/app.ts';
import { useTestDatabase } from './helpers/database.ts';
import { eventRow, holdSubscriptionLock, lockWaitingBackends, subscriptionRow } from './helpers/facts.ts';
import { until } from './helpers/patience.ts';
import { cleanEnv, run } from './helpers/process.ts';
import { buildTestWorker } from './helpers/worker.ts';

const { db, sql, url, name } = await useTestDatabase();

const backendAlive = async (pid: number) => (await sql`select 1 from pg_stat_activity where pid = ${pid}`).length > 0;

it('an event whose worker was killed mid-apply is applied exactly once after the lease expires', async () => {
  const subscription = uniqueId('sub');
  // Real time: the child worker compares due times with its own clock.
  const nowMs = Date.now();
  const test = await buildTestApp(db, { config: { PROCESSING_MODE: 'async' }, clock: () => nowMs });
  const event = acmeEvent({
    version: 5,
    created: Math.floor(nowMs / 1000),
    data: { id: subscription, status: 'active' },
  });
  const body = JSON.stringify(event);
  const headers = await signedHeaders(body, { timestamp: Math.floor(nowMs / 1000) });
  expect((await test.request('/webhooks/acme', { method: 'POST', body, headers })).status).toBe(202);
  await sql`insert into subscriptions (external_id, status, provider_version, updated_at)
    values (${subscription}, 'trialing', 1, now())`;

  const lock = await holdSubscriptionLock(sql, subscription);

  const worker = run(
    process.execPath,
    ['bin/webhook-inbox.js', 'work'],
    cleanEnv({ DATABASE_URL: url, INBOX_LEASE_MS: '30000', LOG_LEVEL: 'silent' }),
  );
  let blocked: number[] = [];
  try {
    await until(async () => {
      blocked = await lockWaitingBackends(sql, name);
      return blocked.length > 0;
    });
    const leased = await sql<{ status: string; locked_by: string | null; locked_until: Date }[]>`
      select status::text as status, locked_by, locked_until from webhook_events where event_id = ${event.id}`;
    expect(leased[0]).toMatchObject({ status: 'processing', locked_by: expect.stringMatching(/^worker-/) });
    worker.child.kill('SIGKILL');
    expect(await worker.exited).toEqual({ code: null, signal: 'SIGKILL' });
  } finally {
    worker.child.kill('SIGKILL');
    await lock.release();
  }
  // The orphaned backend gets the lock, finds its client gone, and rolls back.
  for (const pid of blocked) await until(async () => !(await backendAlive(pid)));

  const afterCrash = await eventRow(sql, event.id);
  expect(afterCrash).toMatchObject({ status: 'processing', attempt_count: 0, completed_at: null });
  expect(await subscriptionRow(sql, subscription)).toMatchObject({ status: 'trialing', provider_version: '1' });
  const [lease] = await sql<
    { locked_until: Date }[]
  >`select locked_until from webhook_events where event_id = ${event.id}`;
  const lockedUntil = lease?.locked_until.getTime() ?? Number.NaN;

  const survivor = buildTestWorker(db, { now: lockedUntil - 1 });
  expect((await survivor.worker.work()).claimed).toBe(0);
  survivor.setNow(lockedUntil + 1);
  expect(await survivor.worker.work()).toMatchObject({ claimed: 1, completed: 1 });
  expect((await survivor.worker.work()).claimed).toBe(0);

  expect(await eventRow(sql, event.id)).toMatchObject({ status: 'completed', attempt_count: 0 });
  expect(await subscriptionRow(sql, subscription)).toMatchObject({ status: 'active', provider_version: '5' });
  const messages =
    await sql`select 1 from outbox_messages where deduplication_key = ${`acme:${event.id}:subscription.changed`}`;
  expect(messages).toHaveLength(1);
});
