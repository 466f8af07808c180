// A broker stopped in the middle of a drain, for the publisher tests that run a broker of their own:
// the real publisher wrapped so that the broker process is killed just before the n-th publish
// starts (publishes already sent may or may not have been acknowledged), and the passes that follow
// until the relay, on its own, has published everything once the broker is back. And a broker that
// goes silent: a publish's timeout counts an attempt only on a live connection.
import type postgres from 'postgres';
import { afterEach, describe, expect, it } from 'vitest';
import type { Publisher } from '../../src/outbox/publishers/publisher.ts';
import { BROKER_TEST_TIMEOUT, cuttableLink, drainOneMessage, type OwnBroker } from '../helpers/brokers.ts';
import type { TestDatabase } from '../helpers/database.ts';
import { buildTestRelay, insertMessages, outboxRows, type TestRelay } from '../helpers/outbox.ts';
import { WAIT_MS } from '../helpers/patience.ts';

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
  // Bounded by the wall clock, not a number of passes: how soon a publisher reconnects to a restarted
  // broker depends on how busy the machine is, and only a hang should end this.
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    test.advance(60_000);
    await test.relay.drain();
    const rows = await outboxRows(sql, ids);
    if (rows.every((row) => row.status === 'published')) return;
    expect(rows.filter((row) => row.status === 'dead')).toEqual([]);
    if (Date.now() > deadline) throw new Error('the relay did not publish everything after the broker came back');
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/**
 * 100 messages drained in batches of 20, two in flight, by `publisher`, the broker stopped in the
 * middle of the third batch (claimed only once the first was published and recorded; the second's
 * acknowledgements may or may not have come): the first batch is published, nothing goes dead, the
 * relay claims no further batch once it found the broker out of reach, and every message not
 * published is pending with no attempt counted (the broker failed, not the message) and, when it was
 * tried, a last_error that says what happened (`lastError`). Then the broker comes back and passes
 * follow until all are published. Answers the keys the first drain published, which the broker must
 * still hold.
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
  expect(first).toMatchObject({ retried: 0, dead: 0, stoppedBy: 'unavailable' });
  expect(first.published).toBeGreaterThanOrEqual(20);
  expect(first.claimed).toBeLessThan(100);
  const afterOutage = await outboxRows(sql, ids);
  for (const row of afterOutage.filter((candidate) => candidate.status !== 'published')) {
    expect(row).toMatchObject({ status: 'pending', attempts: 0 });
    if (row.last_error !== null) expect(row.last_error).toMatch(options.lastError);
  }

  await options.restart();
  await publishUntilDone(test, sql, ids);
  return afterOutage.filter((row) => row.status === 'published').map((row) => row.deduplication_key);
}

/** A target cut off and restored by the test: a TCP proxy in front of it (helpers/brokers.ts). */
export interface Outage {
  cut(): Promise<void>;
  restore(): Promise<void>;
}

/**
 * How long the outage lasts, and the backoff it is measured against. A message's retries at these
 * settings (10 attempts, 5 ms doubling to 20 ms) would all be spent within about 0.1 s, so an
 * outage of 3 s is some thirty times what used to kill every message: long enough to stand for the
 * issue's 5-minute outage at production settings without making the test take 5 minutes.
 */
export const OUTAGE_MS = 3000;
/**
 * The outage also lasts until the relay has probed this many times: on a loaded machine a drain can
 * take tens of milliseconds, and 3 s alone would then be a few dozen chances to count an attempt.
 */
export const OUTAGE_PROBES = 100;
/**
 * Only a hang guard: the outage ends once both conditions above hold, and a relay that has not probed
 * OUTAGE_PROBES times by then fails the test with the count it reached.
 */
