// `npm run bench:smoke`: every benchmark under bench/ run once at a tiny size, to show each still
// completes (exits 0 and writes its result), not how fast anything is: a benchmark that has rotted
// shows up here in a minute rather than on the day someone needs its figures. Runs, in order:
// intake.ts (sync, under --cpu-prof), profile-summary.ts (on that profile), intake.ts --mode async
// (intake-async.ts), ledger.ts (sync and async), storm.ts, reconnect-flood.ts, rate-limited-target.ts, floor.ts, outbox.ts (HTTP sink and the NATS, RabbitMQ and Redis
// brokers), verify.ts, bundle.ts, startup.ts, batches.ts, scale.ts (a 3,000-event fill, kept for
// the next two), intake-io.ts and overview-profile.tsx (on that fill, dropped afterwards), cli.ts, and ab.ts
// against HEAD without the guide's handler (SMOKE_AB_SEED=1 includes it; its first run installs
// express and pg). all.ts is not run: it is these benchmarks at full size.
//
// Prints one line per benchmark with its duration and the CPU its processes used (PostgreSQL's and the
// brokers' not included), then a pass/fail line; exits 1 when any failed,
// with the tail of its output. Needs PostgreSQL (BENCH_DATABASE_URL, else DATABASE_URL, else
// postgres://postgres@127.0.0.1:5432/postgres) and the brokers bench:outbox publishes to; wrk is used
// when installed, else the bench's own Node load generator. SMOKE_JOBS (4): benchmarks run at once
// (their figures do not matter here); SMOKE_ONLY: a comma-separated subset of the names printed.
import { spawn } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { exitWhenDone } from './lib/exit.ts';
import { reapedChildrenCpuTicks, ticksToMs } from './lib/proc.ts';
import { newestResult } from './lib/results.ts';
import { buildOnce, REPO_ROOT, tail } from './lib/service.ts';

const DEFAULT_SERVER = 'postgres://postgres@127.0.0.1:5432/postgres';
const server = process.env.BENCH_DATABASE_URL || process.env.DATABASE_URL || DEFAULT_SERVER;
const SCALE_EVENTS = 3000;
const scaleDatabase = `bench_scale_${SCALE_EVENTS}`;
const work = mkdtempSync(join(tmpdir(), 'bench-smoke-'));
const cpuProfileDir = join(work, 'cpu-profile');

const urlOf = (name: string) => {
  const url = new URL(server);
  url.pathname = `/${name}`;
  return url.toString();
};

interface Step {
  name: string;
  script: string;
  args?: () => string[];
  env?: Record<string, string>;
  /** The result file's name (bench/results/<result>-<time>.json); none for a script that writes none. */
  result?: string;
  /** A step whose output this one reads: it starts once that one has passed. */
  after?: string;
}

