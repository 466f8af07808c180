// `npm run bench:scale`: the service at a month of stored traffic beside the same service on an empty
// database. Fills a database with N events over the last 30 days (bench/lib/scale-fill.ts), then, for
// the empty and the filled database in turn, one service (same build, same settings): intake
// events/s and p99 at 32 connections (wrk when installed; both services up, rounds alternating
// empty, filled, empty, filled…, so a drift of the shared machine falls on both sides; medians and
// each pair's ratio), every operator read of the admin API,
// the dashboard and /metrics, p50 and p99 (bench/lib/operator-reads.ts); on the filled one also a
// retention pass deleting about a day of rows under intake load (bench/lib/retention-pass.ts) and
// the bytes per stored event of every table. Prints one table against the targets docs/scaling.md gives and
// writes bench/results/scale-<time>.json. A benchmark: exits 0 whether targets are met or not,
// non-zero only when the bench itself fails.
//
// Environment: BENCH_DATABASE_URL (a server to create the databases on; else embedded PostgreSQL),
// BENCH_SCALE_EVENTS (10000000), BENCH_SCALE_REUSE=1 (take `bench_scale_<events>` as it is when a
// previous run filled it, and keep it), BENCH_SCALE_KEEP=1 (keep the filled database),
// BENCH_SCALE_FILL_JOBS (2 days filled at once), BENCH_SCALE_INTAKE_EVENTS (40000 timed a round, after
// BENCH_SCALE_INTAKE_WARMUP, 2000, warm-up), BENCH_SCALE_INTAKE_ROUNDS (3 a side, alternating), BENCH_CONCURRENCY (32), BENCH_SCALE_REQUESTS (30 timed per read, after
// BENCH_SCALE_WARMUP, by default 6 per connection of DB_POOL_MAX: a connection pays for its first runs of a
// statement, docs/scaling.md; the slowest warm-up request is reported beside p99), BENCH_SCALE_READ_BUDGET_MS (60000: a read slower than that stops after 5),
// BENCH_SCALE_PURGE_BUDGET_MS (60000, the schedule's), BENCH_LOG_LEVEL (info), DB_POOL_MAX (10),
// BENCH_LOADER=node (the bench's own load generator even when wrk is installed), BENCH_SCALE_FILL_ONLY=1
// (fill `bench_scale_<events>`, or find it filled, keep it and stop: nothing is measured).
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { signedAcmeEvent } from './lib/acme.ts';
import { intFromEnv } from './lib/env.ts';
import { exitWhenDone } from './lib/exit.ts';
import {
  operatorReads,
  ReadClient,
  type ReadSamples,
  type ReadTiming,
  readSamples,
  timeReads,
} from './lib/operator-reads.ts';
import { type RelationSize, relationSizes } from './lib/relation-sizes.ts';
import { runContext, writeResult } from './lib/results.ts';
import { planRetention, type RetentionPassResult, type RetentionPlan, retentionPass } from './lib/retention-pass.ts';
import { type FillMarker, type ScaleServer, scaleServer, throwAwayName } from './lib/scale-databases.ts';
import { FILL_DAYS, fillMonth } from './lib/scale-fill.ts';
import { buildOnce, intakeServiceEnv, type RunningService, startService, tail } from './lib/service.ts';
import { round } from './lib/stats.ts';
import { type IntakeRun, intakeLoad, wrkAvailable } from './lib/wrk.ts';

const TARGETS = {
  intakeRatio: 0.95,
  readP99Ms: 50,
  metricsP99Ms: 20,
  retentionP99Ratio: 2,
};
const SERVICE_APPLICATION = 'webhook-inbox';
const PAYLOAD_RETENTION_DAYS = 7;
const MIN_ANSWERS_DURING_PASS = 1000;

