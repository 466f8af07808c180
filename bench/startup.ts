// `npm run bench:startup`: what the build step buys. The service from dist/ (what `npm start` runs)
// against the same sources through tsx, in alternating rounds on one migrated database: time from
// spawn to the first /healthz answer, and resident memory once idle; then the CLI's start-up, built
// against tsx, for a command that needs no database (`--version`) and one that reads it
// (`events list`). Prints medians and writes bench/results/startup-*.json. A CLI start-up of 1000 ms
// or more is printed MISSED and fails the run only with BENCH_STRICT=1. Environment: STARTUP_ROUNDS
// (7), STARTUP_IDLE_MS (1000: how long a started service idles before its RSS is read).
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freshDatabase } from './lib/database.ts';
import { intFromEnv } from './lib/env.ts';
import { runContext, writeResult } from './lib/results.ts';
import { buildOnce, REPO_ROOT, startService } from './lib/service.ts';
import { formatTable, round } from './lib/stats.ts';
import { targetMark, verdict } from './lib/targets.ts';

const ROUNDS = intFromEnv('STARTUP_ROUNDS', 7, 1);
const IDLE_MS = intFromEnv('STARTUP_IDLE_MS', 1000, 0);
const CLI_TARGET_MS = 1000;

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
};

/** Resident set size now, in MiB. */
function rssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/^VmRSS:\s+(\d+)\s+kB$/m.exec(status)?.[1] ?? Number.NaN) / 1024;
}

const SERVICE = {
  built: { script: ['bin/start.js'] },
  tsx: { nodeArgs: ['--import', 'tsx'], script: ['src/entry/node.ts'] },
} as const;
const CLI = { built: ['bin/webhook-inbox.js'], tsx: ['--import', 'tsx', 'src/cli/main.ts'] } as const;
type Variant = keyof typeof SERVICE;
/** STARTUP_VARIANTS=built leaves tsx out (bench:smoke: the tsx start-up is most of this bench's CPU). */
const VARIANTS: Variant[] = process.env.STARTUP_VARIANTS === 'built' ? ['built'] : ['built', 'tsx'];

const startedAt = new Date();
buildOnce();
const dataDir = await mkdtemp(join(tmpdir(), 'bench-startup-'));
const database = await freshDatabase(dataDir);
const logs = await mkdtemp(join(tmpdir(), 'bench-startup-logs-'));
const samples = Object.fromEntries(
  VARIANTS.map((variant) => [
    variant,
    { startMs: [] as number[], idleRssMiB: [] as number[], cliVersionMs: [] as number[], cliListMs: [] as number[] },
  ]),
) as Record<Variant, { startMs: number[]; idleRssMiB: number[]; cliVersionMs: number[]; cliListMs: number[] }>;

try {
  const env = {
    DATABASE_URL: database.url,
    ACME_WEBHOOK_SECRET: 'bench-startup-secret-0123',
    RELAY_INTERVAL_MS: '0',
    LOG_LEVEL: 'warn',
  };
  for (let round = 0; round < ROUNDS; round++) {
    for (const variant of round % 2 === 0 ? VARIANTS : [...VARIANTS].reverse()) {
      const began = performance.now();
      const service = await startService({
        env,
        stdoutFile: join(logs, `${variant}.out`),
        stderrFile: join(logs, `${variant}.err`),
        ...SERVICE[variant],
      });
      samples[variant].startMs.push(performance.now() - began);
      await new Promise((resolve) => setTimeout(resolve, IDLE_MS));
      samples[variant].idleRssMiB.push(rssMiB(service.pid));
      await service.stop();

      for (const [args, into] of [
        [['--version'], samples[variant].cliVersionMs],
        [['events', 'list', '--json'], samples[variant].cliListMs],
      ] as const) {
        const cliBegan = performance.now();
        const run = spawnSync(process.execPath, [...CLI[variant], ...args], {
          cwd: REPO_ROOT,
          env: { ...process.env, DATABASE_URL: database.url, LOG_LEVEL: 'silent' },
          stdio: 'ignore',
        });
        if (run.status !== 0) throw new Error(`${variant} CLI ${args.join(' ')} exited with ${run.status}`);
        into.push(performance.now() - cliBegan);
      }
    }
  }
} finally {
  await database.dispose();
  await rm(dataDir, { recursive: true, force: true });
  await rm(logs, { recursive: true, force: true });
}

interface Figures {
  startMs: number;
  idleRssMiB: number;
  cliVersionMs: number;
  cliListMs: number;
}
const figures = Object.fromEntries(
  VARIANTS.map((variant) => [
    variant,
    {
      startMs: Math.round(median(samples[variant].startMs)),
      idleRssMiB: round(median(samples[variant].idleRssMiB), 1),
      cliVersionMs: Math.round(median(samples[variant].cliVersionMs)),
      cliListMs: Math.round(median(samples[variant].cliListMs)),
    },
  ]),
) as Record<'built', Figures> & Partial<Record<Variant, Figures>>;
/** The tsx figure beside the built one, or n/a when tsx was left out. */
const tsx = (figure: keyof Figures) => figures.tsx?.[figure] ?? 'n/a';

console.log(
  formatTable(`start-up, built (dist/) against tsx, medians of ${ROUNDS} rounds (${process.version})`, [
    { label: 'service: spawn to /healthz (ms)', value: `${figures.built.startMs} / ${tsx('startMs')}` },
    { label: 'service: idle RSS (MiB)', value: `${figures.built.idleRssMiB} / ${tsx('idleRssMiB')}` },
    {
      label: 'CLI --version (ms)',
      value: `${figures.built.cliVersionMs} / ${tsx('cliVersionMs')}`,
      note: `target < ${CLI_TARGET_MS} (built): ${targetMark(figures.built.cliVersionMs < CLI_TARGET_MS)}`,
    },
    {
      label: 'CLI events list (ms)',
      value: `${figures.built.cliListMs} / ${tsx('cliListMs')}`,
      note: `target < ${CLI_TARGET_MS} (built): ${targetMark(figures.built.cliListMs < CLI_TARGET_MS)}`,
    },
  ]),
);
const file = writeResult('startup', startedAt, { startedAt, context: runContext(), rounds: ROUNDS, figures, samples });
console.log(`\nwritten to ${file}`);
const misses = (['cliVersionMs', 'cliListMs'] as const)
  .filter((figure) => figures.built[figure] >= CLI_TARGET_MS)
  .map((figure) => `built CLI ${figure} ${figures.built[figure]} ms, target < ${CLI_TARGET_MS}`);
if (!verdict([], misses)) process.exitCode = 1;
