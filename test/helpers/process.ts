// Running the real entry points as child processes, with an environment the test controls fully.
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { WAIT_MS } from './patience.ts';

export interface Running {
  child: ChildProcess;
  output: () => string;
  /** Resolves with the first output line that matches. */
  waitForLine(pattern: RegExp, timeoutMs?: number): Promise<string>;
  /** Resolves once the process has ended and its output has been read to the end. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** The parent's PATH and HOME only: no DATABASE_URL or secrets leak in from the test run. */
export function cleanEnv(extra: Record<string, string>): Record<string, string> {
  return { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...extra };
}

export function run(command: string, args: string[], env: Record<string, string>): Running {
  const child = spawn(command, args, { env, cwd: process.cwd(), stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const waiters: Array<{ pattern: RegExp; resolve: (line: string) => void }> = [];
  const onData = (chunk: Buffer) => {
    output += chunk.toString('utf8');
    for (const waiter of [...waiters]) {
      const line = output.split('\n').find((candidate) => waiter.pattern.test(candidate));
      if (line !== undefined) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(line);
      }
    }
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);
  // 'close', not 'exit': it comes after the last byte of stdout and stderr was read, so output() read
  // once the process is over holds every line it wrote, however late the pipes drain on a busy machine.
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('close', (code, signal) => resolve({ code, signal })),
  );
  return {
    child,
    output: () => output,
    exited,
    waitForLine: (pattern, timeoutMs = WAIT_MS) =>
      new Promise((resolve, reject) => {
        const existing = output.split('\n').find((line) => pattern.test(line));
        if (existing !== undefined) return resolve(existing);
        const timer = setTimeout(() => reject(new Error(`no line matching ${pattern} in:\n${output}`)), timeoutMs);
        waiters.push({
          pattern,
          resolve: (line) => {
            clearTimeout(timer);
            resolve(line);
          },
        });
        void exited.then(() => {
          clearTimeout(timer);
          reject(new Error(`exited before ${pattern}:\n${output}`));
        });
      }),
  };
}

// The `start` script itself, run without npm in between so signals reach the service directly.
const startScript = (JSON.parse(readFileSync('package.json', 'utf8')).scripts.start as string).split(' ');

/** `npm start` with exactly `env` (plus PATH and HOME). */
export function startService(env: Record<string, string>): Running {
  return run(process.execPath, startScript.slice(startScript[0] === 'node' ? 1 : 0), cleanEnv(env));
}

export interface ServiceUnderTest extends Running {
  origin: string;
}

/** Starts the service on a free port and waits until it listens. */
export async function startListeningService(env: Record<string, string>): Promise<ServiceUnderTest> {
  const service = startService({ PORT: '0', ...env });
  let line: string;
  try {
    line = await service.waitForLine(/"msg":"listening"/);
  } catch (error) {
    // A service that never said it listens must not outlive the test that started it.
    service.child.kill('SIGKILL');
    throw error;
  }
  const { port } = JSON.parse(line) as { port: number };
  return { ...service, origin: `http://127.0.0.1:${port}` };
}
