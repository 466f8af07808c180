// `npm run bench:outbox`: relay throughput per publisher. For each target in turn (the HTTP sink,
// NATS JetStream, RabbitMQ, Redis Streams), 20,000 pending messages on a fresh table are drained in
// one `drain`: to a local HTTP sink (another process) that answers 200 at once, or to a stream or an
// exchange and queue of the run's own on the machine's brokers. Prints messages/s and the relay's CPU
// per message (this process: the relay, its client library and its database client), checks in SQL
// that every message is published with no failed attempt, and that the target holds each once.
//
// Environment: BENCH_MESSAGES (20000), BENCH_PUBLISHERS (comma-separated, from http, nats, rabbitmq,
// redis; all by default), BENCH_BATCH (the relay's default batch size), BENCH_CONCURRENCY (the
// relay's default; the brokers' publishers pipeline a whole batch), BENCH_IN_FLIGHT (batches in
// flight, the relay's default), BENCH_TRANSPORT (`undici`, as
// the Node entry runs it, or `fetch`, the portable one), BENCH_DATABASE_URL (a server to create a
// throw-away database on; else embedded PostgreSQL). BENCH_ISOLATION (1; 0 skips the isolation
// scenario of bench/lib/outbox-isolation.ts), BENCH_ISOLATION_MESSAGES (10000),
// BENCH_ISOLATION_TIMEOUT_MS (the silent destination's OUTBOX_TIMEOUT_MS, 1000). A lost or repeated
// message fails the run; a missed speed target is printed MISSED and fails it only with
// BENCH_STRICT=1 (bench/lib/targets.ts).
import { randomUUID } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { parseConfig } from '../src/config.ts';
import { connectDatabase, type DatabaseHandle } from '../src/db/client.ts';
import { createLogger } from '../src/lib/logger.ts';
import { nodePublisherFor } from '../src/outbox/publishers/node.ts';
import { fetchPost, httpPublisher, type Publisher } from '../src/outbox/publishers/publisher.ts';
import {
  createRelay,
  DEFAULT_BATCH_SIZE,
  DEFAULT_BATCHES_IN_FLIGHT,
  DEFAULT_CONCURRENCY,
  type DrainSummary,
  relaySettings,
} from '../src/outbox/relay.ts';
import { undiciPost } from '../src/outbox/undici-post.ts';
import { BROKER_NAMES, type BrokerName, brokerTarget } from './lib/brokers.ts';
import { type BenchDatabase, freshDatabase } from './lib/database.ts';
import { intFromEnv } from './lib/env.ts';
import { isolationReport, measureIsolation } from './lib/outbox-isolation.ts';
import {
  commandCpuTicks,
  machineBusyShare,
  machineCpu,
  processCpuTicks,
  processTreeCpuTicks,
  ticksToMs,
} from './lib/proc.ts';
import { runContext, writeResult } from './lib/results.ts';
import { startSinkProcess } from './lib/sink.ts';
import { formatTable, round } from './lib/stats.ts';
import { targetMark, verdict } from './lib/targets.ts';

/** The HTTP publisher's floor; each broker must reach its own and never fall below HTTP's measured rate. */
const TARGET_MESSAGES_PER_SECOND: Readonly<Record<PublisherName, number>> = {
  http: 3000,
  nats: 10_000,
  rabbitmq: 10_000,
  redis: 10_000,
};

type PublisherName = 'http' | BrokerName;
const PUBLISHER_NAMES: readonly PublisherName[] = ['http', ...BROKER_NAMES];

/** Pending messages shaped like the ones the acme handlers enqueue, due now, oldest first. */
async function seed(url: string, count: number): Promise<void> {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    await sql`delete from outbox_messages`;
    await sql`
      insert into outbox_messages (topic, deduplication_key, payload, created_at, available_at)
      select 'subscription.changed', 'acme:evt_bench_' || n || ':subscription.changed',
        jsonb_build_object('external_id', 'sub_bench_' || n, 'status', 'active', 'provider_version', 1,
          'updated_at', '2026-01-01T00:00:00.000Z'),
        now() - interval '1 minute' + n * interval '1 microsecond',
        now() - interval '1 minute' + n * interval '1 microsecond'
      from generate_series(1, ${count}::int) as n`;
    await sql`vacuum analyze outbox_messages`;
  } finally {
    await sql.end({ timeout: 5 });
  }
}

