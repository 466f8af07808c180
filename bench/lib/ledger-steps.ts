// The steps of the per-delivery cost ledger (bench/ledger.ts), and which code belongs to each: a V8
// CPU profile of the service is split by the first frame of each sample's stack (leaf first) that
// belongs to a step. The service runs bundled (dist/), so a frame's source file is found from the
// bundle's own module markers (esbuild writes `// src/inbox/intake.ts` where each module begins).
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { CallFrame } from './cpuprofile.ts';

export const STEPS = [
  'verification',
  'pause and backlog gates',
  'claim (inbox insert, group commit)',
  'event and outbox counters (triggers)',
  'domain write',
  'outbox',
  'async worker (lock, complete)',
  'delivery log',
  'rejection log',
  'tracing seam',
  'answer (report, metrics, log line)',
  'database client (postgres.js, drizzle)',
  'the rest (HTTP, hono, framework, GC)',
] as const;
export type Step = (typeof STEPS)[number];

/** Source files (prefixes) and the step they serve; files absent here are walked past (their callers decide). */
const BY_FILE: readonly (readonly [string, Step])[] = [
  ['src/senders/', 'verification'],
  ['src/inbox/pause-gate.ts', 'pause and backlog gates'],
  ['src/inbox/accept.ts', 'pause and backlog gates'],
  ['src/inbox/event-rows.ts', 'claim (inbox insert, group commit)'],
  ['src/inbox/committer.ts', 'claim (inbox insert, group commit)'],
  ['src/inbox/process.ts', 'claim (inbox insert, group commit)'],
  ['src/db/timeouts.ts', 'claim (inbox insert, group commit)'],
  ['src/domain/', 'domain write'],
  ['node_modules/zod/', 'domain write'],
  ['zod', 'domain write'],
  ['dataloader', 'domain write'],
  ['src/outbox/', 'outbox'],
  ['src/inbox/worker.ts', 'async worker (lock, complete)'],
  ['src/inbox/stored.ts', 'async worker (lock, complete)'],
  ['src/inbox/worker-report.ts', 'async worker (lock, complete)'],
  ['src/inbox/intake-load.ts', 'async worker (lock, complete)'],
  ['src/db/lease.ts', 'async worker (lock, complete)'],
  ['src/inbox/delivery-log.ts', 'delivery log'],
  ['src/inbox/rejection-log.ts', 'rejection log'],
  ['src/inbox/rejections.ts', 'rejection log'],
  ['src/lib/tracing.ts', 'tracing seam'],
  ['src/inbox/intake-report.ts', 'answer (report, metrics, log line)'],
  ['src/lib/metrics.ts', 'answer (report, metrics, log line)'],
  ['src/lib/logger.ts', 'answer (report, metrics, log line)'],
  ['src/lib/log-sampler.ts', 'answer (report, metrics, log line)'],
  ['src/inbox/intake.ts', 'the rest (HTTP, hono, framework, GC)'],
  ['src/app.ts', 'the rest (HTTP, hono, framework, GC)'],
  ['src/inbox/deadline.ts', 'the rest (HTTP, hono, framework, GC)'],
];

/** Functions that serve another step than their file's. */
const BY_FUNCTION: ReadonlyMap<string, Step> = new Map([
  ['#logDelivery', 'delivery log'],
  ['planFor', 'domain write'],
  ['newTimeOrderedId', 'outbox'],
]);

/** Where each module of a bundle begins: its first line (0-based) and its source path. */
function bundleModules(bundleFile: string): { line: number; module: string }[] {
  const starts: { line: number; module: string }[] = [];
  const lines = readFileSync(bundleFile, 'utf8').split('\n');
  for (const [line, text] of lines.entries()) {
    const match = /^\/\/ ((?:src|node_modules)\/\S+)$/.exec(text);
    if (match?.[1] !== undefined) starts.push({ line, module: match[1] });
  }
  return starts;
}

/** The frame classifier and fallback attributeCpuProfile takes, for a service run from `bundleFile`. */
export function ledgerClassifier(bundleFile: string) {
  const starts = bundleModules(bundleFile);
  const bundleUrl = new URL(`file://${bundleFile}`).href;
  const sourceOf = (frame: CallFrame): string => {
    if (frame.url === bundleUrl || frame.url === bundleFile) {
      let low = 0;
      let high = starts.length - 1;
      let found = '';
      while (low <= high) {
        const middle = (low + high) >> 1;
        const start = starts[middle] as { line: number; module: string };
        if (start.line <= frame.lineNumber) {
          found = start.module;
          low = middle + 1;
        } else high = middle - 1;
      }
      return found;
    }
    if (frame.url.startsWith('file://')) {
      const path = fileURLToPath(frame.url);
      const at = path.lastIndexOf('node_modules/');
      return at === -1 ? path : path.slice(at);
    }
    return frame.url;
  };
  const classify = (frame: CallFrame): Step | undefined => {
    const byName = BY_FUNCTION.get(frame.functionName);
    if (byName !== undefined) return byName;
    const source = sourceOf(frame);
    return BY_FILE.find(([prefix]) => source.startsWith(prefix) || source.startsWith(`node_modules/${prefix}/`))?.[1];
  };
  const fallback = (leaf: CallFrame): Step => {
    const source = sourceOf(leaf);
    return /node_modules\/(postgres|drizzle-orm)\//.test(source) || /^node_modules\/(postgres|drizzle-orm)/.test(source)
      ? 'database client (postgres.js, drizzle)'
      : 'the rest (HTTP, hono, framework, GC)';
  };
  return { classify, fallback };
}
