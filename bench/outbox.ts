// `npm run bench:outbox`: relay throughput. 20,000 pending messages on a fresh database are drained
// in one `drain` to a local sink (another process) that answers 200 at once. Prints messages/s and
// the relay's CPU per message (this process: the relay, its fetch and its database client), checks
// in SQL that every message is published with no failed attempt, and that the sink got each once.
//
// Environment: BENCH_MESSAGES (20000), BENCH_BATCH (the relay's default batch size),
// BENCH_CONCURRENCY (the relay's default), BENCH_TRANSPORT (`undici`, as the Node entry runs it, or
// `fetch`, the portable one), BENCH_DATABASE_URL (a server to create a throw-away database on; else
// embedded PostgreSQL).
import { randomUUID } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { parseConfig } from '../src/config.ts';
import { connectDatabase, type DatabaseHandle } from '../src/db/client.ts';
import { createLogger } from '../src/lib/logger.ts';
import { fetchPost, httpPublisher } from '../src/outbox/publishers.ts';
import {
  createRelay,
  DEFAULT_BATCH_SIZE,
  DEFAULT_CONCURRENCY,
  type DrainSummary,
  relaySettings,
} from '../src/outbox/relay.ts';
import { undiciPost } from '../src/outbox/undici-post.ts';
import { type BenchDatabase, freshDatabase } from './lib/database.ts';
import { intFromEnv } from './lib/env.ts';
import { machineBusyShare, machineCpu, processTreeCpuTicks, ticksToMs } from './lib/proc.ts';
import { runContext, writeResult } from './lib/results.ts';
import { type SinkProcess, startSinkProcess } from './lib/sink.ts';
import { formatTable, round } from './lib/stats.ts';

const TARGET_MESSAGES_PER_SECOND = 3000;

