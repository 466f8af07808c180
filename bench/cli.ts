// `npm run bench:cli`: what one CLI command costs, and where: Node's own start (`node -e 0`), the
// built CLI run directly (`node bin/webhook-inbox.js`, what `node_modules/.bin/webhook-inbox` runs
// in an app that depends on the package), and the same through `npx webhook-inbox`, for the
// program's help, a command's help (`send --help`), and a command that reads the database
// (`senders list`). Medians of wall time and of the CPU the process tree used (the CPU is the
// steadier figure on a shared machine). A direct run of 500 ms or more is printed MISSED, and fails
// the run only with BENCH_STRICT=1. Writes bench/results/cli-*.json. Environment: CLI_ROUNDS (9).
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freshDatabase } from './lib/database.ts';
import { intFromEnv } from './lib/env.ts';
import { reapedChildrenCpuTicks, ticksToMs } from './lib/proc.ts';
import { runContext, writeResult } from './lib/results.ts';
import { buildOnce, REPO_ROOT } from './lib/service.ts';
import { formatTable } from './lib/stats.ts';
import { targetMark, verdict } from './lib/targets.ts';

const ROUNDS = intFromEnv('CLI_ROUNDS', 9, 1);
const TARGET_MS = 500;

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return Math.round(sorted[Math.floor(sorted.length / 2)] ?? Number.NaN);
};

/** How a command is run: the executable and the arguments before the command's own. */
const WAYS: Readonly<Record<string, readonly [string, readonly string[]]>> = {
  'node bin/webhook-inbox.js': [process.execPath, ['bin/webhook-inbox.js']],
  'npx webhook-inbox': ['npx', ['--no-install', 'webhook-inbox']],
};
const COMMANDS: Readonly<Record<string, readonly string[]>> = {
  '--help': ['--help'],
  'send --help': ['send', '--help'],
  'senders list': ['senders', 'list', '--json'],
};
const DIRECT = 'node bin/webhook-inbox.js';
const runs: [string, string, readonly string[]][] = [
  ['node -e 0', process.execPath, ['-e', '0']],
  ...Object.entries(WAYS).flatMap(([way, [command, before]]) =>
    Object.entries(COMMANDS).map(([name, args]): [string, string, readonly string[]] => [
      `${way} ${name}`,
      command,
      [...before, ...args],
    ]),
  ),
];

const startedAt = new Date();
buildOnce();
const dataDir = await mkdtemp(join(tmpdir(), 'bench-cli-'));
const database = await freshDatabase(dataDir);
const samples: Record<string, { wallMs: number[]; cpuMs: number[] }> = {};

try {
  const env = { ...process.env, DATABASE_URL: database.url, LOG_LEVEL: 'silent' };
  for (let round = 0; round < ROUNDS; round++) {
    for (const [key, command, args] of runs) {
      const cpuBefore = reapedChildrenCpuTicks();
      const began = performance.now();
      const run = spawnSync(command, args, { cwd: REPO_ROOT, env, stdio: 'ignore' });
      const wallMs = performance.now() - began;
      if (run.status !== 0) throw new Error(`${key} exited with ${run.status}`);
      samples[key] ??= { wallMs: [], cpuMs: [] };
      samples[key].wallMs.push(wallMs);
      samples[key].cpuMs.push(ticksToMs(reapedChildrenCpuTicks() - cpuBefore));
    }
  }
} finally {
  await database.dispose();
  await rm(dataDir, { recursive: true, force: true });
}

const figures = Object.fromEntries(
  Object.entries(samples).map(([key, { wallMs, cpuMs }]) => [key, { wallMs: median(wallMs), cpuMs: median(cpuMs) }]),
);
console.log(
  formatTable(`one CLI command, medians of ${ROUNDS} rounds: wall / CPU ms (${process.version})`, [
    ...Object.entries(figures).map(([key, figure]) => ({
      label: key,
      value: `${figure.wallMs} / ${figure.cpuMs}`,
      ...(key.startsWith(DIRECT) ? { note: `target < ${TARGET_MS}: ${targetMark(figure.wallMs < TARGET_MS)}` } : {}),
    })),
  ]),
);
const file = writeResult('cli', startedAt, { startedAt, context: runContext(), rounds: ROUNDS, figures, samples });
console.log(`\nwritten to ${file}`);
const misses = Object.entries(figures)
  .filter(([key, figure]) => key.startsWith(DIRECT) && figure.wallMs >= TARGET_MS)
  .map(([key, figure]) => `${key} ${figure.wallMs} ms, target < ${TARGET_MS}`);
if (!verdict([], misses)) process.exitCode = 1;