async function outcome(url: string) {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    const [row] = await sql<{ published: number; pending: number; failed: number }[]>`
      select count(*) filter (where status = 'published')::int as published,
        count(*) filter (where status = 'pending')::int as pending,
        count(*) filter (where attempts > 0 or status = 'dead')::int as failed
      from outbox_messages`;
    if (row === undefined) throw new Error('the count query returned no row');
    return row;
  } finally {
    await sql.end({ timeout: 5 });
  }
}

/**
 * CPU ticks of each server process serving the bench database (a server shared with other work, so
 * not the whole server's): the relay's pooled connections, which live for the whole drain.
 */
async function backendCpuTicks(url: string): Promise<Map<number, number>> {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    const rows = await sql<{ pid: number }[]>`
      select pid from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()`;
    const ticks = new Map<number, number>();
    for (const { pid } of rows) {
      try {
        const cpu = processCpuTicks(pid);
        ticks.set(pid, cpu.user + cpu.system);
      } catch {
        // Another machine's server, or the backend ended meanwhile: nothing to count.
      }
    }
    return ticks;
  } finally {
    await sql.end({ timeout: 5 });
  }
}

/** The embedded server's whole process tree, or the bench database's backends on a shared server. */
async function databaseCpuTicks(database: BenchDatabase): Promise<Map<number, number>> {
  const pid = database.postmasterPid;
  return pid === undefined ? backendCpuTicks(database.url) : new Map([[pid, processTreeCpuTicks(pid)]]);
}

/** Ticks used between two readings; a backend that started in between counts from zero. */
function cpuTicksSince(before: ReadonlyMap<number, number>, after: ReadonlyMap<number, number>): number {
  let total = 0;
  for (const [pid, ticks] of after) total += ticks - (before.get(pid) ?? 0);
  return total;
}

/** What the publisher under test publishes to: built, counted and removed around its drain. */
interface Target {
  publisher: Publisher;
  /** CPU ticks the target's process has used so far (the sink, or the broker on this machine). */
  cpuTicks(): number;
  /** Messages the target got (the sink's requests, the stream's or queue's messages). */
  received(): Promise<number>;
  note: string;
  dispose(): Promise<void>;
}

async function openTarget(name: PublisherName, transport: 'undici' | 'fetch', timeoutMs: number): Promise<Target> {
  const clock = () => Date.now();
  const logger = createLogger({ level: 'warn', now: () => new Date(), write: (line) => console.error(line) });
  if (name === 'http') {
    const sink = await startSinkProcess();
    return {
      publisher: httpPublisher({ url: sink.url, clock, post: transport === 'undici' ? undiciPost : fetchPost }),
      received: () => sink.received(),
      cpuTicks: () => processTreeCpuTicks(sink.pid),
      note: `${transport} transport, sink in another process`,
      dispose: () => sink.stop(),
    };
  }
  const broker = await brokerTarget(name);
  // The publisher the Node entry would build for this URL.
  const publisher = nodePublisherFor(broker.url, { clock, logger, timeoutMs });
  return {
    publisher,
    received: () => broker.stored(),
    cpuTicks: () => commandCpuTicks(broker.command),
    note: 'one connection, whole batch pipelined',
    dispose: async () => {
      await publisher.close?.();
      await broker.dispose();
    },
  };
}

interface Figures {
  publisher: PublisherName;
  summary: DrainSummary;
  wallMs: number;
  messagesPerSecond: number;
  relayCpuMsPerMessage: number;
  databaseCpuMsPerMessage: number;
  targetCpuMsPerMessage: number;
  machineBusyShare: number;
  stored: Awaited<ReturnType<typeof outcome>>;
  received: number;
  note: string;
}

