// `npm run bench:outbox`'s isolation scenario (issue 27): the healthy destination's throughput alone,
// then beside a destination that is down, (a) refusing connections and (b) never answering (each
// publish runs into OUTBOX_TIMEOUT_MS). Both destinations' relays run as the Node process runs them:
// the down one polled again and again while the healthy one drains its backlog, each with its own
// publisher, claim, concurrency (the runner's split evenly, in all three runs) and breaker. Prints the
// healthy destination's messages/s in each and the ratio to running alone (target >= 0.9).
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:net';
import postgres from 'postgres';
import type { Config } from '../../src/config.ts';
import type { Database } from '../../src/db/client.ts';
import { createLogger } from '../../src/lib/logger.ts';
import { isolationOf } from '../../src/ops/maintenance/drainers.ts';
import { DEFAULT_SETTINGS } from '../../src/outbox/destinations.ts';
import { httpPublisher } from '../../src/outbox/publishers/publisher.ts';
import { createRelay, DEFAULT_CONCURRENCY, type Relay, relaySettings } from '../../src/outbox/relay.ts';
import { undiciPost } from '../../src/outbox/undici-post.ts';
import { startSinkProcess } from './sink.ts';
import { round } from './stats.ts';
import { targetMark } from './targets.ts';

export const ISOLATION_TARGET_RATIO = 0.9;
const HEALTHY = 'healthy';
const DOWN = 'down';
/** How often the down destination's relay is drained again, as the Node process's schedule would. */
const DOWN_POLL_MS = 20;

export interface IsolationFigures {
  aloneMessagesPerSecond: number;
  refusingMessagesPerSecond: number;
  timingOutMessagesPerSecond: number;
  refusingRatio: number;
  timingOutRatio: number;
  /** Publishes the down destination's relay started in each run (the rest were held back). */
  downAttempts: { refusing: number; timingOut: number };
}

async function seedDestination(url: string, destination: string, count: number): Promise<void> {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    await sql`delete from outbox_messages where destination = ${destination}`;
    await sql`delete from outbox_destinations where name = ${destination}`;
    await sql`
      insert into outbox_messages (topic, destination, deduplication_key, payload, created_at, available_at)
      select 'subscription.changed', ${destination}, 'acme:evt_iso_' || n || ':subscription.changed@' || ${destination},
        jsonb_build_object('external_id', 'sub_bench_' || n, 'status', 'active'),
        now() - interval '1 minute' + n * interval '1 microsecond',
        now() - interval '1 minute' + n * interval '1 microsecond'
      from generate_series(1, ${count}::int) as n`;
    await sql`vacuum analyze outbox_messages`;
  } finally {
    await sql.end({ timeout: 5 });
  }
}

/** A TCP server that accepts connections and never answers: every publish to it times out. */
async function silentServer(): Promise<{ url: string; server: Server }> {
  const server = createServer(() => {});
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('the silent server has no port');
  return { url: `http://127.0.0.1:${address.port}/outbox`, server };
}

/** A port that was free a moment ago: connections to it are refused. */
async function refusedUrl(): Promise<string> {
  const { url, server } = await silentServer();
  await new Promise((resolve) => server.close(resolve));
  return url;
}

/** A relay of `destination`, and how many publishes it has started (the breaker's effect, counted). */
function relayOf(
  db: Database,
  config: Config,
  destination: string,
  url: string,
  concurrency: number,
): { relay: Relay; publishes: () => number } {
  const clock = () => Date.now();
  const publisher = httpPublisher({ url, clock, post: undiciPost });
  let publishes = 0;
  const relay = createRelay({
    db,
    destination,
    publisher: {
      ...publisher,
      publish: (message, signal) => {
        publishes += 1;
        return publisher.publish(message, signal);
      },
    },
    clock,
    newId: () => `bench-${destination}-${randomUUID()}`,
    random: Math.random,
    // The down destination's warnings are the expected story here, not news.
    logger: createLogger({ level: 'error', now: () => new Date(), write: (line) => console.error(line) }),
    settings: relaySettings(config, { concurrency, budgetMs: 600_000 }),
    isolation: isolationOf(DEFAULT_SETTINGS),
  });
  return { relay, publishes: () => publishes };
}

