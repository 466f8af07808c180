// Where benchmark results go: bench/results/<name>-<ISO timestamp>.json (git-ignored), with enough
// context (commit, machine, node) to compare runs later.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT } from './service.ts';

type Json = Record<string, unknown>;
const RESULTS_FOLDER = join(REPO_ROOT, 'bench', 'results');

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
  const folder = RESULTS_FOLDER;
  mkdirSync(folder, { recursive: true });
  // Colons are awkward in file names on some systems.
  const file = join(folder, `${name}-${startedAt.toISOString().replaceAll(':', '-')}.json`);
  writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
  return file;
}

/** When a result was written: its `startedAt`, else the time in its file name. */
function resultTime(file: string, json: Json): number {
  const started = Date.parse(String(json.startedAt ?? ''));
  if (Number.isFinite(started)) return started;
  const stamp = /-(\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}\.\d{3}Z)\.json$/.exec(file)?.[1];
  return stamp === undefined ? 0 : Date.parse(stamp.replace(/T(\d{2})-(\d{2})-(\d{2})/, 'T$1:$2:$3'));
}

/**
 * The newest result of benchmark `name` written at or after `since`, or undefined when it wrote none.
 * Only `<name>-<timestamp>.json`: `intake` is not `intake-async`'s or `intake-io`'s.
 */
export function newestResult(name: string, since: number): Json | undefined {
  const pattern = new RegExp(`^${name.replace(/[^a-z0-9]/gi, (c) => `\\${c}`)}-\\d{4}-\\d{2}-\\d{2}T.*\\.json$`);
  let newest: { at: number; json: Json } | undefined;
  let entries: string[];
  try {
    entries = readdirSync(RESULTS_FOLDER);
  } catch {
    return undefined;
  }
  for (const entry of entries.filter((candidate) => pattern.test(candidate))) {
    const file = join(RESULTS_FOLDER, entry);
    const json = JSON.parse(readFileSync(file, 'utf8')) as Json;
    const at = resultTime(file, json);
    if (at >= since && (newest === undefined || at > newest.at)) newest = { at, json };
  }
  return newest?.json;
}