function settings() {
  const events = intFromEnv('BENCH_SCALE_EVENTS', 10_000_000, FILL_DAYS);
  return {
    events,
    reuse: process.env.BENCH_SCALE_REUSE === '1',
    fillOnly: process.env.BENCH_SCALE_FILL_ONLY === '1',
    keep:
      process.env.BENCH_SCALE_KEEP === '1' ||
      process.env.BENCH_SCALE_REUSE === '1' ||
      process.env.BENCH_SCALE_FILL_ONLY === '1',
    fillJobs: intFromEnv('BENCH_SCALE_FILL_JOBS', 2, 1),
    intakeEvents: intFromEnv('BENCH_SCALE_INTAKE_EVENTS', 40_000, 100),
    intakeWarmup: intFromEnv('BENCH_SCALE_INTAKE_WARMUP', 2000, 1),
    intakeRounds: intFromEnv('BENCH_SCALE_INTAKE_ROUNDS', 3, 1),
    concurrency: intFromEnv('BENCH_CONCURRENCY', 32, 1),
    requests: intFromEnv('BENCH_SCALE_REQUESTS', 30, 1),
    warmup: intFromEnv('BENCH_SCALE_WARMUP', 6 * intFromEnv('DB_POOL_MAX', 10, 1), 0),
    readBudgetMs: intFromEnv('BENCH_SCALE_READ_BUDGET_MS', 60_000, 1),
    purgeBudgetMs: intFromEnv('BENCH_SCALE_PURGE_BUDGET_MS', 60_000, 1),
    logLevel: process.env.BENCH_LOG_LEVEL || 'info',
    dbPoolMax: intFromEnv('DB_POOL_MAX', 10, 1),
    loader: wrkAvailable() ? ('wrk' as const) : ('node' as const),
  };
}
type Settings = ReturnType<typeof settings>;

interface Secrets {
  acme: string;
  admin: string;
  metrics: string;
}

interface Side {
  /** Each round's intake, in the order run. */
  intake: IntakeRun[];
  reads: ReadTiming[];
}

/** The median of each side's rounds and each pair's ratio (filled over the empty round just before it). */
interface IntakeComparison {
  emptyEventsPerSecond: number;
  filledEventsPerSecond: number;
  ratio: number;
  pairRatios: number[];
  emptyP99Ms: number;
  filledP99Ms: number;
}

interface Retention {
  plan: RetentionPlan;
  quiet: IntakeRun;
  during: IntakeRun;
  pass: RetentionPassResult;
}

const seconds = (ms: number) => round(ms / 1000, 1);

/** Signed acme deliveries for one load run, each run's ids its own. */
function acmeRequests(secret: string) {
  const runId = randomBytes(4).toString('hex');
  const nowSeconds = Math.floor(Date.now() / 1000);
  return (index: number) => signedAcmeEvent({ secret, runId, index, nowSeconds });
}

/** `count` answers at the configured concurrency, with a margin of requests of the same kind behind them. */
function fixedIntake(service: RunningService, config: Settings, secret: string, count: number): Promise<IntakeRun> {
  return intakeLoad({
    origin: service.origin,
    concurrency: config.concurrency,
    request: acmeRequests(secret),
    prepared: count + config.concurrency * 20,
    count,
    loader: config.loader,
  });
}