const intakeEnv = { BENCH_EVENTS: '200', BENCH_WARMUP: '50', BENCH_LOG_LEVEL: 'warn' };
const steps: Step[] = [
  // The longest first, so the last to finish is a short one.
  {
    name: 'ab',
    script: 'bench/ab.ts',
    args: () => ['HEAD', ...(process.env.SMOKE_AB_SEED === '1' ? [] : ['--no-seed'])],
    env: { ROUNDS: '1', REQUESTS: '200', AB_WARMUP: '0' },
    result: 'ab',
  },
  {
    name: 'ledger',
    script: 'bench/ledger.ts',
    env: { EVENTS: '100', ROUNDS: '1', REPLAY_ROUNDS: '1' },
    result: 'ledger',
  },
  {
    name: 'startup',
    script: 'bench/startup.ts',
    env: { STARTUP_ROUNDS: '1', STARTUP_IDLE_MS: '0', STARTUP_VARIANTS: 'built' },
    result: 'startup',
  },
  {
    name: 'intake',
    script: 'bench/intake.ts',
    env: { ...intakeEnv, BENCH_PGBENCH_SECONDS: '0', BENCH_CPU_PROF: cpuProfileDir },
    result: 'intake',
  },
  {
    name: 'profile-summary',
    script: 'bench/profile-summary.ts',
    args: () => [join(cpuProfileDir, readdirSync(cpuProfileDir).find((file) => file.endsWith('.cpuprofile')) ?? '-')],
    after: 'intake',
  },
  {
    name: 'intake-async',
    script: 'bench/intake.ts',
    args: () => ['--mode', 'async'],
    env: { ...intakeEnv, BENCH_PACED_EVENTS: '100', WORKER_INTERVAL_MS: '50' },
    result: 'intake-async',
  },
  {
    name: 'storm',
    script: 'bench/storm.ts',
    env: { STORM_IDS: '20', STORM_REPEATS: '5', STORM_REPLAY_SECONDS: '1', STORM_REPLAY_EVENTS: '100' },
    result: 'storm',
  },
  {
    name: 'reconnect',
    script: 'bench/reconnect-flood.ts',
    // A pool of 100 (the service reads HTTP_MAX_CONNECTIONS from the environment it inherits), so that
    // 120 sockets fill it as 1,100 fill the default 1,024.
    env: { FLOOD_SOCKETS: '120', FLOOD_SECONDS: '2', KEEPALIVE_SENDERS: '1', HTTP_MAX_CONNECTIONS: '100' },
    result: 'reconnect-flood',
  },
  {
    name: 'rate-limited',
    script: 'bench/rate-limited-target.ts',
    env: { RATE_LIMITED_SECONDS: '3', RATE_LIMITED_WARMUP: '1', RATE_LIMITED_KIND: 'window' },
    result: 'rate-limited',
  },
  {
    name: 'floor',
    script: 'bench/floor.ts',
    env: { FLOOR_EVENTS: '100', FLOOR_ROUNDS: '1', FLOOR_WARMUP: '0' },
    result: 'floor',
  },
  {
    name: 'outbox',
    script: 'bench/outbox.ts',
    // The isolation scenario's timeout stays the bench's own: it is the healthy destination's too, and a
    // shorter one fails publishes to it on a loaded machine.
    env: { BENCH_MESSAGES: '200', BENCH_ISOLATION_MESSAGES: '200' },
    result: 'outbox',
  },
  {
    name: 'verify',
    script: 'bench/verify.ts',
    env: { BENCH_VERIFY_MS: '20', BENCH_VERIFY_WARMUP_MS: '5' },
    result: 'verify',
  },
  { name: 'bundle', script: 'bench/bundle.ts', result: 'bundle' },
  { name: 'cli', script: 'bench/cli.ts', env: { CLI_ROUNDS: '1' }, result: 'cli' },
  {
    name: 'batches',
    script: 'bench/batches.ts',
    env: { BENCH_BATCH_EVENTS: '5', BENCH_BATCH_RUNS: '1' },
    result: 'batches',
  },
  {
    name: 'scale',
    script: 'bench/scale.ts',
    env: {
      BENCH_SCALE_EVENTS: String(SCALE_EVENTS),
      BENCH_SCALE_KEEP: '1',
      BENCH_SCALE_INTAKE_EVENTS: '100',
      BENCH_SCALE_INTAKE_WARMUP: '50',
      BENCH_SCALE_INTAKE_ROUNDS: '1',
      BENCH_SCALE_REQUESTS: '2',
      BENCH_SCALE_WARMUP: '0',
      BENCH_SCALE_PURGE_BUDGET_MS: '1000',
      BENCH_SCALE_READ_BUDGET_MS: '5000',
      BENCH_LOG_LEVEL: 'warn',
    },
    result: 'scale',
  },
  {
    name: 'intake-io',
    script: 'bench/intake-io.ts',
    env: { FILLED: scaleDatabase, ROUNDS: '1', EVENTS: '100', WARMUP: '50' },
    result: 'intake-io',
    after: 'scale',
  },
  {
    name: 'overview-profile',
    script: 'bench/overview-profile.tsx',
    env: { PROFILE_URL: urlOf(scaleDatabase), N: '2' },
    result: 'overview-profile',
    after: 'scale',
  },
];

interface Outcome {
  step: Step;
  ok: boolean;
  seconds: number;
  /** CPU of the benchmark's process tree (not PostgreSQL's nor the brokers'), in seconds. */
  cpuSeconds: number;
  detail: string;
}

/**
 * The reaped children's CPU at the last exit seen: each exit's increase since then is that child's
 * tree, as the children are reaped one at a time.
 */
let childrenCpuTicks = 0;

async function runStep(step: Step): Promise<Outcome> {
  const started = performance.now();
  const since = Date.now() - 1000;
  const log = join(work, `${step.name}.log`);
  const out = openSync(log, 'w');
  let code: number | null;
  try {
    const child = spawn(process.execPath, ['--import', 'tsx', join(REPO_ROOT, step.script), ...(step.args?.() ?? [])], {
      cwd: REPO_ROOT,
      // The tiny sizes last: whatever the shell sets for a full run does not reach the smoke run.
      // dist/ was built once above: a benchmark that built it again would pay a build per step.
      env: { ...process.env, BENCH_DATABASE_URL: server, BENCH_STRICT: '0', BENCH_SKIP_BUILD: '1', ...step.env },
      stdio: ['ignore', out, out],
    });
    code = await new Promise<number | null>((resolve) => {
      child.once('error', () => resolve(null));
      child.once('exit', (exitCode) => resolve(exitCode));
    });
  } finally {
    closeSync(out);
  }
  const ticksNow = reapedChildrenCpuTicks();
  const cpuSeconds = ticksToMs(ticksNow - childrenCpuTicks) / 1000;
  childrenCpuTicks = ticksNow;
  const seconds = (performance.now() - started) / 1000;
  const written = step.result === undefined || newestResult(step.result, since) !== undefined;
  const ok = code === 0 && written;
  const detail =
    code !== 0 ? `exit ${code ?? 'signal'}` : written ? '' : `no bench/results/${step.result}-*.json written`;
  return { step, ok, seconds, cpuSeconds, detail: ok ? '' : `${detail}\n${tail(log, 25).replace(/^/gm, '      | ')}` };
}

