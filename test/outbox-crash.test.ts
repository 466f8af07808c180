// The guide's "a committed outbox message survives a worker crash", as a real crash: a relay in a
// child process (`webhook-inbox drain`) is killed with SIGKILL while the sink holds its request. The
// lease keeps everyone else off the message until it expires; then a second drain publishes it
// under the same Idempotency-Key, and the crash counted no attempt.
// Needs a process: a relay is killed with SIGKILL mid-publish, which only a separate process can show.
import { expect, it } from 'vitest';
import { useTestDatabase } from './helpers/database.ts';
import { buildTestRelay, insertMessages, outboxRow } from './helpers/outbox.ts';
import { cleanEnv, run } from './helpers/process.ts';
import { startSink } from './helpers/sink.ts';

const { db, sql, url } = await useTestDatabase();
const sink = await startSink();

it('a message survives a relay killed mid-publish and goes out again after the lease expires', async () => {
  const [id] = (await insertMessages(sql, 1)) as [string];
  const release = sink.hold();

  const relay = run(
    process.execPath,
    ['bin/webhook-inbox.js', 'drain'],
    cleanEnv({ DATABASE_URL: url, OUTBOX_TARGET_URL: sink.url, OUTBOX_LEASE_MS: '30000', LOG_LEVEL: 'silent' }),
  );
  try {
    await sink.waitForRequests(1);
    const leased = await outboxRow(sql, id);
    expect(leased).toMatchObject({ status: 'pending', attempts: 0 });
    expect(leased?.locked_by).not.toBeNull();
    relay.child.kill('SIGKILL');
    expect(await relay.exited).toEqual({ code: null, signal: 'SIGKILL' });
  } finally {
    relay.child.kill('SIGKILL');
    release();
  }

  const afterCrash = await outboxRow(sql, id);
  expect(afterCrash).toMatchObject({ status: 'pending', attempts: 0, published_at: null });
  const lockedUntil = afterCrash?.locked_until?.getTime() ?? Number.NaN;

  sink.respond(() => ({ status: 200 }));
  const survivor = buildTestRelay(db, { target: sink.url });
  // While the dead relay's lease lasts, nobody else may take the message.
  survivor.setNow(lockedUntil - 1);
  expect((await survivor.relay.drain()).claimed).toBe(0);
  // Once it has passed, the message is claimed again and published.
  survivor.setNow(lockedUntil + 1);
  expect(await survivor.relay.drain()).toMatchObject({ claimed: 1, published: 1 });

  const published = await outboxRow(sql, id);
  expect(published).toMatchObject({ status: 'published', attempts: 0, last_error: null, locked_by: null });
  expect(sink.requests).toHaveLength(2);
  const [first, second] = sink.requests;
  expect(second?.headers['idempotency-key']).toBe(published?.deduplication_key);
  expect(first?.headers['idempotency-key']).toBe(second?.headers['idempotency-key']);
  expect(first?.body).toBe(second?.body);
});