async function filledDatabase(
  server: ScaleServer,
  config: Settings,
): Promise<{ name: string; url: string; fill: FillMarker; reused: boolean }> {
  const name = `bench_scale_${config.events}`;
  if (config.reuse) {
    const marker = await server.fillOf(name);
    if (marker !== undefined) {
      console.log(`reusing ${name}, filled ${marker.filledAt} (${marker.events} events); migrating it`);
      const url = await server.migrate(name);
      return { name, url, fill: marker, reused: true };
    }
  }
  console.log(
    `filling ${name} with ${config.events} events over ${FILL_DAYS} days (${config.fillJobs} days at a time)`,
  );
  const url = await server.create(name);
  const sql = postgres(url, { max: config.fillJobs, onnotice: () => {} });
  try {
    const filled = await fillMonth(sql, {
      events: config.events,
      nowMs: Date.now(),
      seed: randomBytes(4).toString('hex'),
      jobs: config.fillJobs,
      log: console.log,
    });
    const fill: FillMarker = {
      events: filled.events,
      messages: filled.messages,
      filledAt: new Date().toISOString(),
      fillSeconds: seconds(filled.fillMs + filled.vacuumMs),
    };
    console.log(
      `filled ${filled.events} events and ${filled.messages} outbox messages in ${seconds(filled.fillMs)} s, ` +
        `VACUUM ANALYZE and CHECKPOINT ${seconds(filled.vacuumMs)} s`,
    );
    await server.markFilled(name, fill);
    return { name, url, fill, reused: false };
  } finally {
    await sql.end({ timeout: 5 });
  }
}

interface SideService {
  label: string;
  url: string;
  service: RunningService;
  client: ReadClient;
  stderrFile: string;
}

/** One database's service (same build, same settings for both sides). */
async function startSide(label: string, url: string, config: Settings, secrets: Secrets, tmp: string) {
  const stderrFile = join(tmp, `${label}.stderr.log`);
  const service = await startService({
    env: intakeServiceEnv(url, secrets.acme, {
      LOG_LEVEL: config.logLevel,
      DB_POOL_MAX: String(config.dbPoolMax),
      DATA_DIR: join(tmp, `${label}-data`),
      ADMIN_TOKEN: secrets.admin,
      METRICS_TOKEN: secrets.metrics,
    }),
    stdoutFile: join(tmp, `${label}.stdout.log`),
    stderrFile,
  });
  const client = new ReadClient(service.origin, secrets.admin, secrets.metrics);
  return { label, url, service, client, stderrFile } satisfies SideService;
}

async function stopSide(side: SideService): Promise<void> {
  await side.client.close();
  const code = await side.service.stop();
  if (code !== 0) {
    console.error(tail(side.stderrFile));
    throw new Error(`the ${side.label} service exited with ${code ?? 'a signal'} on SIGTERM`);
  }
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
};

/**
 * The intake of both sides in alternating rounds (empty, filled, empty, filled, …) after a warm-up of
 * each: the machine's drift (other work on it, the page cache) falls on both, and each pair's ratio
 * shows how much one run's figure can be trusted.
 */
async function alternateIntake(
  empty: SideService,
  filled: SideService,
  config: Settings,
  secrets: Secrets,
): Promise<{ empty: IntakeRun[]; filled: IntakeRun[]; comparison: IntakeComparison }> {
  console.log(
    `intake: ${config.intakeWarmup} warm-up each, then ${config.intakeRounds} rounds a side of ${config.intakeEvents} ` +
      `(${config.loader}), alternating`,
  );
  for (const side of [empty, filled]) await fixedIntake(side.service, config, secrets.acme, config.intakeWarmup);
  const runs = { empty: [] as IntakeRun[], filled: [] as IntakeRun[] };
  for (let round = 0; round < config.intakeRounds; round++) {
    for (const side of [empty, filled]) {
      const run = await fixedIntake(side.service, config, secrets.acme, config.intakeEvents);
      runs[side.label as 'empty' | 'filled'].push(run);
      console.log(
        `  round ${round} ${side.label}: ${run.eventsPerSecond} events/s, p50 ${run.p50Ms} ms, p99 ${run.p99Ms} ms, ` +
          `statuses ${JSON.stringify(run.statuses)}`,
      );
    }
  }
  const pairRatios = runs.filled.map((run, i) =>
    round(run.eventsPerSecond / (runs.empty[i]?.eventsPerSecond ?? Number.NaN), 3),
  );
  const emptyEventsPerSecond = median(runs.empty.map((run) => run.eventsPerSecond));
  const filledEventsPerSecond = median(runs.filled.map((run) => run.eventsPerSecond));
  const comparison: IntakeComparison = {
    emptyEventsPerSecond,
    filledEventsPerSecond,
    ratio: round(filledEventsPerSecond / emptyEventsPerSecond, 3),
    pairRatios,
    emptyP99Ms: median(runs.empty.map((run) => run.p99Ms)),
    filledP99Ms: median(runs.filled.map((run) => run.p99Ms)),
  };
  console.log(
    `  medians: empty ${emptyEventsPerSecond}, filled ${filledEventsPerSecond} events/s (${comparison.ratio}x); ` +
      `pairs ${pairRatios.map((ratio) => `${ratio}x`).join(', ')}`,
  );
  return { ...runs, comparison };
}

