// A broker stopped in the middle of a drain, for the publisher tests that run a broker of their own:
// the real publisher wrapped so that the broker process is killed just before the n-th publish
// starts (publishes already sent may or may not have been acknowledged), and the passes that follow
// until the relay, on its own, has published everything once the broker is back.
import type postgres from 'postgres';
import { expect } from 'vitest';
import type { Publisher } from '../../src/outbox/publishers.ts';
import { BROKER_TEST_TIMEOUT, type OwnBroker } from '../helpers/brokers.ts';
import type { TestDatabase } from '../helpers/database.ts';
import { buildTestRelay, insertMessages, outboxRows, type TestRelay } from '../helpers/outbox.ts';

export function killingAtPublish(publisher: Publisher, at: number, broker: Pick<OwnBroker, 'kill'>): Publisher {
  let started = 0;
  let killed: Promise<void> | undefined;
  return {
    kind: publisher.kind,
    pipelined: publisher.pipelined,
    async publish(message, signal) {
      started += 1;
      if (started === at) killed = broker.kill();
      if (killed !== undefined) await killed;
      return publisher.publish(message, signal);
    },
  };
}

/** Passes a minute apart on the relay's clock (past any backoff), a moment apart on the wall clock. */
export async function publishUntilDone(test: TestRelay, sql: postgres.Sql, ids: readonly string[]): Promise<void> {
  for (let pass = 0; pass < 60; pass++) {
    test.advance(60_000);
    await test.relay.drain();
    const rows = await outboxRows(sql, ids);
    if (rows.every((row) => row.status === 'published')) return;
    expect(rows.filter((row) => row.status === 'dead')).toEqual([]);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error('the relay did not publish everything after the broker came back');
}

/**
 * 100 messages drained in batches of 20, two in flight, by `publisher`, the broker stopped in the
 * middle of the third batch (claimed only once the first was published and recorded; the second's
 * acknowledgements may or may not have come): the first batch is published, nothing goes dead, and every message not published is
 * pending with one failed attempt and a last_error that says what happened (`lastError`). Then the
 * broker comes back and passes follow until all are published. Answers the keys the first drain
 * published, which the broker must still hold.
 */
export async function drainThroughOutage(
  database: Pick<TestDatabase, 'db' | 'sql'>,
  options: { publisher: Publisher; stop(): Promise<void>; restart(): Promise<void>; lastError: RegExp },
): Promise<string[]> {
  const { db, sql } = database;
  const ids = await insertMessages(sql, 100);
  const settings = { batchSize: 20, batchesInFlight: 2, ...BROKER_TEST_TIMEOUT };
  const test = buildTestRelay(db, {
    publisher: killingAtPublish(options.publisher, settings.batchSize * settings.batchesInFlight + 10, {
      kill: options.stop,
    }),
    settings,
  });

  const first = await test.relay.drain();
  expect(first.published).toBeGreaterThanOrEqual(20);
  expect(first.published + first.retried).toBe(100);
  const afterOutage = await outboxRows(sql, ids);
  for (const row of afterOutage.filter((candidate) => candidate.status !== 'published')) {
    expect(row).toMatchObject({ status: 'pending', attempts: 1 });
    expect(row.last_error).toMatch(options.lastError);
  }

  await options.restart();
  await publishUntilDone(test, sql, ids);
  return afterOutage.filter((row) => row.status === 'published').map((row) => row.deduplication_key);
}
