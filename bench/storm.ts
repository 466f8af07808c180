// `npm run bench:storm`: a duplicate storm against the synchronous intake. 10,000 deliveries over 500
// event ids (each sent 20 times, each copy signed afresh as a sender's retry is, shuffled) at 64
// connections: events/s overall, the latency of the
// duplicate path and of first deliveries, and a check in SQL that each id was applied exactly once.
// Then the replay phase (bench/lib/replay-flood.ts): one captured 1,000-event LINE
// delivery replayed 6.4 times a second while genuine deliveries arrive 6 a second, against a service
// with its delivery log on: genuine p50/p99 quiet and under the replay (target: within 1.5x), and
// whether each genuine delivery kept its delivery-log row.
//
// Environment: STORM_IDS (500), STORM_REPEATS (20), STORM_CONCURRENCY (64), STORM_REPLAY_SECONDS
// (20 each phase; 0 skips it), STORM_REPLAY_EVENTS (1000), STORM_REPLAY_PER_SECOND (6.4),
// STORM_GENUINE_PER_SECOND (6), STORM_REPLAY_CPU_PROF (a folder: the replay's service writes a V8
// CPU profile there), STORM_REPLAY_NODE_ARGS (more node flags for the replay's service, space-separated,
// e.g. --trace-gc), BENCH_DATABASE_URL.
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
import { measureReplayFlood, type ReplayFloodFigures } from './lib/replay-flood.ts';
import { runContext, writeResult } from './lib/results.ts';
import { intakeServiceEnv, type RunningService, startService } from './lib/service.ts';
import { formatTable, percentile, round } from './lib/stats.ts';
import { targetMark } from './lib/targets.ts';

const ids = Number(process.env.STORM_IDS ?? 500);
const repeats = Number(process.env.STORM_REPEATS ?? 20);
const concurrency = Number(process.env.STORM_CONCURRENCY ?? 64);
const FIRST = '{"received":true}';
const DUPLICATE = '{"received":true,"duplicate":true}';
const replaySeconds = Number(process.env.STORM_REPLAY_SECONDS ?? 20);
const replayEvents = Number(process.env.STORM_REPLAY_EVENTS ?? 1000);
const replayPerSecond = Number(process.env.STORM_REPLAY_PER_SECOND ?? 6.4);
const genuinePerSecond = Number(process.env.STORM_GENUINE_PER_SECOND ?? 6);
/** Genuine latency under the replay, as a multiple of quiet. */
const REPLAY_TARGET_RATIO = 1.5;

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
    // Each copy signed afresh, a second apart, as a sender's retry is: a byte-identical copy would be
    // answered from the memory of deliveries answered in full (decision 0033), not by the database's
    // duplicate path this phase measures.
    const requests: PreparedRequest[] = shuffled(
      Array.from({ length: ids }, (_, index) =>
        Array.from({ length: repeats }, (_, copy) =>
          signedAcmeEvent({ secret, runId, index, nowSeconds: nowSeconds - copy }),
        ),
      ).flat(),
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
    await pool.close();
    pool = undefined;
    await service.stop();
    service = undefined;
    let replay: ReplayFloodFigures | undefined;
    if (replaySeconds > 0) {
      replay = await measureReplayFlood({
        databaseUrl: database.url,
        workDir: tmp,
        seconds: replaySeconds,
        events: replayEvents,
        replayPerSecond,
        genuinePerSecond,
        cpuProfileDir: process.env.STORM_REPLAY_CPU_PROF,
        nodeArgs: (process.env.STORM_REPLAY_NODE_ARGS ?? '').split(' ').filter(Boolean),
      });
      if (replay.genuineLogged !== replay.replay.sent) {
        failures.push(`${replay.replay.sent - replay.genuineLogged} genuine deliveries without a delivery-log row`);
      }
      const met = Math.max(replay.p50Ratio, replay.p99Ratio) <= REPLAY_TARGET_RATIO;
      console.log(
        `\n${formatTable(
          `one ${replay.events}-event LINE delivery replayed ${replay.replayPerSecond}/s, genuine ${replay.genuinePerSecond}/s, ${replay.seconds} s each`,
          [
            { label: 'genuine quiet p50 / p99 (ms)', value: `${replay.quiet.p50Ms} / ${replay.quiet.p99Ms}` },
            { label: 'genuine under replay p50 / p99 (ms)', value: `${replay.replay.p50Ms} / ${replay.replay.p99Ms}` },
            {
              label: 'ratio p50 / p99',
              value: `${replay.p50Ratio} / ${replay.p99Ratio}`,
              note: `${targetMark(met)} (<= ${REPLAY_TARGET_RATIO})`,
            },
            { label: 'genuine answered 200', value: `${replay.replay.answered200} / ${replay.replay.sent}` },
            { label: 'genuine with a log row', value: `${replay.genuineLogged} / ${replay.replay.sent}` },
            {
              label: 'replays answered',
              value: Object.entries(replay.replays.statuses)
                .map(([status, count]) => `${count} x ${status}`)
                .join(', '),
            },
            { label: 'replay p50 (ms)', value: replay.replays.p50Ms },
            {
              label: 'service full-GC pauses quiet / under replay',
              value: `${replay.fullCollections.quiet.count} (${replay.fullCollections.quiet.pauseMs} ms) / ${replay.fullCollections.replay.count} (${replay.fullCollections.replay.pauseMs} ms)`,
              note: 'count (total)',
            },
            {
              label: 'log during replay',
              value: `${replay.logLinesDuringReplay} lines, ${round(replay.logBytesDuringReplay / 1024, 1)} KiB`,
            },
          ],
        )}\n`,
      );
      console.log(`log lines of the replay phase by message: ${JSON.stringify(replay.logMessages)}`);
    }
    const file = writeResult('storm', startedAt, {
      ...runContext(),
      ok: failures.length === 0,
      failures,
      figures,
      replay,
    });
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
