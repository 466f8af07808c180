// `npm run bench:storm`: a duplicate storm against the synchronous intake. 10,000 deliveries over 500
// event ids (each sent 20 times, shuffled) at 64 connections: events/s overall, the latency of the
// duplicate path and of first deliveries, and a check in SQL that each id was applied exactly once.
//
// Environment: STORM_IDS (500), STORM_REPEATS (20), STORM_CONCURRENCY (64), BENCH_DATABASE_URL.
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { Pool } from 'undici';
import { signedAcmeEvent } from './lib/acme.ts';
import { type BenchDatabase, freshDatabase } from './lib/database.ts';
import { exitWhenDone } from './lib/exit.ts';
import { type PreparedRequest, runLoad } from './lib/load.ts';
import { processCpuTicks, ticksToMs } from './lib/proc.ts';
import { runContext, writeResult } from './lib/results.ts';
import { intakeServiceEnv, type RunningService, startService } from './lib/service.ts';
import { formatTable, percentile, round } from './lib/stats.ts';

const ids = Number(process.env.STORM_IDS ?? 500);
const repeats = Number(process.env.STORM_REPEATS ?? 20);
const concurrency = Number(process.env.STORM_CONCURRENCY ?? 64);
const FIRST = '{"received":true}';
const DUPLICATE = '{"received":true,"duplicate":true}';

/** A fixed shuffle (a linear congruential sequence), so runs are comparable. */
function shuffled<T>(items: T[]): T[] {
  let seed = 42;
  for (let i = items.length - 1; i > 0; i--) {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    const j = seed % (i + 1);
    [items[i], items[j]] = [items[j] as T, items[i] as T];
  }
  return items;
}

async function main(): Promise<boolean> {
  const startedAt = new Date();
  const tmp = mkdtempSync(join(tmpdir(), 'webhook-inbox-storm-'));
  chmodSync(tmp, 0o755);
  let database: BenchDatabase | undefined;
  let service: RunningService | undefined;
  let pool: Pool | undefined;
  const failures: string[] = [];
  try {
    database = await freshDatabase(join(tmp, 'db'));
    const secret = randomBytes(32).toString('hex');
    service = await startService({
      env: intakeServiceEnv(database.url, secret),
      stdoutFile: join(tmp, 'service.stdout.log'),
      stderrFile: join(tmp, 'service.stderr.log'),
    });
    const runId = randomBytes(4).toString('hex');
    const nowSeconds = Math.floor(Date.now() / 1000);
    const unique = Array.from({ length: ids }, (_, index) => signedAcmeEvent({ secret, runId, index, nowSeconds }));
    const requests: PreparedRequest[] = shuffled(
      unique.flatMap((request) => Array<PreparedRequest>(repeats).fill(request)),
    );

    pool = new Pool(service.origin, { connections: concurrency, pipelining: 1 });
    const latencies = { first: [] as number[], duplicate: [] as number[] };
    const cpuBefore = processCpuTicks(service.pid);
    const result = await runLoad({
      pool,
      requests,
      concurrency,
      accept: (status, body) => status === 200 && (body === FIRST || body === DUPLICATE),
      onAnswer: (latencyMs, _status, body) => {
        if (body === FIRST) latencies.first.push(latencyMs);
        else if (body === DUPLICATE) latencies.duplicate.push(latencyMs);
      },
    });
    const cpuAfter = processCpuTicks(service.pid);
    const sql = postgres(database.url, { max: 1, onnotice: () => {} });
    const [stored] = await sql<{ completed: number; subscriptions: number }[]>`
      select (select count(*)::int from webhook_events where status = 'completed') as completed,
             (select count(*)::int from subscriptions) as subscriptions`;
    await sql.end();

    if (result.rejections.length > 0) failures.push(`${result.rejections.length} unexpected answers`);
    if (latencies.first.length !== ids) failures.push(`${latencies.first.length} first deliveries for ${ids} ids`);
    if (stored?.completed !== ids || stored.subscriptions !== ids) failures.push(`stored ${JSON.stringify(stored)}`);

    const perSecond = result.sent / (result.elapsedMs / 1000);
    const duplicates = Float64Array.from(latencies.duplicate);
    const firsts = Float64Array.from(latencies.first);
    const figures = {
      deliveries: result.sent,
      ids,
      eventsPerSecond: round(perSecond, 1),
      duplicateP50Ms: round(percentile(duplicates, 50)),
      duplicateP99Ms: round(percentile(duplicates, 99)),
      firstP50Ms: round(percentile(firsts, 50)),
      firstP99Ms: round(percentile(firsts, 99)),
      firstDeliveries: latencies.first.length,
      duplicateAnswers: latencies.duplicate.length,
      serviceCpuMsPerDelivery: round(
        ticksToMs(cpuAfter.user + cpuAfter.system - cpuBefore.user - cpuBefore.system) / result.sent,
        3,
      ),
      completedRows: stored?.completed,
    };
    console.log(
      `\n${formatTable(`duplicate storm (${result.sent} deliveries over ${ids} ids, ${concurrency} connections)`, [
        { label: 'deliveries/s', value: figures.eventsPerSecond },
        { label: 'duplicate path p50 / p99 (ms)', value: `${figures.duplicateP50Ms} / ${figures.duplicateP99Ms}` },
        { label: 'first delivery p50 / p99 (ms)', value: `${figures.firstP50Ms} / ${figures.firstP99Ms}` },
        { label: 'service CPU ms/delivery', value: figures.serviceCpuMsPerDelivery },
        { label: 'applied once each', value: `${figures.firstDeliveries} / ${ids}`, note: 'must match' },
      ])}\n`,
    );
    const file = writeResult('storm', startedAt, { ...runContext(), ok: failures.length === 0, failures, figures });
    console.log(`written to ${file}`);
  } catch (error) {
    failures.push(error instanceof Error ? error.message : String(error));
  } finally {
    await pool?.close();
    await service?.stop();
    await database?.dispose();
    rmSync(tmp, { recursive: true, force: true });
  }
  for (const failure of failures) console.error(`FAILED: ${failure}`);
  return failures.length === 0;
}

exitWhenDone(main);