/** Runs the steps `jobs` at a time, each once the step it reads from has passed. */
async function runAll(selected: readonly Step[], jobs: number): Promise<Outcome[]> {
  const outcomes = new Map<string, Outcome>();
  const pending = [...selected];
  const running = new Set<Promise<void>>();
  const ready = (step: Step) =>
    step.after === undefined || !selected.some((other) => other.name === step.after) || outcomes.has(step.after);
  while (pending.length > 0 || running.size > 0) {
    while (running.size < jobs) {
      const index = pending.findIndex(ready);
      if (index === -1) break;
      const [step] = pending.splice(index, 1);
      if (step === undefined) break;
      const needed = step.after === undefined ? undefined : outcomes.get(step.after);
      if (needed !== undefined && !needed.ok) {
        outcomes.set(step.name, {
          step,
          ok: false,
          seconds: 0,
          cpuSeconds: 0,
          detail: `not run: ${step.after} failed`,
        });
        printOutcome(outcomes.get(step.name) as Outcome);
        continue;
      }
      const task: Promise<void> = runStep(step).then((outcome) => {
        outcomes.set(step.name, outcome);
        printOutcome(outcome);
        running.delete(task);
      });
      running.add(task);
    }
    if (running.size === 0) break;
    await Promise.race(running);
  }
  return selected.map((step) => outcomes.get(step.name)).filter((outcome) => outcome !== undefined);
}

function printOutcome(outcome: Outcome): void {
  const line =
    `  ${outcome.ok ? 'ok  ' : 'FAIL'}  ${outcome.seconds.toFixed(1).padStart(6)} s` +
    `  (CPU ${outcome.cpuSeconds.toFixed(1).padStart(5)} s)  ${outcome.step.name}`;
  console.log(outcome.ok ? line : `${line}  ${outcome.detail}`);
}

async function dropScaleDatabase(): Promise<void> {
  const admin = postgres(server, { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(`drop database if exists "${scaleDatabase}" with (force)`);
  } finally {
    await admin.end({ timeout: 5 });
  }
}

async function main(): Promise<boolean> {
  const only = (process.env.SMOKE_ONLY ?? '').split(',').filter(Boolean);
  const unknown = only.filter((name) => !steps.some((step) => step.name === name));
  if (unknown.length > 0) throw new Error(`SMOKE_ONLY: no benchmark named ${unknown.join(', ')}`);
  const selected = only.length === 0 ? steps : steps.filter((step) => only.includes(step.name));
  const jobs = Number(process.env.SMOKE_JOBS || 4);
  if (!Number.isInteger(jobs) || jobs < 1) throw new Error('SMOKE_JOBS must be a whole number >= 1');
  const started = performance.now();
  console.log(
    `bench:smoke: ${selected.length} benchmarks at tiny sizes, ${jobs} at a time, on ${new URL(server).host}`,
  );
  try {
    // Once for all: several benchmarks building dist/ at once would each pay for it.
    buildOnce();
    childrenCpuTicks = reapedChildrenCpuTicks();
    const outcomes = await runAll(selected, jobs);
    const failed = outcomes.filter((outcome) => !outcome.ok);
    const cpu = outcomes.reduce((sum, outcome) => sum + outcome.cpuSeconds, 0).toFixed(1);
    const seconds = `${((performance.now() - started) / 1000).toFixed(1)} s, CPU ${cpu} s`;
    console.log(
      failed.length === 0
        ? `bench:smoke: PASS, ${outcomes.length} of ${selected.length} benchmarks completed in ${seconds}`
        : `bench:smoke: FAIL, ${failed.map((outcome) => outcome.step.name).join(', ')} failed (${seconds})`,
    );
    return failed.length === 0 && outcomes.length === selected.length;
  } finally {
    if (selected.some((step) => step.name === 'scale')) await dropScaleDatabase();
    rmSync(work, { recursive: true, force: true });
  }
}

exitWhenDone(main);