/** One side's operator reads, one at a time. */
async function measureReads(
  side: SideService,
  config: Settings,
  fallback: ReadSamples | undefined,
): Promise<{ reads: ReadTiming[]; samples: ReadSamples }> {
  const samples = await readSamples(side.url, Date.now(), fallback);
  const reads = await operatorReads(side.client, samples, 20);
  console.log(`[${side.label}] operator reads: ${config.warmup} warm-up, ${config.requests} timed each`);
  const timings = await timeReads(
    side.client,
    reads,
    { warmup: config.warmup, requests: config.requests, budgetMs: config.readBudgetMs, minRequests: 5 },
    console.log,
  );
  return { reads: timings, samples };
}

async function measureRetention(
  service: RunningService,
  url: string,
  config: Settings,
  secrets: Secrets,
): Promise<Retention> {
  const plan = await planRetention(url, Date.now());
  console.log(
    `[filled] retention pass: EVENT_RETENTION_DAYS=${plan.retentionDays} (${plan.expectedRows} rows past it), ` +
      `budget ${config.purgeBudgetMs} ms`,
  );
  const quiet = await fixedIntake(service, config, secrets.acme, config.intakeEvents);
  console.log(`  quiet: ${quiet.eventsPerSecond} events/s, p99 ${quiet.p99Ms} ms`);
  // Enough signed requests to keep the load on for the whole budget at the quiet rate, and then some.
  const prepared = Math.min(
    1_500_000,
    Math.ceil(quiet.eventsPerSecond * (config.purgeBudgetMs / 1000 + 10) * 1.3) + config.concurrency * 20,
  );
  const stopLoad = new AbortController();
  let loadStarted: () => void = () => {};
  const started = new Promise<void>((resolve) => {
    loadStarted = resolve;
  });
  const load = intakeLoad({
    origin: service.origin,
    concurrency: config.concurrency,
    request: acmeRequests(secrets.acme),
    prepared,
    stop: stopLoad.signal,
    onStarted: loadStarted,
    loader: config.loader,
  });
  let pass: RetentionPassResult | undefined;
  let passError: unknown;
  try {
    // The purge starts once the load is on (signing and loading a million requests takes seconds).
    await Promise.race([started, load]);
    pass = await retentionPass(url, plan, {
      payloadDays: PAYLOAD_RETENTION_DAYS,
      budgetMs: config.purgeBudgetMs,
      serviceApplication: SERVICE_APPLICATION,
    });
  } catch (error) {
    passError = error;
  } finally {
    stopLoad.abort();
  }
  const during = await load;
  if (pass === undefined) throw passError;
  console.log(
    `  purge: ${pass.summary.rowsDeleted} rows deleted, ${pass.summary.payloadsNulled} payloads nulled in ` +
      `${seconds(pass.elapsedMs)} s (${pass.summary.batches} batches, ${pass.summary.stoppedBy}); intake meanwhile ` +
      `${during.eventsPerSecond} events/s, p99 ${during.p99Ms} ms, statuses ${JSON.stringify(during.statuses)}` +
      `${during.exhausted ? ' (load ran out before the purge ended)' : ''}`,
  );
  console.log(
    `  lock waits: ${pass.locks.serviceWaitSamples} of ${pass.locks.samples} samples had a service connection waiting, ${pass.locks.blockedByPurgeSamples} on the purge` +
      (pass.locks.examples.length > 0 ? `\n    ${pass.locks.examples.join('\n    ')}` : ''),
  );
  return { plan, quiet, during, pass };
}

