// Where benchmark results go: bench/results/<name>-<ISO timestamp>.json (git-ignored), with enough
// context (commit, machine, node) to compare runs later.
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT } from './service.ts';

function git(args: string[]): string | undefined {
  try {
    return execFileSync('git', args, { cwd: REPO_ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return undefined;
  }
}

export function runContext() {
  return {
    commit: git(['rev-parse', 'HEAD']),
    dirty: (git(['status', '--porcelain']) ?? '') !== '',
    node: process.version,
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model,
  };
}

/** Writes the result and returns the file's path. */
export function writeResult(name: string, startedAt: Date, result: unknown): string {
  const folder = join(REPO_ROOT, 'bench', 'results');
  mkdirSync(folder, { recursive: true });
  // Colons are awkward in file names on some systems.
  const file = join(folder, `${name}-${startedAt.toISOString().replaceAll(':', '-')}.json`);
  writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
  return file;
}
