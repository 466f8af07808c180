// The service under test as a child process: `node bin/start.js` (what `npm start` runs), one process
// (no npm in between), so /proc/<pid> measures the server itself. Output goes to log files;
// start-up waits for /healthz; stop() sends SIGTERM and waits for the orderly exit.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { freePort } from '../../src/entry/setup/free-port.ts';

export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

export interface ServiceOptions {
  /** Variables added to (and overriding) this process's environment; PORT is chosen here. */
  env: Record<string, string>;
  /** Files receiving the child's stdout and stderr. */
  stdoutFile: string;
  stderrFile: string;
  /** Extra node flags, e.g. ['--cpu-prof', '--cpu-prof-dir=/tmp/x']. */
  nodeArgs?: readonly string[];
  /** What node runs, from the repository's root: `npm start`'s script unless another server is measured. */
  script?: readonly string[];
  /** Another program than this Node to run with `script` as its arguments (`npm` with `start`). */
  command?: string;
  /** Where it runs: the repository's root unless another checkout (or server) is measured. */
  cwd?: string;
  /**
   * A process group of its own, stopped as a whole: `npm start` is npm, maybe a shell, then node,
   * and SIGTERM to npm alone would leave the server running. `pid` is then the group's id.
   */
  processGroup?: boolean;
  /** What answers "up": by default GET /healthz with a 2xx; a server without /healthz says otherwise. */
  ready?: { path: string; accept: (status: number) => boolean };
  startTimeoutMs?: number;
}

export interface RunningService {
  pid: number;
  origin: string;
  /** Exit code once stopped (null when killed by a signal). */
  stop(timeoutMs?: number): Promise<number | null>;
  /** Whether the process has exited. */
  exited(): boolean;
}

function exitOf(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}

export function tail(file: string, lines = 20): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '';
  }
}

const HEALTHZ = { path: '/healthz', accept: (status: number) => status >= 200 && status < 300 };

async function waitForHealth(
  origin: string,
  child: ChildProcess,
  timeoutMs: number,
  ready: NonNullable<ServiceOptions['ready']>,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`the service exited during start-up (code ${child.exitCode ?? child.signalCode})`);
    }
    try {
      const response = await fetch(`${origin}${ready.path}`, { signal: AbortSignal.timeout(1000) });
      await response.arrayBuffer();
      if (ready.accept(response.status)) return;
    } catch {
      // Not listening yet.
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`the service did not answer ${ready.path} within ${timeoutMs} ms`);
}

/** Whether any process of the group `pgid` is still there (signal 0 checks without sending). */
function groupAlive(pgid: number | undefined): boolean {
  if (pgid === undefined) return false;
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

let built = false;

/**
 * `npm run build`, once per benchmark process: the figures are of the sources as they are now.
 * BENCH_SKIP_BUILD=1 says a caller (bench:smoke) has just built them for every benchmark it runs.
 */
export function buildOnce(): void {
  if (built || process.env.BENCH_SKIP_BUILD === '1') return;
  execFileSync(process.execPath, ['bin/build.js'], { cwd: REPO_ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
  built = true;
}

export async function startService(options: ServiceOptions): Promise<RunningService> {
  buildOnce();
  const port = await freePort();
  const stdout = openSync(options.stdoutFile, 'a');
  const stderr = openSync(options.stderrFile, 'a');
  let child: ChildProcess;
  try {
    const args = [...(options.nodeArgs ?? []), ...(options.script ?? ['bin/start.js'])];
    child = spawn(options.command ?? process.execPath, args, {
      cwd: options.cwd ?? REPO_ROOT,
      env: { ...process.env, ...options.env, PORT: String(port) },
      stdio: ['ignore', stdout, stderr],
      detached: options.processGroup === true,
    });
  } finally {
    // The child holds its own copies of the descriptors.
    closeSync(stdout);
    closeSync(stderr);
  }
  const exit = exitOf(child);
  const origin = `http://127.0.0.1:${port}`;
  const stop = async (timeoutMs = 15_000): Promise<number | null> => {
    if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
    const signal = (name: NodeJS.Signals) => {
      try {
        if (options.processGroup && child.pid !== undefined) process.kill(-child.pid, name);
        else child.kill(name);
      } catch {
        // Already gone.
      }
    };
    signal('SIGTERM');
    const timer = setTimeout(() => signal('SIGKILL'), timeoutMs);
    try {
      const code = await exit;
      // npm may exit before the server it started has finished its orderly shutdown.
      while (options.processGroup && groupAlive(child.pid)) await new Promise((resolve) => setTimeout(resolve, 50));
      return code;
    } finally {
      clearTimeout(timer);
    }
  };

  try {
    if (child.pid === undefined) throw new Error('the service could not be spawned');
    await waitForHealth(origin, child, options.startTimeoutMs ?? 30_000, options.ready ?? HEALTHZ);
  } catch (error) {
    await stop(5_000);
    const detail = tail(options.stderrFile) || tail(options.stdoutFile);
    throw new Error(`${error instanceof Error ? error.message : String(error)}${detail ? `\n${detail}` : ''}`);
  }
  return {
    pid: child.pid,
    origin,
    stop,
    exited: () => child.exitCode !== null || child.signalCode !== null,
  };
}

/**
 * The service as the intake benchmarks run it: production mode on `databaseUrl` with one acme secret,
 * and the outbox relay off (bench:outbox measures it; here it would add its own work and a log line
 * per message to the intake's figures).
 */
export function intakeServiceEnv(databaseUrl: string, secret: string, extra: Record<string, string> = {}) {
  return {
    NODE_ENV: 'production',
    DATABASE_URL: databaseUrl,
    ACME_WEBHOOK_SECRET: secret,
    LOG_LEVEL: 'info',
    RELAY_INTERVAL_MS: '0',
    ...extra,
  };
}