// --- the table ---

interface Row {
  measure: string;
  empty: string;
  filled: string;
  target: string;
  result: string;
}

const verdict = (ok: boolean | undefined) => (ok === undefined ? 'report' : ok ? 'pass' : 'FAIL');
const ms = (value: number) => `${value}`;

function readRows(empty: ReadTiming[], filled: ReadTiming[]): Row[] {
  return filled.map((read) => {
    const other = empty.find((candidate) => candidate.label === read.label);
    const cell = (timing: ReadTiming | undefined) => {
      if (timing === undefined) return '-';
      if (timing.unsupported) return 'n/a (400)';
      const statuses = Object.keys(timing.nonOk);
      const note = statuses.length > 0 ? ` [${statuses.join(',')}]` : '';
      const count = timing.requests < 30 ? ` n=${timing.requests}` : '';
      return `${ms(timing.p50Ms)} / ${ms(timing.p99Ms)}${count}${note}`;
    };
    const limit = read.kind === 'metrics' ? TARGETS.metricsP99Ms : TARGETS.readP99Ms;
    const ok = read.unsupported ? undefined : read.p99Ms <= limit && Object.keys(read.nonOk).length === 0;
    return {
      measure: `${read.label} (p50 / p99 ms)`,
      empty: cell(other),
      filled: cell(read),
      target: `p99 <= ${limit} ms`,
      result: read.unsupported ? 'n/a' : verdict(ok),
    };
  });
}

function table(
  empty: Side,
  filled: Side,
  intake: IntakeComparison,
  retention: Retention,
  sizes: RelationSize[],
  eventsStored: number,
): Row[] {
  const rows: Row[] = [
    {
      measure: `intake events/s (acme, sync, 32 conn.), median of ${filled.intake.length} alternating rounds`,
      empty: `${intake.emptyEventsPerSecond}`,
      filled: `${intake.filledEventsPerSecond} (${round(intake.ratio, 2)}x)`,
      target: `>= ${TARGETS.intakeRatio}x empty`,
      result: verdict(intake.ratio >= TARGETS.intakeRatio),
    },
    {
      measure: '  each round, filled over the empty round before it',
      empty: '',
      filled: intake.pairRatios.map((ratio) => `${round(ratio, 2)}x`).join(', '),
      target: '',
      result: 'report',
    },
    {
      measure: 'intake p99 ms (median of the rounds)',
      empty: `${intake.emptyP99Ms}`,
      filled: `${intake.filledP99Ms}`,
      target: '',
      result: 'report',
    },
    ...readRows(empty.reads, filled.reads),
  ];
  const { quiet, during, pass, plan } = retention;
  const p99Ratio = during.p99Ms / quiet.p99Ms;
  // A pass over in a moment leaves too few answers for a p99 to mean anything.
  const enoughAnswers = during.answered >= MIN_ANSWERS_DURING_PASS;
  const failedAnswers = Object.entries(during.statuses)
    .filter(([status]) => status !== '200' && status !== '2xx')
    .reduce((sum, [, n]) => sum + n, 0);
  rows.push(
    {
      measure: `retention pass (EVENT_RETENTION_DAYS=${plan.retentionDays})`,
      empty: '',
      filled: `${pass.summary.rowsDeleted} rows in ${seconds(pass.elapsedMs)} s (${pass.summary.stoppedBy})`,
      target: `~1 day (${plan.expectedRows} rows)`,
      result: 'report',
    },
    {
      measure: '  intake p99 during it vs quiet (ms)',
      empty: '',
      filled: `${during.p99Ms} vs ${quiet.p99Ms} (${round(p99Ratio, 2)}x)`,
      target: `<= ${TARGETS.retentionP99Ratio}x quiet`,
      result: enoughAnswers
        ? verdict(p99Ratio <= TARGETS.retentionP99Ratio && !during.exhausted)
        : `n/a (${during.answered} answers)`,
    },
    {
      measure: '  intake events/s during it vs quiet',
      empty: '',
      filled: `${during.eventsPerSecond} vs ${quiet.eventsPerSecond} (${during.answered} answers)`,
      target: '',
      result: 'report',
    },
    {
      measure: '  service connections blocked by the purge',
      empty: '',
      filled: `${pass.locks.blockedByPurgeSamples} of ${pass.locks.samples} samples (any lock wait: ${pass.locks.serviceWaitSamples}); non-200 ${failedAnswers}, errors ${during.errors}`,
      target: '0 samples, 0 non-200',
      result: verdict(pass.locks.blockedByPurgeSamples === 0 && failedAnswers === 0 && during.errors === 0),
    },
  );
  const total = sizes.reduce((sum, size) => sum + size.totalBytes, 0);
  rows.push({
    measure: 'bytes per stored event, all tables',
    empty: '',
    filled: `${Math.round(total / Math.max(1, eventsStored))} (${round(total / 2 ** 30, 2)} GiB)`,
    target: 'reported',
    result: 'report',
  });
  for (const size of sizes) {
    rows.push({
      measure: `  ${size.relation} (heap / toast / indexes)`,
      empty: '',
      filled: `${size.totalPerEvent} (${size.heapPerEvent} / ${Math.round(size.toastBytes / Math.max(1, eventsStored))} / ${size.indexPerEvent})`,
      target: `${size.rows} rows, ${size.totalPerRow} B/row`,
      result: 'report',
    });
  }
  return rows;
}

