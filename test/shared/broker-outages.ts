// A broker stopped in the middle of a drain, for the publisher tests that run a broker of their own:
// the real publisher wrapped so that the broker process is killed just before the n-th publish
// starts (publishes already sent may or may not have been acknowledged), and the passes that follow
// until the relay, on its own, has published everything once the broker is back.
import type postgres from 'postgres';
import { expect } from 'vitest';
import type { Publisher } from '../../src/outbox/publishers.ts';
import type { OwnBroker } from '../helpers/brokers.ts';
import { outboxRows, type TestRelay } from '../helpers/outbox.ts';

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