/** Pending messages shaped like the ones the acme handlers enqueue, due now, oldest first. */
async function seed(url: string, count: number): Promise<void> {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    await sql`
      insert into outbox_messages (topic, deduplication_key, payload, created_at, available_at)
      select 'subscription.changed', 'acme:evt_bench_' || n || ':subscription.changed',
        jsonb_build_object('external_id', 'sub_bench_' || n, 'status', 'active', 'provider_version', 1,
          'updated_at', '2026-01-01T00:00:00.000Z'),
        now() - interval '1 minute' + n * interval '1 microsecond',
        now() - interval '1 minute' + n * interval '1 microsecond'
      from generate_series(1, ${count}::int) as n`;
    await sql`analyze outbox_messages`;
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

async function main(): Promise<boolean> {
  const messages = intFromEnv('BENCH_MESSAGES', 20_000, 1);
  const batchSize = intFromEnv('BENCH_BATCH', DEFAULT_BATCH_SIZE, 1);
  const concurrency = intFromEnv('BENCH_CONCURRENCY', DEFAULT_CONCURRENCY, 1);
  const transport = process.env.BENCH_TRANSPORT || 'undici';
  if (transport !== 'undici' && transport !== 'fetch') throw new Error('BENCH_TRANSPORT must be undici or fetch');
  const startedAt = new Date();
  const tmp = mkdtempSync(join(tmpdir(), 'webhook-inbox-bench-outbox-'));
  // As root, embedded PostgreSQL runs as the `postgres` user, which must be able to reach its data dir.
  chmodSync(tmp, 0o755);

  let database: BenchDatabase | undefined;
  let handle: DatabaseHandle | undefined;
  let sink: SinkProcess | undefined;
  try {
    console.log(
      `starting ${process.env.BENCH_DATABASE_URL ? 'a database on BENCH_DATABASE_URL' : 'embedded PostgreSQL'}`,
    );
    database = await freshDatabase(join(tmp, 'db'));
    sink = await startSinkProcess();
    console.log(`seeding ${messages} pending messages`);
    await seed(database.url, messages);

    // The relay as production builds it: contract defaults, an HTTP publisher, warnings to stderr.
    const config = parseConfig({ OUTBOX_TARGET_URL: sink.url });
    handle = connectDatabase({ url: database.url, maxConnections: 4, statementTimeoutMs: 30_000 });
    const clock = () => Date.now();
    const logger = createLogger({ level: 'warn', now: () => new Date(), write: (line) => console.error(line) });
    const relay = createRelay({
      db: handle.db,
      publisher: httpPublisher({ url: sink.url, clock, post: transport === 'undici' ? undiciPost : fetchPost }),
      clock,
      newId: () => `bench-${randomUUID()}`,
      random: Math.random,
      logger,
      settings: relaySettings(config, { batchSize, concurrency, budgetMs: 600_000 }),
    });

    console.log(`draining (batch ${batchSize}, concurrency ${concurrency}, ${transport} transport)`);
    const dbTicksBefore =
      database.postmasterPid === undefined ? undefined : processTreeCpuTicks(database.postmasterPid);
    const machineBefore = machineCpu();
    const cpuBefore = process.cpuUsage();
    const wallStarted = performance.now();
    const summary: DrainSummary = await relay.drain();
    const wallMs = performance.now() - wallStarted;
    const cpu = process.cpuUsage(cpuBefore);
    const busy = machineBusyShare(machineBefore, machineCpu());
    const dbMs =
      dbTicksBefore === undefined || database.postmasterPid === undefined
        ? undefined
        : ticksToMs(processTreeCpuTicks(database.postmasterPid) - dbTicksBefore);

    const stored = await outcome(database.url);
    const received = await sink.received();
    const relayCpuMs = (cpu.user + cpu.system) / 1000;
    const rate = summary.published / (wallMs / 1000);
    const failures: string[] = [];
    if (stored.published !== messages) failures.push(`${stored.published} of ${messages} published`);
    if (stored.failed !== 0) failures.push(`${stored.failed} message(s) with a failed attempt`);
    if (received !== messages) failures.push(`the sink received ${received} requests for ${messages} messages`);
    if (rate < TARGET_MESSAGES_PER_SECOND) failures.push(`${round(rate, 0)} messages/s is below the target`);

    const rows = [
      { label: 'messages', value: messages },
      {
        label: 'batches',
        value: summary.batches,
        note: `batch ${batchSize}, concurrency ${concurrency}, ${transport} transport`,
      },
      { label: 'wall time', value: `${round(wallMs, 0)} ms` },
      { label: 'throughput', value: `${round(rate, 0)} msg/s`, note: `target >= ${TARGET_MESSAGES_PER_SECOND}` },
      {
        label: 'relay CPU',
        value: `${round(relayCpuMs / messages, 3)} ms/msg`,
        note: 'this process: relay, HTTP client, db client',
      },
      ...(dbMs === undefined
        ? []
        : [{ label: 'database CPU', value: `${round(dbMs / messages, 3)} ms/msg`, note: 'embedded server' }]),
      { label: 'machine busy', value: `${round(busy * 100, 0)} %`, note: 'all cores, sink and database included' },
      { label: 'published', value: stored.published, note: `sink received ${received}` },
    ];
    console.log(`\n${formatTable('outbox relay: one drain to a local sink answering 200', rows)}`);
    const file = writeResult('outbox', startedAt, {
      context: runContext(),
      settings: { messages, batchSize, concurrency, transport, database: database.kind },
      summary,
      wallMs,
      messagesPerSecond: rate,
      relayCpuMsPerMessage: relayCpuMs / messages,
      databaseCpuMsPerMessage: dbMs === undefined ? null : dbMs / messages,
      machineBusyShare: busy,
      stored,
      sinkReceived: received,
      failures,
    });
    console.log(`\nresult written to ${file}`);
    for (const failure of failures) console.error(`FAILED: ${failure}`);
    return failures.length === 0;
  } finally {
    await handle?.close();
    await sink?.stop();
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
