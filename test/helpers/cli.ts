// The operator CLI as the tests run it: the same program `bin/webhook-inbox.js` runs (`runCli` of
// src/cli/program.ts), with exactly the environment given (plus PATH and HOME), logs silenced, its
// exit code and everything it printed. In the test's own process by default: a CLI process costs
// 0.2 s on a quiet machine and several seconds on a busy one, and what a command does is the same
// either way. `runCliProcess` runs the built binary as a real process, for the few tests whose
// subject is the process itself (exit status, the build, the terminal).
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli as runProgram } from '../../src/cli/program.ts';
import { cleanEnv, run } from './process.ts';

/**
 * An empty DATA_DIR unless the test names one: the CLI looks for `npm start`'s embedded server there,
 * and one a developer left running in the checkout's `.data` must not answer for the test.
 */
const emptyDataDir = mkdtempSync(join(tmpdir(), 'webhook-inbox-cli-'));

const cliEnv = (env: Record<string, string>) => cleanEnv({ LOG_LEVEL: 'silent', DATA_DIR: emptyDataDir, ...env });

export interface CliResult {
  code: number | null;
  /** stdout and stderr as one text, in the order they were written. */
  output: string;
}

/** The CLI's program in this process, without a terminal (no questions asked, no progress drawn). */
export async function runCli(args: readonly string[], env: Record<string, string>): Promise<CliResult> {
  let output = '';
  const write = (line: string) => {
    output += `${line}\n`;
  };
  const code = await runProgram(args, { env: cliEnv(env), out: write, err: write });
  return { code, output };
}

/** `bin/webhook-inbox.js` as a real process: the built CLI, as `npx webhook-inbox` runs it. */
export async function runCliProcess(args: readonly string[], env: Record<string, string>): Promise<CliResult> {
  const child = run(process.execPath, ['bin/webhook-inbox.js', ...args], cliEnv(env));
  const { code } = await child.exited;
  return { code, output: child.output() };
}