async function measure(
  name: PublisherName,
  database: BenchDatabase,
  handle: DatabaseHandle,
  settings: {
    messages: number;
    batchSize: number;
    concurrency: number;
    batchesInFlight: number;
    transport: 'undici' | 'fetch';
  },
): Promise<Figures> {
  const { messages, batchSize, concurrency, batchesInFlight } = settings;
  const config = parseConfig({});
  const target = await openTarget(name, settings.transport, config.OUTBOX_TIMEOUT_MS);
  try {
    console.log(`\n[${name}] seeding ${messages} pending messages`);
    await seed(database.url, messages);
    // The relay as production builds it: contract defaults, warnings to stderr.
    const relay = createRelay({
      db: handle.db,
      destination: 'default',
      publisher: target.publisher,
      clock: () => Date.now(),
      newId: () => `bench-${randomUUID()}`,
      random: Math.random,
      logger: createLogger({ level: 'warn', now: () => new Date(), write: (line) => console.error(line) }),
      settings: relaySettings(config, { batchSize, concurrency, batchesInFlight, budgetMs: 600_000 }),
    });

    console.log(`[${name}] draining (batch ${batchSize}, ${batchesInFlight} in flight, ${target.note})`);
    const dbTicksBefore = await databaseCpuTicks(database);
    const targetTicksBefore = target.cpuTicks();
    const machineBefore = machineCpu();
    const cpuBefore = process.cpuUsage();
    const wallStarted = performance.now();
    const summary = await relay.drain();
    const wallMs = performance.now() - wallStarted;
    const cpu = process.cpuUsage(cpuBefore);
    const busy = machineBusyShare(machineBefore, machineCpu());
    const targetMs = ticksToMs(target.cpuTicks() - targetTicksBefore);
    const dbMs = ticksToMs(cpuTicksSince(dbTicksBefore, await databaseCpuTicks(database)));
    return {
      publisher: name,
      summary,
      wallMs,
      messagesPerSecond: summary.published / (wallMs / 1000),
      relayCpuMsPerMessage: (cpu.user + cpu.system) / 1000 / messages,
      databaseCpuMsPerMessage: dbMs / messages,
      targetCpuMsPerMessage: targetMs / messages,
      machineBusyShare: busy,
      stored: await outcome(database.url),
      received: await target.received(),
      note: target.note,
    };
  } finally {
    await target.dispose();
  }
}

/** What went wrong (a lost or repeated message) and which speed targets were missed. */
function verdictOf(figures: Figures, messages: number, httpRate: number | undefined) {
  const { publisher, stored, received, messagesPerSecond: rate } = figures;
  const failures: string[] = [];
  const misses: string[] = [];
  const target = TARGET_MESSAGES_PER_SECOND[publisher];
  if (stored.published !== messages) failures.push(`${publisher}: ${stored.published} of ${messages} published`);
  if (stored.failed !== 0) failures.push(`${publisher}: ${stored.failed} message(s) with a failed attempt`);
  if (received !== messages) failures.push(`${publisher}: the target holds ${received} for ${messages} messages`);
  if (rate < target) misses.push(`${publisher}: ${round(rate, 0)} messages/s is below the target of ${target}`);
  if (publisher !== 'http' && httpRate !== undefined && rate < httpRate) {
    misses.push(`${publisher}: ${round(rate, 0)} messages/s is below the HTTP publisher's ${round(httpRate, 0)}`);
  }
  return { failures, misses };
}

function publishersFromEnv(): PublisherName[] {
  const raw = process.env.BENCH_PUBLISHERS;
  if (raw === undefined || raw === '') return [...PUBLISHER_NAMES];
  const names = raw.split(',').map((name) => name.trim());
  for (const name of names) {
    if (!(PUBLISHER_NAMES as readonly string[]).includes(name)) {
      throw new Error(`BENCH_PUBLISHERS: "${name}" is none of ${PUBLISHER_NAMES.join(', ')}`);
    }
  }
  return names as PublisherName[];
}