/** The healthy destination's messages/s over one drain of its backlog, with `down` polled meanwhile. */
async function healthyRate(
  dbUrl: string,
  db: Database,
  config: Config,
  sinkUrl: string,
  messages: number,
  down: { url: string } | undefined,
): Promise<{ messagesPerSecond: number; downAttempts: number }> {
  const concurrency = Math.max(1, Math.floor(DEFAULT_CONCURRENCY / 2));
  await seedDestination(dbUrl, HEALTHY, messages);
  await seedDestination(dbUrl, DOWN, down === undefined ? 0 : messages);
  const healthy = relayOf(db, config, HEALTHY, sinkUrl, concurrency).relay;
  const downRelay = down === undefined ? undefined : relayOf(db, config, DOWN, down.url, concurrency);
  let healthyDone = false;
  const polling = (async () => {
    while (downRelay !== undefined && !healthyDone) {
      await downRelay.relay.drain();
      await new Promise((resolve) => setTimeout(resolve, DOWN_POLL_MS));
    }
  })();
  const started = performance.now();
  const summary = await healthy.drain();
  const wallMs = performance.now() - started;
  healthyDone = true;
  await polling;
  if (summary.published !== messages) throw new Error(`healthy: ${summary.published} of ${messages} published`);
  return { messagesPerSecond: summary.published / (wallMs / 1000), downAttempts: downRelay?.publishes() ?? 0 };
}

export async function measureIsolation(
  dbUrl: string,
  db: Database,
  config: Config,
  messages: number,
): Promise<IsolationFigures> {
  const sink = await startSinkProcess();
  const silent = await silentServer();
  try {
    console.log(`\n[isolation] ${messages} messages to ${HEALTHY}: alone, beside a refusing and a silent destination`);
    // A first run warms the process and the table up and is not counted; "alone" is measured before
    // and after the two others and averaged, so neither gains from coming later.
    await healthyRate(dbUrl, db, config, sink.url, messages, undefined);
    const before = await healthyRate(dbUrl, db, config, sink.url, messages, undefined);
    const refusing = await healthyRate(dbUrl, db, config, sink.url, messages, { url: await refusedUrl() });
    const timingOut = await healthyRate(dbUrl, db, config, sink.url, messages, { url: silent.url });
    const after = await healthyRate(dbUrl, db, config, sink.url, messages, undefined);
    const alone = { messagesPerSecond: (before.messagesPerSecond + after.messagesPerSecond) / 2 };
    console.log(
      `[isolation] alone before ${round(before.messagesPerSecond, 0)} msg/s, after ${round(after.messagesPerSecond, 0)} msg/s`,
    );
    return {
      aloneMessagesPerSecond: alone.messagesPerSecond,
      refusingMessagesPerSecond: refusing.messagesPerSecond,
      timingOutMessagesPerSecond: timingOut.messagesPerSecond,
      refusingRatio: refusing.messagesPerSecond / alone.messagesPerSecond,
      timingOutRatio: timingOut.messagesPerSecond / alone.messagesPerSecond,
      downAttempts: { refusing: refusing.downAttempts, timingOut: timingOut.downAttempts },
    };
  } finally {
    silent.server.close();
    await sink.stop();
  }
}

/** The scenario's rows for the bench's table, and its missed targets. */
export function isolationReport(figures: IsolationFigures, timeoutMs: number) {
  const rate = (value: number) => `${round(value, 0)} msg/s`;
  const rows = [
    {
      label: 'isolation: healthy alone',
      value: rate(figures.aloneMessagesPerSecond),
      note: 'mean of a run before and one after the others; half the default concurrency',
    },
    {
      label: 'isolation: beside refusing',
      value: rate(figures.refusingMessagesPerSecond),
      note: `ratio ${round(figures.refusingRatio, 3)} (target >= ${ISOLATION_TARGET_RATIO}: ${targetMark(figures.refusingRatio >= ISOLATION_TARGET_RATIO)}); ${figures.downAttempts.refusing} publishes to the down one`,
    },
    {
      label: 'isolation: beside timing out',
      value: rate(figures.timingOutMessagesPerSecond),
      note: `ratio ${round(figures.timingOutRatio, 3)} (${targetMark(figures.timingOutRatio >= ISOLATION_TARGET_RATIO)}); OUTBOX_TIMEOUT_MS ${timeoutMs}; ${figures.downAttempts.timingOut} publishes to the down one`,
    },
  ];
  const misses = [
    ...(figures.refusingRatio < ISOLATION_TARGET_RATIO
      ? [`isolation: ratio beside a refusing destination ${round(figures.refusingRatio, 3)}`]
      : []),
    ...(figures.timingOutRatio < ISOLATION_TARGET_RATIO
      ? [`isolation: ratio beside a silent destination ${round(figures.timingOutRatio, 3)}`]
      : []),
  ];
  return { rows, misses };
}