function printTable(title: string, rows: Row[]): void {
  const header: Row = { measure: 'measure', empty: 'empty', filled: 'filled', target: 'target', result: 'result' };
  const all = [header, ...rows];
  const width = (key: keyof Row) => Math.max(...all.map((row) => row[key].length));
  const widths = { measure: width('measure'), empty: width('empty'), filled: width('filled'), target: width('target') };
  const line = (row: Row) =>
    `${row.measure.padEnd(widths.measure)} | ${row.empty.padStart(widths.empty)} | ${row.filled.padStart(widths.filled)} | ${row.target.padEnd(widths.target)} | ${row.result}`;
  const lines = all.map(line);
  const rule = '-'.repeat(Math.max(title.length, ...lines.map((text) => text.length)));
  console.log(`\n${title}\n${rule}\n${lines[0]}\n${rule}\n${lines.slice(1).join('\n')}\n`);
}

async function main(): Promise<boolean> {
  const config = settings();
  const startedAt = new Date();
  const context = runContext();
  const tmp = mkdtempSync(join(tmpdir(), 'webhook-inbox-scale-'));
  // As root, embedded PostgreSQL runs as the `postgres` user, which must be able to reach its data dir.
  chmodSync(tmp, 0o755);
  const secrets: Secrets = {
    acme: randomBytes(32).toString('hex'),
    admin: randomBytes(24).toString('hex'),
    metrics: randomBytes(24).toString('hex'),
  };
  const failures: string[] = [];
  let server: ScaleServer | undefined;
  let emptyName: string | undefined;
  let filledName: string | undefined;
  let keepFilled = config.keep;
  // A fill that finished is kept when the run breaks after it: BENCH_SCALE_REUSE=1 then saves the fill.
  let filledReady = false;
  let report: Record<string, unknown> | undefined;
  try {
    console.log(
      `starting ${process.env.BENCH_DATABASE_URL ? 'on BENCH_DATABASE_URL' : 'embedded PostgreSQL'}; load through ${config.loader}`,
    );
    // One snapshot of the sources for the whole run: the service is built and both databases are
    // migrated before the long fill, so a migration added meanwhile cannot set them apart.
    buildOnce();
    server = await scaleServer(join(tmp, 'db'));
    emptyName = throwAwayName('bench_scale_empty');
    const emptyUrl = await server.create(emptyName);
    if (server.kind === 'embedded' && config.keep) {
      console.log('the embedded server lives in a throw-away folder: BENCH_SCALE_KEEP/REUSE need BENCH_DATABASE_URL');
      keepFilled = false;
    }
    const filled = await filledDatabase(server, config);
    filledName = filled.name;
    filledReady = true;
    if (config.fillOnly) {
      if (server.kind === 'embedded') throw new Error('BENCH_SCALE_FILL_ONLY=1 needs BENCH_DATABASE_URL');
      return true;
    }
    console.log('sizes of the filled database');
    const sizes = await relationSizes(filled.url);
    const eventsStored = sizes.find((size) => size.relation === 'webhook_events')?.rows ?? 0;

    const filledSamples = await readSamples(filled.url, Date.now());
    const emptySide = await startSide('empty', emptyUrl, config, secrets, tmp);
    let empty: Side;
    let full: Side;
    let comparison: IntakeComparison;
    let retention: Retention;
    try {
      const filledSide = await startSide('filled', filled.url, config, secrets, tmp);
      try {
        const intake = await alternateIntake(emptySide, filledSide, config, secrets);
        comparison = intake.comparison;
        empty = { intake: intake.empty, reads: (await measureReads(emptySide, config, filledSamples)).reads };
        full = { intake: intake.filled, reads: (await measureReads(filledSide, config, filledSamples)).reads };
        retention = await measureRetention(filledSide.service, filled.url, config, secrets);
      } finally {
        await stopSide(filledSide);
      }
    } finally {
      await stopSide(emptySide);
    }

    const rows = table(empty, full, comparison, retention, sizes, eventsStored);
    printTable(
      `bench:scale: ${eventsStored} stored events (${filled.fill.messages} outbox messages) vs an empty database, ` +
        `${config.loader}, ${context.cpus} cores`,
      rows,
    );
    console.log(
      filled.reused
        ? `fill: reused from ${filled.fill.filledAt} (it took ${filled.fill.fillSeconds} s)`
        : `fill: ${filled.fill.fillSeconds} s for ${filled.fill.events} events`,
    );
    report = {
      settings: { ...config, database: server.kind },
      context,
      targets: TARGETS,
      fill: { ...filled.fill, reused: filled.reused, database: filled.name },
      sizes,
      intake: comparison,
      empty,
      filled: full,
      retention,
      samples: filledSamples,
      table: rows,
    };
  } catch (error) {
    failures.push(error instanceof Error ? (error.stack ?? error.message) : String(error));
  } finally {
    try {
      if (emptyName !== undefined) await server?.drop(emptyName);
      if (filledReady && failures.length > 0 && server?.kind === 'external') keepFilled = true;
      if (filledName !== undefined && !keepFilled) await server?.drop(filledName);
      else if (filledName !== undefined) console.log(`kept ${filledName} (BENCH_SCALE_REUSE=1 takes it next time)`);
      await server?.stop();
    } catch (error) {
      failures.push(`cleaning up: ${error instanceof Error ? error.message : String(error)}`);
    }
    rmSync(tmp, { recursive: true, force: true });
  }
  if (report !== undefined) {
    const file = writeResult('scale', startedAt, {
      benchmark: 'scale',
      startedAt: startedAt.toISOString(),
      ok: failures.length === 0,
      failures,
      ...report,
    });
    console.log(`written to ${file}`);
  }
  for (const failure of failures) console.error(`FAILED: ${failure}`);
  return failures.length === 0;
}

exitWhenDone(main);