const OUTAGE_LIMIT_MS = WAIT_MS;
const OUTAGE_SETTINGS = {
  maxAttempts: 10,
  backoff: { baseMs: 5, maxMs: 20 },
  outageBackoff: { baseMs: 5, maxMs: 20 },
  batchSize: 50,
  ...BROKER_TEST_TIMEOUT,
} as const;

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A long outage of the target through the relay, on the wall clock: 50 messages published first (the
 * publisher's connection is open when the cut comes), then 200 more, the target cut, and the relay
 * draining every few milliseconds for OUTAGE_MS and at least OUTAGE_PROBES probes, probing with one message at a time; then the target
 * back. Ends with every message published once at the consumer (`consume` answers the keys it
 * received, one per delivery), none dead, and no attempt counted on any message. Answers the number
 * of publishes the relay tried during the outage (its probes), for the test to show the outage was
 * long relative to the backoff.
 */
export async function publishAcrossOutage(
  database: Pick<TestDatabase, 'db' | 'sql'>,
  options: { publisher: Publisher; outage: Outage; consume(): Promise<string[]>; lastError: RegExp },
): Promise<{ probes: number }> {
  const { db, sql } = database;
  let publishes = 0;
  const counting: Publisher = {
    kind: options.publisher.kind,
    pipelined: options.publisher.pipelined,
    publish(message, signal) {
      publishes += 1;
      return options.publisher.publish(message, signal);
    },
  };
  const test = buildTestRelay(db, { publisher: counting, settings: OUTAGE_SETTINGS });
  const drainNow = () => {
    test.setNow(Date.now());
    return test.relay.drain();
  };

  const before = await insertMessages(sql, 50);
  expect(await drainNow()).toMatchObject({ published: 50 });
  const during = await insertMessages(sql, 200);
  const ids = [...before, ...during];

  await options.outage.cut();
  const publishedBefore = publishes;
  const startedAt = Date.now();
  const lasting = () => {
    const elapsed = Date.now() - startedAt;
    return elapsed < OUTAGE_LIMIT_MS && (elapsed < OUTAGE_MS || publishes - publishedBefore < OUTAGE_PROBES);
  };
  while (lasting()) {
    const summary = await drainNow();
    expect(summary).toMatchObject({ published: 0, retried: 0, dead: 0 });
    await pause(2);
  }
  const probes = publishes - publishedBefore;
  const waiting = await outboxRows(sql, during);
  for (const row of waiting) {
    expect(row).toMatchObject({ status: 'pending', attempts: 0 });
    if (row.last_error !== null) expect(row.last_error).toMatch(options.lastError);
  }

  await options.outage.restore();
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    await drainNow();
    const rows = await outboxRows(sql, ids);
    if (rows.every((row) => row.status === 'published')) break;
    if (Date.now() > deadline) throw new Error('the relay did not publish everything after the target came back');
    await pause(20);
  }

  const rows = await outboxRows(sql, ids);
  for (const row of rows) expect(row).toMatchObject({ status: 'published', attempts: 0 });
  const received = await options.consume();
  // Exactly once: as many deliveries as messages, every key among them.
  expect(received).toHaveLength(ids.length);
  expect(new Set(received)).toEqual(new Set(rows.map((row) => row.deduplication_key)));
  return { probes };
}

/**
 * A publish that times out, through a proxy the test stalls (`cuttableLink`'s `stall`): on a live
 * connection (one message published first) it counts an attempt, the broker had the message and did
 * not answer for it; on a connection still opening it counts none, nobody could have answered.
 * `publisherThrough` builds the broker's publisher for the proxy's port. Registers two tests.
 */
export function timeoutsCountOnlyWhenConnected(
  database: Pick<TestDatabase, 'db' | 'sql'>,
  brokerPort: number,
  publisherThrough: (port: number) => Publisher,
): void {
  describe('a publish that times out (through a proxy the test stalls)', () => {
    // The messages left pending here are not the business of the file's other tests.
    afterEach(() => database.sql`delete from outbox_messages`);
    it('on a live connection counts an attempt: the broker had the message and did not answer', async () => {
      const link = await cuttableLink(brokerPort);
      const publisher = publisherThrough(link.port);
      expect((await drainOneMessage(database, publisher)).row).toMatchObject({ status: 'published' });
      link.stall();
      const { summary, row } = await drainOneMessage(database, publisher);
      // Dropped now: a stalled connection would hold the publisher's close at the end of the file.
      await link.cut();
      expect(summary).toMatchObject({ retried: 1, unavailable: 0 });
      expect(row).toMatchObject({ status: 'pending', attempts: 1, last_error: 'timeout' });
    });

    it('while the connection is still opening counts none: nobody could have answered', async () => {
      const link = await cuttableLink(brokerPort);
      link.stall();
      const { summary, row } = await drainOneMessage(database, publisherThrough(link.port));
      await link.cut();
      // The row is the new message's; the pass may also have held a message an earlier test left due.
      expect(summary).toMatchObject({ published: 0, retried: 0, dead: 0 });
      expect(row).toMatchObject({ status: 'pending', attempts: 0 });
    });
  });
}