async function main(): Promise<boolean> {
  const messages = intFromEnv('BENCH_MESSAGES', 20_000, 1);
  const batchSize = intFromEnv('BENCH_BATCH', DEFAULT_BATCH_SIZE, 1);
  const concurrency = intFromEnv('BENCH_CONCURRENCY', DEFAULT_CONCURRENCY, 1);
  const batchesInFlight = intFromEnv('BENCH_IN_FLIGHT', DEFAULT_BATCHES_IN_FLIGHT, 1);
  const transport = process.env.BENCH_TRANSPORT || 'undici';
  if (transport !== 'undici' && transport !== 'fetch') throw new Error('BENCH_TRANSPORT must be undici or fetch');
  const publishers = publishersFromEnv();
  const startedAt = new Date();
  const tmp = mkdtempSync(join(tmpdir(), 'webhook-inbox-bench-outbox-'));
  // As root, embedded PostgreSQL runs as the `postgres` user, which must be able to reach its data dir.
  chmodSync(tmp, 0o755);

  let database: BenchDatabase | undefined;
  let handle: DatabaseHandle | undefined;
  try {
    console.log(
      `starting ${process.env.BENCH_DATABASE_URL ? 'a database on BENCH_DATABASE_URL' : 'embedded PostgreSQL'}`,
    );
    database = await freshDatabase(join(tmp, 'db'));
    handle = connectDatabase({ url: database.url, maxConnections: 4, statementTimeoutMs: 30_000 });
    const results: Figures[] = [];
    for (const name of publishers) {
      results.push(
        await measure(name, database, handle, { messages, batchSize, concurrency, batchesInFlight, transport }),
      );
    }

    const isolationTimeoutMs = intFromEnv('BENCH_ISOLATION_TIMEOUT_MS', 1000, 1);
    const isolation =
      process.env.BENCH_ISOLATION === '0'
        ? undefined
        : await measureIsolation(
            database.url,
            handle.db,
            parseConfig({ OUTBOX_TIMEOUT_MS: String(isolationTimeoutMs) }),
            intFromEnv('BENCH_ISOLATION_MESSAGES', 10_000, 1),
          );
    const isolated = isolation === undefined ? undefined : isolationReport(isolation, isolationTimeoutMs);

    const httpRate = results.find((figures) => figures.publisher === 'http')?.messagesPerSecond;
    const verdicts = results.map((figures) => verdictOf(figures, messages, httpRate));
    const failures = verdicts.flatMap((entry) => entry.failures);
    const misses = [...verdicts.flatMap((entry) => entry.misses), ...(isolated?.misses ?? [])];
    const databaseNote = database.kind === 'embedded' ? 'embedded server' : "the bench database's backends";
    const rows = results.flatMap((figures) => [
      {
        label: `${figures.publisher} throughput`,
        value: `${round(figures.messagesPerSecond, 0)} msg/s`,
        note: `target >= ${TARGET_MESSAGES_PER_SECOND[figures.publisher]}: ${targetMark(figures.messagesPerSecond >= TARGET_MESSAGES_PER_SECOND[figures.publisher])}; ${figures.note}`,
      },
      {
        label: `${figures.publisher} relay CPU`,
        value: `${round(figures.relayCpuMsPerMessage, 3)} ms/msg`,
        note: 'this process: relay, client library, db client',
      },
      {
        label: `${figures.publisher} database CPU`,
        value: `${round(figures.databaseCpuMsPerMessage, 3)} ms/msg`,
        note: databaseNote,
      },
      {
        label: `${figures.publisher} target CPU`,
        value: `${round(figures.targetCpuMsPerMessage, 3)} ms/msg`,
        note: figures.publisher === 'http' ? 'the sink process' : 'the broker process on this machine',
      },
      {
        label: `${figures.publisher} machine busy`,
        value: `${round(figures.machineBusyShare * 100, 0)} %`,
        note: `all cores, target and database included; ${figures.summary.batches} batches, ${round(figures.wallMs, 0)} ms`,
      },
    ]);
    console.log(`\n${formatTable(`outbox relay: one drain of ${messages} messages per publisher`, rows)}`);
    if (isolated !== undefined)
      console.log(`\n${formatTable('outbox isolation: the healthy destination', isolated.rows)}`);
    const http = results.find((figures) => figures.publisher === 'http');
    const file = writeResult('outbox', startedAt, {
      context: runContext(),
      settings: { messages, batchSize, concurrency, batchesInFlight, transport, publishers, database: database.kind },
      // The HTTP figures at the top level, where bench/all.ts reads them.
      ...(http === undefined
        ? {}
        : {
            summary: http.summary,
            wallMs: http.wallMs,
            messagesPerSecond: http.messagesPerSecond,
            relayCpuMsPerMessage: http.relayCpuMsPerMessage,
          }),
      publishers: Object.fromEntries(results.map((figures) => [figures.publisher, figures])),
      ...(isolation === undefined ? {} : { isolation }),
      failures,
      misses,
    });
    console.log(`\nresult written to ${file}`);
    return verdict(failures, misses);
  } finally {
    await handle?.close();
    await database?.dispose();
    rmSync(tmp, { recursive: true, force: true });
  }
}

main().then(
  (ok) => {
    process.exitCode = ok ? 0 : 1;
  },
  (error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  },
);
