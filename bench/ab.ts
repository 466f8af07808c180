// `npm run bench:ab -- <ref>`: the working tree ("head") against another commit ("base") and the design
// guide's handler ("seed", ../shared/bench/seed-express), in alternating rounds on one machine, so a
// change's effect on the intake is read from one run's ratios rather than from figures taken on
// different days. The base is `git archive`d into ~/.cache/webhook-inbox/bench-ab/<sha> and installed
// there once (its node_modules a link to the working tree's when the lock files are byte-identical,
// else `npm ci`), then built if it has a build script; the seed is copied next to it and installed
// once too. Each server runs as shared/bench/compare-intake.mjs runs it (`npm start` with
// NODE_ENV=production and LOG_LEVEL=warn after `npm run -s db:migrate`; the seed with `node
// server.mjs`), each on a fresh database of its own, with unique acme events signed ahead at 32
// connections (wrk when installed, else bench/lib/load.ts). Each round sends the seed, then base and
// head in an order that alternates (AB, BA, …); in async mode (PROCESSING_MODE=async) a service's
// round lasts until every event it accepted is `completed`: "applied". CPU per event is the server's
// process group, alone and with its own database's backends and the server's own processes (WAL
// writer, checkpointer: read from pg_stat_activity, so other databases' connections on the same
// PostgreSQL server do not count). Each round also reports the share of the machine's cores that other
// work used meanwhile, and the run prints NOISY when it passed 10%. Prints each round and, per mode,
// the medians and head/base of the medians, and, where the server loads pg_stat_statements, what each
// statement cost PostgreSQL per event on each side (execution time, WAL records and bytes: counted,
// so a change of index entries shows whatever the load; bench/lib/statement-costs.ts); writes
// bench/results/ab-<time>.json. Fails only when it could not complete: a refused answer, an event not
// stored and applied once, a server that would not start.
//
// Environment: ROUNDS (5), REQUESTS (4000 a round and server), AB_WARMUP (REQUESTS, capped at 2000, per
// server and mode), MODES (sync,async), BENCH_CONCURRENCY (32), BENCH_DATABASE_URL or DATABASE_URL (the
// server to create the throw-away databases on; postgres://postgres@127.0.0.1:5432/postgres),
// BENCH_LOADER=node, BENCH_AB_CACHE (~/.cache/webhook-inbox/bench-ab). `--no-seed` leaves the guide's
// handler out (no express/pg install: for bench:smoke); the default run includes it. For finding where
// a difference comes from: AB_CPU_PROF=<dir> (V8 CPU profiles of base and head), AB_HEAD_SQL and
// AB_BASE_SQL (SQL run on a contender's database after its migrations: a schema change priced before
// its migration is written; `npm run bench:ab -- HEAD` with AB_HEAD_SQL compares the change alone),
// AB_HEAD_ENV and AB_BASE_ENV (settings for one contender alone: a feature a setting turns off, priced).
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import {
  chmodSync,
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import postgres from 'postgres';
import { signedAcmeEvent } from './lib/acme.ts';
import { batchSizesBetween, readBatchSizes } from './lib/batch-sizes.ts';
import { intFromEnv } from './lib/env.ts';
import { exitWhenDone } from './lib/exit.ts';
import {
  clockTicksPerSecond,
  commandCpuTicks,
  type MachineCpu,
  machineCpu,
  pidsCpuTicks,
  processGroupCpuTicks,
  ticksToMs,
} from './lib/proc.ts';
import { runContext, writeResult } from './lib/results.ts';
import { buildOnce, REPO_ROOT, type RunningService, startService, tail } from './lib/service.ts';
import {
  costsBetween,
  formatCosts,
  type StatementCosts,
  snapshot,
  statementStatsAvailable,
} from './lib/statement-costs.ts';
import { formatTable, round } from './lib/stats.ts';
import { intakeLoad, wrkAvailable } from './lib/wrk.ts';

const MODES = ['sync', 'async'] as const;
type Mode = (typeof MODES)[number];
type Label = 'seed' | 'base' | 'head';
const APPLY_TIMEOUT_MS = 120_000;
const SEED_SOURCE = join(REPO_ROOT, '..', 'shared', 'bench', 'seed-express');
const DEFAULT_ADMIN_URL = 'postgres://postgres@127.0.0.1:5432/postgres';
/**
 * Past this share of the cores used by other work during a round, the run says its ratios are not to
 * be trusted: on the 2-core development machine, pairs ranged from 0.46 to 1.34 for two builds that
 * differed by one constant while other agents' tests used 40-70% of the cores.
 */
const NOISY_SHARE = 0.1;

function settings() {
  const argv = process.argv.slice(2);
  const headAt = argv.indexOf('--head');
  const headRef = headAt === -1 ? undefined : argv[headAt + 1];
  const rest = headAt === -1 ? argv : argv.filter((_, index) => index !== headAt && index !== headAt + 1);
  const positional = rest.filter((arg) => !arg.startsWith('--'));
  const unknown = rest.filter((arg) => arg.startsWith('--') && arg !== '--no-seed');
  if (positional.length !== 1 || unknown.length > 0 || (headAt !== -1 && headRef === undefined)) {
    throw new Error('usage: npm run bench:ab -- <ref> [--head <ref>] [--no-seed]  (e.g. main, HEAD~3, a sha)');
  }
  const requests = intFromEnv('REQUESTS', 4000, 1);
  const modes = (process.env.MODES || MODES.join(',')).split(',').map((mode) => mode.trim());
  const unknownModes = modes.filter((mode) => !(MODES as readonly string[]).includes(mode));
  if (unknownModes.length > 0 || modes.length === 0) throw new Error(`MODES takes sync and/or async, got "${modes}"`);
  return {
    ref: positional[0] as string,
    /** Another commit in the working tree's place: the history between two commits, measured. */
    headRef,
    seed: !argv.includes('--no-seed'),
    rounds: intFromEnv('ROUNDS', 5, 1),
    requests,
    warmup: intFromEnv('AB_WARMUP', Math.min(requests, 2000), 0),
    modes: modes as Mode[],
    concurrency: intFromEnv('BENCH_CONCURRENCY', 32, 1),
    adminUrl: process.env.BENCH_DATABASE_URL || process.env.DATABASE_URL || DEFAULT_ADMIN_URL,
    cache: process.env.BENCH_AB_CACHE || join(homedir(), '.cache', 'webhook-inbox', 'bench-ab'),
  };
}
type Settings = ReturnType<typeof settings>;

/** Runs a command to completion with its output in a log file; a failure quotes the log's tail. */
function run(command: string, args: readonly string[], cwd: string, log: string, env: Record<string, string> = {}) {
  try {
    execFileSync(command, args, {
      cwd,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
      maxBuffer: 256 * 1024 * 1024,
    });
  } catch (error) {
    const output = error as { stdout?: Buffer; stderr?: Buffer };
    writeFileSync(log, `${output.stdout?.toString() ?? ''}${output.stderr?.toString() ?? ''}`);
    throw new Error(`${command} ${args.join(' ')} failed in ${cwd}:\n${tail(log, 30)}`);
  }
}

/**
 * A directory made once per key: `make` fills a scratch folder that is renamed into place only when
 * it succeeded, so an interrupted install is never taken for a finished one.
 */
function cachedDirectory(cache: string, key: string, make: (dir: string) => void): { dir: string; cached: boolean } {
  const dir = join(cache, key);
  if (existsSync(join(dir, '.bench-ab-ready'))) return { dir, cached: true };
  mkdirSync(cache, { recursive: true });
  const scratch = `${dir}.partial-${process.pid}`;
  rmSync(scratch, { recursive: true, force: true });
  mkdirSync(scratch);
  try {
    make(scratch);
    writeFileSync(join(scratch, '.bench-ab-ready'), `${new Date().toISOString()}\n`);
    rmSync(dir, { recursive: true, force: true });
    renameSync(scratch, dir);
  } catch (error) {
    rmSync(scratch, { recursive: true, force: true });
    throw error;
  }
  return { dir, cached: false };
}

function git(args: readonly string[]): string {
  return execFileSync('git', args, { cwd: REPO_ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}

/** A commit (the base, or `--head`'s) as a built checkout of its own, made once per sha. */
function refCheckout(
  config: Settings,
  ref: string,
): { dir: string; sha: string; cached: boolean; linkedModules: boolean } {
  const sha = git(['rev-parse', '--verify', `${ref}^{commit}`]);
  const made = cachedDirectory(config.cache, sha, (dir) => {
    const archive = join(dir, '.archive.tar');
    git(['archive', '--format=tar', `--output=${archive}`, sha]);
    execFileSync('tar', ['-xf', archive, '-C', dir]);
    rmSync(archive);
    const log = join(dir, '.install.log');
    const sameLock = readFileSync(join(dir, 'package-lock.json')).equals(
      readFileSync(join(REPO_ROOT, 'package-lock.json')),
    );
    if (sameLock) {
      symlinkSync(join(REPO_ROOT, 'node_modules'), join(dir, 'node_modules'));
    } else {
      console.log(`${sha.slice(0, 12)}: its package-lock.json differs, npm ci (once; cached)`);
      run('npm', ['ci', '--no-audit', '--no-fund'], dir, log);
    }
    const scripts = (
      JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { scripts?: Record<string, string> }
    ).scripts;
    if (scripts?.build !== undefined) run('npm', ['run', '-s', 'build'], dir, log);
  });
  // A link when the lock files matched at install time, whether now or on the run that made the cache.
  const linkedModules = lstatSync(join(made.dir, 'node_modules'), { throwIfNoEntry: false })?.isSymbolicLink() === true;
  return { sha, dir: made.dir, cached: made.cached, linkedModules };
}

/** The guide's handler copied out of shared/ (read-only) and installed, once per version of its files. */
function seedCheckout(config: Settings): { dir: string; cached: boolean } {
  if (!existsSync(join(SEED_SOURCE, 'server.mjs'))) throw new Error(`no guide's handler at ${SEED_SOURCE}`);
  const digest = createHash('sha256');
  for (const file of readdirSync(SEED_SOURCE).sort()) digest.update(file).update(readFileSync(join(SEED_SOURCE, file)));
  return cachedDirectory(config.cache, `seed-express-${digest.digest('hex').slice(0, 16)}`, (dir) => {
    cpSync(SEED_SOURCE, dir, { recursive: true });
    // The copy keeps shared/'s read-only modes, and npm must write beside the files.
    chmodSync(dir, 0o755);
    for (const file of readdirSync(dir)) chmodSync(join(dir, file), 0o644);
    run('npm', ['ci', '--no-audit', '--no-fund'], dir, join(dir, '.install.log'));
  });
}

interface Server {
  label: Label;
  /** Fresh database `url` made ready for this server (its migrations, or the seed's schema). */
  prepare(url: string, logDir: string): Promise<void>;
  start(url: string, mode: Mode, secret: string, logDir: string): Promise<RunningService>;
}

/**
 * AB_CPU_PROF=<dir>: each base and head server writes V8 CPU profiles to <dir>/<label>-<mode>/ (npm's
 * own process writes a small one beside it), to compare where the two builds spend their time under
 * the same load.
 */
function cpuProfileOptions(label: 'base' | 'head', mode: Mode): Record<string, string> {
  const dir = process.env.AB_CPU_PROF;
  if (!dir) return {};
  return { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${join(dir, `${label}-${mode}`)}` };
}

/**
 * AB_HEAD_SQL / AB_BASE_SQL: SQL run on that contender's database after its migrations, to price a
 * schema change before writing its migration (`AB_HEAD_SQL='drop index …' npm run bench:ab -- HEAD`).
 */
async function experimentSql(label: 'base' | 'head', url: string): Promise<void> {
  const statements = process.env[label === 'head' ? 'AB_HEAD_SQL' : 'AB_BASE_SQL'];
  if (!statements) return;
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    await sql.unsafe(statements);
  } finally {
    await sql.end({ timeout: 5 });
  }
}

/**
 * AB_HEAD_ENV / AB_BASE_ENV: settings (`NAME=value`, separated by spaces) for that contender alone, to
 * price a feature that a setting turns off (`AB_HEAD_ENV='DELIVERY_LOG_FLUSH_MS=0' npm run bench:ab --
 * HEAD`: the delivery log's cost); settings exported in the shell reach both.
 */
function contenderEnv(label: 'base' | 'head'): Record<string, string> {
  const text = process.env[label === 'head' ? 'AB_HEAD_ENV' : 'AB_BASE_ENV'] ?? '';
  const env: Record<string, string> = {};
  for (const pair of text.split(/\s+/).filter((part) => part !== '')) {
    const at = pair.indexOf('=');
    if (at <= 0) throw new Error(`${label === 'head' ? 'AB_HEAD_ENV' : 'AB_BASE_ENV'}: "${pair}" is not NAME=value`);
    env[pair.slice(0, at)] = pair.slice(at + 1);
  }
  return env;
}

function checkoutServer(label: 'base' | 'head', dir: string): Server {
  return {
    label,
    prepare: async (url, logDir) => {
      run('npm', ['run', '-s', 'db:migrate'], dir, join(logDir, `${label}.migrate.log`), { DATABASE_URL: url });
      await experimentSql(label, url);
    },
    start: (url, mode, secret, logDir) =>
      startService({
        command: 'npm',
        script: ['start'],
        cwd: dir,
        processGroup: true,
        env: {
          DATABASE_URL: url,
          ACME_WEBHOOK_SECRET: secret,
          NODE_ENV: 'production',
          LOG_LEVEL: 'warn',
          PROCESSING_MODE: mode,
          DATA_DIR: join(logDir, `${label}-${mode}-data`),
          ...cpuProfileOptions(label, mode),
          ...contenderEnv(label),
        },
        stdoutFile: join(logDir, `${label}-${mode}.stdout.log`),
        stderrFile: join(logDir, `${label}-${mode}.stderr.log`),
        startTimeoutMs: 60_000,
      }),
  };
}

function seedServer(dir: string): Server {
  return {
    label: 'seed',
    prepare: async (url) => {
      const sql = postgres(url, { max: 1, onnotice: () => {} });
      try {
        await sql.unsafe(readFileSync(join(dir, 'schema.sql'), 'utf8'));
      } finally {
        await sql.end({ timeout: 5 });
      }
    },
    start: (url, mode, secret, logDir) =>
      startService({
        script: ['server.mjs'],
        cwd: dir,
        processGroup: true,
        env: { DATABASE_URL: url, WEBHOOK_SECRET: secret },
        stdoutFile: join(logDir, `seed-${mode}.stdout.log`),
        stderrFile: join(logDir, `seed-${mode}.stderr.log`),
        // No /healthz: any answer short of a server error means it listens.
        ready: { path: '/', accept: (status) => status < 500 },
      }),
  };
}

interface Figures {
  eventsPerSecond: number;
  /** Events over the load plus the wait until the last one was completed (sync: the same). */
  appliedPerSecond: number;
  p99Ms: number;
  serviceCpuMsPerEvent: number;
  withPostgresCpuMsPerEvent: number;
  /**
   * Share of the machine's cores that other work used during the round (everything busy but the
   * server, its database's backends, the load generator and this script): how far to trust it.
   */
  othersShare: number;
  /** Deliveries per intake transaction, the mean over the round (group commit; none for the seed). */
  meanBatch: number | undefined;
  accepted: number;
  loader: string;
}

/** The run's events in a server's webhook_events (both schemas have it) and their subscriptions. */
async function storedOf(sql: postgres.Sql, runId: string) {
  const [row] = await sql<{ completed: number; waiting: number; subscriptions: number }[]>`
    /* bench:ab */ select
      (select count(*)::int from webhook_events where event_id like ${`evt_${runId}_%`} and status = 'completed')
        as completed,
      (select count(*)::int from webhook_events where event_id like ${`evt_${runId}_%`} and status <> 'completed')
        as waiting,
      (select count(*)::int from subscriptions where external_id like ${`sub_${runId}_%`}) as subscriptions`;
  if (row === undefined) throw new Error('the count query returned no row');
  return row;
}

/** How long the outbox may stay as it is before the relay counts as off (RELAY_INTERVAL_MS=0 in AB_HEAD_ENV). */
const RELAY_STILL_MS = 3000;

/**
 * Waits until the relay has published every message (a contender without an outbox, the seed, at
 * once; one whose relay is off, once nothing has moved for RELAY_STILL_MS). The relay defers to a
 * saturated intake and publishes the round's messages after it: left running, that work would take
 * the cores from the next contender's round (a relay's update of a few hundred messages ran ten
 * times slower there than alone), adding its cost to the other side.
 */
async function outboxDrained(sql: postgres.Sql): Promise<void> {
  const [table] = await sql<{ exists: boolean }[]>`
    /* bench:ab */ select to_regclass('outbox_messages') is not null as exists`;
  if (table?.exists !== true) return;
  let last = -1;
  let movedAt = performance.now();
  for (;;) {
    const [row] = await sql<{ pending: number }[]>`
      /* bench:ab */ select count(*)::int as pending from outbox_messages where status = 'pending'`;
    const pending = row?.pending ?? 0;
    if (pending === 0) return;
    if (pending !== last) {
      last = pending;
      movedAt = performance.now();
    } else if (performance.now() - movedAt > RELAY_STILL_MS) {
      return;
    }
    await sleep(20);
  }
}

/**
 * The PostgreSQL processes a contender's round costs: its database's backends (the server's
 * connections; the script's own left out) and the server's own processes (WAL writer, checkpointer,
 * background writer, autovacuum), whose work during a round is that round's, the contenders running
 * one at a time.
 */
async function backendPids(sql: postgres.Sql): Promise<number[]> {
  const rows = await sql<{ pid: number }[]>`
    /* bench:ab */ select pid from pg_stat_activity
    where (datname = current_database() or backend_type <> 'client backend') and pid <> pg_backend_pid()`;
  return rows.map((row) => row.pid);
}

interface CpuReading {
  service: number;
  backends: Map<number, number>;
  machine: MachineCpu;
  /** The load generator (wrk) and this script. */
  bench: number;
}

/** The script's own backend (its checks of what was stored) is the benchmark's work, not the contender's. */
async function ownBackendPid(sql: postgres.Sql): Promise<number> {
  const [row] = await sql<{ pid: number }[]>`/* bench:ab */ select pg_backend_pid() as pid`;
  return row?.pid ?? 0;
}

function cpuReading(servicePid: number, backends: Iterable<number>, ownBackend: number): CpuReading {
  const { user, system } = process.cpuUsage();
  const checks = pidsCpuTicks([ownBackend]).get(ownBackend) ?? 0;
  return {
    service: processGroupCpuTicks(servicePid),
    backends: pidsCpuTicks(backends),
    machine: machineCpu(),
    bench: commandCpuTicks('wrk') + checks + ((user + system) / 1e6) * clockTicksPerSecond(),
  };
}

/**
 * The server's CPU, its database's backends' (a backend that ended during the round is left out;
 * one that started during it counts whole), and the share of all cores that anything else used.
 */
function cpuSpent(start: CpuReading, end: CpuReading) {
  let postgresTicks = 0;
  for (const [pid, ticks] of end.backends) postgresTicks += ticks - (start.backends.get(pid) ?? 0);
  const serviceTicks = end.service - start.service;
  const machineTicks = end.machine.total - start.machine.total;
  const othersTicks =
    end.machine.processes - start.machine.processes - serviceTicks - postgresTicks - (end.bench - start.bench);
  return {
    serviceMs: ticksToMs(serviceTicks),
    postgresMs: ticksToMs(postgresTicks),
    othersShare: machineTicks > 0 ? Math.max(0, othersTicks / machineTicks) : 0,
  };
}

/** One load of `count` unique events against `service`, checked: every answer 2xx, each event applied once. */
async function measure(
  label: Label,
  service: RunningService,
  sql: postgres.Sql,
  config: Settings,
  secret: string,
  count: number,
): Promise<Figures> {
  const runId = randomBytes(4).toString('hex');
  const nowSeconds = Math.floor(Date.now() / 1000);
  const backends = await backendPids(sql);
  const ownBackend = await ownBackendPid(sql);
  const batchesBefore = label === 'seed' ? undefined : await readBatchSizes(service.origin);
  clockTicksPerSecond(); // read once before the load (it runs getconf)
  let cpuAtStart: CpuReading | undefined;
  const load = await intakeLoad({
    origin: service.origin,
    concurrency: config.concurrency,
    request: (index) => signedAcmeEvent({ secret, runId, index, nowSeconds }),
    // wrk keeps every connection busy until it is interrupted: a margin past `count`.
    prepared: count + config.concurrency * 20,
    count,
    // Signing ahead happens before the first answer: not the server's CPU, not its time.
    onStarted: () => {
      cpuAtStart = cpuReading(service.pid, backends, ownBackend);
    },
  });
  const loadEnded = performance.now();
  const accepted = (load.statuses['200'] ?? 0) + (load.statuses['202'] ?? 0);
  if (accepted !== load.answered || load.errors > 0) {
    throw new Error(`${label}: ${JSON.stringify(load.statuses)} for ${load.answered} answers, ${load.errors} errors`);
  }
  // Until every event it took is completed (at once in sync mode and for the seed).
  const deadline = loadEnded + APPLY_TIMEOUT_MS;
  let stored = await storedOf(sql, runId);
  while (stored.completed < accepted || stored.waiting > 0) {
    if (performance.now() > deadline) throw new Error(`${label}: ${JSON.stringify(stored)} for ${accepted} accepted`);
    await sleep(20);
    stored = await storedOf(sql, runId);
  }
  const appliedMs = load.elapsedMs + (performance.now() - loadEnded);
  const end = cpuReading(service.pid, new Set([...backends, ...(await backendPids(sql))]), ownBackend);
  await outboxDrained(sql);
  if (stored.subscriptions !== stored.completed) {
    throw new Error(`${label}: ${stored.subscriptions} subscriptions for ${stored.completed} completed events`);
  }
  const { serviceMs, postgresMs, othersShare } = cpuSpent(cpuAtStart ?? end, end);
  const meanBatch =
    batchesBefore === undefined
      ? undefined
      : batchSizesBetween(batchesBefore, await readBatchSizes(service.origin)).mean;
  return {
    eventsPerSecond: load.eventsPerSecond,
    appliedPerSecond: round(accepted / (appliedMs / 1000), 1),
    p99Ms: load.p99Ms,
    serviceCpuMsPerEvent: round(serviceMs / accepted, 3),
    withPostgresCpuMsPerEvent: round((serviceMs + postgresMs) / accepted, 3),
    othersShare: round(othersShare, 2),
    meanBatch,
    accepted,
    loader: load.loader,
  };
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[middle] as number) : ((sorted[middle - 1] ?? 0) + (sorted[middle] ?? 0)) / 2;
}

const ratio = (numerator: number | undefined, denominator: number | undefined) =>
  numerator === undefined || denominator === undefined || denominator === 0 ? 'n/a' : round(numerator / denominator, 2);

type RoundResult = { round: number; order: Label[] } & Partial<Record<Label, Figures>>;

/** Base's and head's statements over a mode's rounds, where pg_stat_statements can be read. */
type ModeCosts = { base: StatementCosts; head: StatementCosts } | undefined;

/** One mode: a fresh database and a server for each contender, a warm-up, then the rounds. */
async function runMode(mode: Mode, servers: readonly Server[], config: Settings, logDir: string) {
  const admin = postgres(config.adminUrl, { max: 1, onnotice: () => {} });
  const tag = randomBytes(4).toString('hex');
  const secret = randomBytes(24).toString('hex');
  const names: string[] = [];
  const running: Array<{ server: Server; service: RunningService; sql: postgres.Sql }> = [];
  try {
    for (const server of servers) {
      const name = `bench_ab_${server.label}_${mode}_${tag}`;
      await admin.unsafe(`create database "${name}"`);
      names.push(name);
      const url = new URL(config.adminUrl);
      url.pathname = `/${name}`;
      await server.prepare(url.toString(), logDir);
      const service = await server.start(url.toString(), mode, secret, logDir);
      running.push({ server, service, sql: postgres(url.toString(), { max: 1, onnotice: () => {} }) });
    }
    if (config.warmup > 0) {
      for (const entry of running) {
        await measure(entry.server.label, entry.service, entry.sql, config, secret, config.warmup);
      }
    }
    const statsReadable = await statementStatsAvailable(admin);
    const databaseOf = (label: Label) => names[running.findIndex((entry) => entry.server.label === label)] ?? '';
    const before = statsReadable
      ? { base: await snapshot(admin, databaseOf('base')), head: await snapshot(admin, databaseOf('head')) }
      : undefined;
    const rounds: RoundResult[] = [];
    for (let index = 0; index < config.rounds; index++) {
      const contenders = running.filter((entry) => entry.server.label !== 'seed');
      // AB, BA, AB…: a machine that drifts during the run favours neither side.
      if (index % 2 === 1) contenders.reverse();
      const order = [...running.filter((entry) => entry.server.label === 'seed'), ...contenders];
      const result: RoundResult = { round: index + 1, order: order.map((entry) => entry.server.label) };
      for (const entry of order) {
        result[entry.server.label] = await measure(
          entry.server.label,
          entry.service,
          entry.sql,
          config,
          secret,
          config.requests,
        );
      }
      rounds.push(result);
      console.log(describeRound(mode, result));
    }
    const eventsOf = (label: Label) => rounds.reduce((sum, result) => sum + (result[label]?.accepted ?? 0), 0);
    const costs: ModeCosts =
      before === undefined
        ? undefined
        : {
            base: costsBetween(before.base, await snapshot(admin, databaseOf('base')), eventsOf('base')),
            head: costsBetween(before.head, await snapshot(admin, databaseOf('head')), eventsOf('head')),
          };
    console.log(
      costs === undefined
        ? `${mode}: no statement costs (pg_stat_statements is not readable on ${new URL(config.adminUrl).host})`
        : formatCosts(mode, costs.base, costs.head),
    );
    return { rounds, costs };
  } finally {
    for (const entry of running) {
      await entry.sql.end({ timeout: 5 });
      await entry.service.stop();
    }
    for (const name of names) await admin.unsafe(`drop database if exists "${name}" with (force)`);
    await admin.end({ timeout: 5 });
  }
}

function describeRound(mode: Mode, result: RoundResult): string {
  const { seed, base, head } = result;
  const figure = (label: Label, figures: Figures | undefined) =>
    figures === undefined
      ? ''
      : `${label} ${figures.eventsPerSecond}/s` +
        (mode === 'async' && label !== 'seed' ? ` (applied ${figures.appliedPerSecond}/s)` : '') +
        `, ${figures.serviceCpuMsPerEvent} CPU ms/ev (${figures.withPostgresCpuMsPerEvent} with PostgreSQL), p99 ${figures.p99Ms} ms` +
        (figures.meanBatch === undefined ? '' : `, batch ${figures.meanBatch}`) +
        `, others ${Math.round(figures.othersShare * 100)}% of the cores`;
  const ratios = [
    ...(seed === undefined
      ? []
      : [
          `base/seed ${ratio(base?.eventsPerSecond, seed.eventsPerSecond)}`,
          `head/seed ${ratio(head?.eventsPerSecond, seed.eventsPerSecond)}`,
        ]),
    `head/base ${ratio(head?.eventsPerSecond, base?.eventsPerSecond)}`,
  ];
  const lines = result.order.map((label) => `    ${figure(label, result[label])}`);
  return `${mode} round ${result.round} (${result.order.join(', ')}): ${ratios.join(', ')}\n${lines.join('\n')}`;
}

/** Medians over the rounds of each contender, and head/base of the medians. */
function summarize(mode: Mode, rounds: readonly RoundResult[]) {
  const medianOf = (label: Label, field: keyof Omit<Figures, 'loader'>) => {
    const values = rounds.map((result) => result[label]?.[field]).filter((value) => value !== undefined);
    return values.length === 0 ? undefined : round(median(values), 3);
  };
  const fields = [
    ['eventsPerSecond', mode === 'async' ? 'accepted events/s' : 'events/s'],
    ...(mode === 'async' ? [['appliedPerSecond', 'applied events/s'] as const] : []),
    ['withPostgresCpuMsPerEvent', 'CPU ms/event with PostgreSQL'],
    ['serviceCpuMsPerEvent', 'CPU ms/event, server alone'],
    ['p99Ms', 'p99 ms'],
    ['meanBatch', 'mean intake batch'],
    ['othersShare', "others' share of the cores"],
  ] as const;
  return fields.map(([field, label]) => {
    const seed = medianOf('seed', field);
    const base = medianOf('base', field);
    const head = medianOf('head', field);
    return { mode, field, label, seed, base, head, headOverBase: ratio(head, base) };
  });
}

async function main(): Promise<boolean> {
  const config = settings();
  const startedAt = new Date();
  const logDir = mkdtempSync(join(tmpdir(), 'bench-ab-'));
  chmodSync(logDir, 0o755);
  const failures: string[] = [];
  try {
    const base = refCheckout(config, config.ref);
    console.log(
      `base ${config.ref} = ${base.sha.slice(0, 12)} in ${base.dir}` +
        `${base.cached ? ' (cached)' : ''}${base.linkedModules ? ', node_modules linked' : ''}`,
    );
    const head = config.headRef === undefined ? undefined : refCheckout(config, config.headRef);
    if (head === undefined) {
      buildOnce();
      console.log(`head: the working tree at ${REPO_ROOT}, built`);
    } else {
      console.log(`head ${config.headRef} = ${head.sha.slice(0, 12)} in ${head.dir}${head.cached ? ' (cached)' : ''}`);
    }
    const servers: Server[] = [];
    if (config.seed) {
      const seed = seedCheckout(config);
      console.log(`seed: the guide's handler in ${seed.dir}${seed.cached ? ' (cached)' : ''}`);
      servers.push(seedServer(seed.dir));
    }
    servers.push(checkoutServer('base', base.dir), checkoutServer('head', head?.dir ?? REPO_ROOT));
    const loader = wrkAvailable() ? 'wrk' : 'node';
    console.log(
      `${config.rounds} rounds of ${config.requests} events (after ${config.warmup} warm-up) per server and mode, ` +
        `${config.concurrency} connections, loader ${loader}, modes ${config.modes.join(', ')}`,
    );
    const byMode: Partial<Record<Mode, RoundResult[]>> = {};
    const statementCosts: Partial<Record<Mode, ModeCosts>> = {};
    for (const mode of config.modes) {
      const { rounds, costs } = await runMode(mode, servers, config, logDir);
      byMode[mode] = rounds;
      statementCosts[mode] = costs;
    }
    const summary = config.modes.flatMap((mode) => summarize(mode, byMode[mode] ?? []));
    const cell = (value: number | undefined) => (value === undefined ? '-' : String(value));
    console.log(
      `\n${formatTable(
        `bench:ab: head (${head === undefined ? 'working tree' : `${config.headRef}, ${head.sha.slice(0, 12)}`}) vs base (${config.ref}, ${base.sha.slice(0, 12)}), medians of ${config.rounds} round${config.rounds === 1 ? '' : 's'}, seed / base / head`,
        summary.map((row) => ({
          label: `${row.mode} ${row.label}`,
          value: `${cell(row.seed)} / ${cell(row.base)} / ${cell(row.head)}`,
          note: `head/base ${row.headOverBase}`,
        })),
      )}`,
    );
    const othersShare = Math.max(
      0,
      ...summary
        .filter((row) => row.field === 'othersShare')
        .flatMap((row) => [row.seed ?? 0, row.base ?? 0, row.head ?? 0]),
    );
    const noisy = othersShare > NOISY_SHARE;
    if (noisy) {
      console.log(
        `\nNOISY: other work used a median ${Math.round(othersShare * 100)}% of the machine's cores during the rounds ` +
          `(above ${NOISY_SHARE * 100}%): the ratios may move by half from one run to the next; run again on a quiet machine.`,
      );
    }
    const file = writeResult('ab', startedAt, {
      startedAt: startedAt.toISOString(),
      context: runContext(),
      base: { ref: config.ref, sha: base.sha, linkedModules: base.linkedModules },
      ...(head === undefined
        ? {}
        : { head: { ref: config.headRef, sha: head.sha, linkedModules: head.linkedModules } }),
      settings: { ...config, loader },
      rounds: byMode,
      summary,
      statementCosts,
      noisy,
      failures,
    });
    console.log(`\nwritten to ${file}`);
  } catch (error) {
    failures.push(error instanceof Error ? error.message : String(error));
  } finally {
    if (failures.length > 0) console.error(`server logs kept in ${logDir}`);
    else rmSync(logDir, { recursive: true, force: true });
  }
  for (const failure of failures) console.error(`FAILED: ${failure}`);
  return failures.length === 0;
}

exitWhenDone(main);
