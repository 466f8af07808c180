// `npx tsx bench/batches.ts`: what one delivery of a batch sender costs (HubSpot, LINE, SendGrid,
// GoCardless, Twilio Event Streams), each event stored in a row of its own. For each sender: the size
// of a realistic event, how many fit in MAX_BODY_BYTES (262144), and the time from the request to the
// answer (signature, parse, per-event validation, one insert statement, commit) for 1,000 events, or
// as many as fit, with no handler (rows `ignored`) and with a handler that runs one statement per
// event; both against HANDLER_DEADLINE_MS (5000). Signed with node:crypto, not the service's code.
// Checks every event was stored once. Environment: BENCH_DATABASE_URL (a fresh database on it, else
// an embedded server), BENCH_BATCH_EVENTS (1000 per delivery at most), BENCH_BATCH_RUNS (5).
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'drizzle-orm';
import { z } from 'zod';
import { createApp } from '../src/app.ts';
import { connectDatabase } from '../src/db/client.ts';
import { expectedMigration } from '../src/db/migrations.ts';
import { defineHandler, type HandlerMap } from '../src/domain/handlers.ts';
import { createLogger } from '../src/lib/logger.ts';
import { labelBounds, Metrics } from '../src/lib/metrics.ts';
import { defaultGaugeSources } from '../src/ops/routes/metrics.ts';
import { batchSenders, enabledBatchSenders } from './lib/batch-senders.ts';
import { freshDatabase } from './lib/database.ts';
import { intFromEnv } from './lib/env.ts';
import { runContext, writeResult } from './lib/results.ts';
import { round } from './lib/stats.ts';

const MAX_BODY_BYTES = 262_144;
const DEADLINE_MS = 5000;
const EVENTS = intFromEnv('BENCH_BATCH_EVENTS', 1000, 1);
const RUNS = intFromEnv('BENCH_BATCH_RUNS', 5, 1);

/** A handler that runs one statement per event in the delivery's transaction: the least a real one does. */
const oneStatement = defineHandler({
  schema: z.looseObject({}),
  apply: async ({ tx }) => {
    await tx.execute(sql`select 1`);
  },
});
const handled: HandlerMap = Object.fromEntries(
  batchSenders.map((sender) => [sender.name, { [sender.type]: oneStatement }]),
);

const startedAt = new Date();
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;

const database = await freshDatabase(mkdtempSync(join(tmpdir(), 'bench-batches-')));
const handle = connectDatabase({ url: database.url, maxConnections: 10, statementTimeoutMs: DEADLINE_MS });
try {
  const enabledSenders = await enabledBatchSenders();
  const appWith = (handlers: HandlerMap) =>
    createApp({
      db: handle.db,
      enabledSenders,
      handlers,
      metrics: new Metrics(labelBounds(enabledSenders.keys(), handlers)),
      gaugeSources: defaultGaugeSources,
      clock: () => Date.now(),
      newId: () => randomUUID(),
      logger: createLogger({ level: 'warn', now: () => new Date(), write: () => {} }),
      expectedMigration,
      groupCommit: { maxBatch: 64, lanes: 4 },
      config: {
        HANDLER_DEADLINE_MS: DEADLINE_MS,
        MAX_BODY_BYTES,
        WEBHOOK_TOLERANCE_SECONDS: 300,
        METRICS_TOKEN: undefined,
        PROCESSING_MODE: 'sync',
        INBOX_MAX_BACKLOG: 10_000,
        EVENT_RETENTION_DAYS: 30,
      },
    });
  const apps = { ignored: appWith({}), handled: appWith(handled) };
  const rows: Record<string, string | number>[] = [];
  for (const sender of batchSenders) {
    const now = Math.floor(Date.now() / 1000);
    const eventBytes = Buffer.byteLength(JSON.stringify(sender.event(now)));
    const envelope = Buffer.byteLength(sender.body([]));
    const fit = Math.floor((MAX_BODY_BYTES - envelope + 1) / (eventBytes + 1));
    const count = Math.min(EVENTS, fit);
    const timings: Record<keyof typeof apps, number[]> = { ignored: [], handled: [] };
    let bodyBytes = 0;
    for (const [mode, app] of Object.entries(apps) as [keyof typeof apps, (typeof apps)['ignored']][]) {
      for (let run = 0; run < RUNS; run += 1) {
        const at = Math.floor(Date.now() / 1000);
        const body = sender.body(Array.from({ length: count }, () => JSON.stringify(sender.event(at))));
        bodyBytes = Buffer.byteLength(body);
        const started = performance.now();
        const response = await app.request(`/webhooks/${sender.name}`, {
          method: 'POST',
          body,
          headers: { 'content-type': 'application/json', ...sender.headers(body, at) },
        });
        const text = await response.text();
        timings[mode].push(performance.now() - started);
        if (response.status !== 200) throw new Error(`${sender.name}: ${response.status} ${text}`);
      }
    }
    rows.push({
      sender: sender.name,
      event_bytes: eventBytes,
      fit_in_262144: fit,
      events_sent: count,
      body_bytes: bodyBytes,
      ms_no_handler: round(median(timings.ignored), 1),
      ms_one_statement_each: round(median(timings.handled), 1),
    });
  }
  // A Markdown table, as docs/benchmarks.md shows it.
  const columns = Object.keys(rows[0] ?? {});
  console.log(`batch deliveries, median of ${RUNS} runs each, database ${database.kind}\n`);
  console.log(`| ${columns.join(' | ')} |\n|${columns.map(() => ' --- |').join('')}`);
  for (const row of rows) console.log(`| ${columns.map((column) => row[column]).join(' | ')} |`);
  // Every event of every delivery stored once: a lost or merged one is a wrong answer, not a slow one.
  const stored = new Map(
    (
      await handle.db.execute<{ provider: string; n: number }>(
        sql`select provider, count(*)::int as n from webhook_events group by provider`,
      )
    ).map((row) => [row.provider, row.n]),
  );
  const lost = rows.filter((row) => stored.get(String(row.sender)) !== Number(row.events_sent) * RUNS * 2);
  if (lost.length > 0) throw new Error(`stored rows do not match the events sent: ${JSON.stringify([...stored])}`);
  const file = writeResult('batches', startedAt, { context: runContext(), runs: RUNS, database: database.kind, rows });
  console.log(`\nwritten to ${file}`);
} finally {
  await handle.close();
  await database.dispose();
}
