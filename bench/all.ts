// `npm run bench`: every benchmark, one after another on fresh databases, then one table of the
// figures that matter with their targets. Each benchmark also keeps its own JSON in bench/results/;
// this run adds `all-<time>.json` with the table's figures, so runs can be compared. A benchmark that
// could not complete fails the run; a missed target shows MISSED in the table and fails the run only
// with BENCH_STRICT=1 (which every benchmark also reads, bench/lib/targets.ts).
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { newestResult, runContext, writeResult } from './lib/results.ts';
import { REPO_ROOT } from './lib/service.ts';
import { formatTable, round } from './lib/stats.ts';
import { targetMark, verdict } from './lib/targets.ts';

type Json = Record<string, unknown>;

interface Step {
  /** The result file prefix the benchmark writes. */
  name: string;
  script: string;
  args?: string[];
  /** Run pinned to one core (figures "per core"). */
  oneCore?: boolean;
}

const steps: Step[] = [
  { name: 'intake', script: 'bench/intake.ts' },
  { name: 'intake-async', script: 'bench/intake.ts', args: ['--mode', 'async'] },
  { name: 'storm', script: 'bench/storm.ts' },
  { name: 'floor', script: 'bench/floor.ts' },
  { name: 'outbox', script: 'bench/outbox.ts' },
  { name: 'verify', script: 'bench/verify.ts', oneCore: true },
  { name: 'bundle', script: 'bench/bundle.ts' },
  { name: 'startup', script: 'bench/startup.ts' },
];

const get = (json: Json | undefined, ...path: string[]): unknown =>
  path.reduce<unknown>(
    (value, key) => (typeof value === 'object' && value !== null ? (value as Json)[key] : undefined),
    json,
  );

const num = (value: unknown): number | undefined =>
  typeof value === 'number' && Number.isFinite(value) ? value : undefined;

const collected: Record<string, Json | undefined> = {};
const failures: string[] = [];
const startedAt = new Date();
for (const step of steps) {
  const label = [step.script, ...(step.args ?? [])].join(' ');
  console.log(`\n=== ${label}`);
  const since = Date.now() - 1000;
  const command = step.oneCore ? 'taskset' : process.execPath;
  const args = [
    ...(step.oneCore ? ['-c', '0', process.execPath] : []),
    '--import',
    'tsx',
    join(REPO_ROOT, step.script),
    ...(step.args ?? []),
  ];
  const run = spawnSync(command, args, { cwd: REPO_ROOT, stdio: 'inherit' });
  if (run.status !== 0) failures.push(`${label} exited with ${run.status ?? run.signal}`);
  collected[label] = newestResult(step.name, since);
}

const sync = collected['bench/intake.ts'];
const async = collected['bench/intake.ts --mode async'];
const storm = collected['bench/storm.ts'];
const floor = collected['bench/floor.ts'];
const outbox = collected['bench/outbox.ts'];
const verify = collected['bench/verify.ts'];
const bundle = collected['bench/bundle.ts'];
const syncRate = num(get(sync, 'figures', 'eventsPerSecond'));
const asyncRate = num(get(async, 'figures', 'async', 'eventsPerSecond'));
const asyncSyncRate = num(get(async, 'figures', 'sync', 'eventsPerSecond'));
const verifyRates =
  (get(verify, 'results') as
    | Array<{ scheme: string; inFlight: number; perCpuSecond: number; signature?: string }>
    | undefined) ?? [];
const floorTargets = (get(floor, 'targets') as Array<{ key: string; eventsPerSecond: number }> | undefined) ?? [];
/** A bench:floor target's events/s as a share of the Hono floor's, in the same run. */
const shareOfHonoFloor = (key: string) => {
  const target = floorTargets.find((entry) => entry.key === key)?.eventsPerSecond;
  const hono = floorTargets.find((entry) => entry.key === 'hono')?.eventsPerSecond;
  return target === undefined || hono === undefined
    ? 'n/a'
    : `${round(target / hono, 2)}x (${target} / ${hono} events/s)`;
};
/** The slowest sender one call at a time, among those signed with a shared secret or with a key pair. */
const slowestSender = (publicKey: boolean) =>
  verifyRates
    .filter((rate) => rate.inFlight === 1 && (rate.signature === 'public key') === publicKey)
    .reduce<{ scheme: string; perCpuSecond: number } | undefined>(
      (slowest, rate) => (slowest === undefined || rate.perCpuSecond < slowest.perCpuSecond ? rate : slowest),
      undefined,
    );
/** A target's note: met or MISSED when the figure is there, n/a when it is not. */
const misses: string[] = [];
const target = (label: string, text: string, value: number | undefined, met: (value: number) => boolean) => {
  if (value === undefined) return `${text}: n/a`;
  if (!met(value)) misses.push(`${label}: ${round(value, 1)} (${text})`);
  return `${text}: ${targetMark(met(value))}`;
};
const senderRate = (rate: { scheme: string; perCpuSecond: number } | undefined) =>
  rate === undefined ? 'n/a' : `${Math.round(rate.perCpuSecond)} (${rate.scheme})`;

const rows = [
  {
    label: 'sync intake events/s',
    value: syncRate ?? 'n/a',
    note: target('sync intake events/s', 'target >= 1100', syncRate, (rate) => rate >= 1100),
  },
  {
    label: 'sync p50 / p99 (ms)',
    value: `${get(sync, 'figures', 'p50Ms') ?? 'n/a'} / ${get(sync, 'figures', 'p99Ms') ?? 'n/a'}`,
  },
  {
    label: 'sync service CPU ms/event',
    value: num(get(sync, 'figures', 'serviceCpuMsPerEvent')) ?? 'n/a',
    note: target(
      'sync service CPU ms/event',
      'target <= 0.5',
      num(get(sync, 'figures', 'serviceCpuMsPerEvent')),
      (ms) => ms <= 0.5,
    ),
  },
  { label: 'sync service peak RSS (MiB)', value: num(get(sync, 'figures', 'servicePeakRssMiB')) ?? 'n/a' },
  {
    label: 'pgbench ceiling (tx/s)',
    value: num(get(sync, 'figures', 'pgbenchTransactionsPerSecond')) ?? 'n/a',
    note: `service at ${get(sync, 'figures', 'shareOfPgbenchCeiling') ?? 'n/a'} of it`,
  },
  {
    label: 'async acceptance events/s',
    value: asyncRate ?? 'n/a',
    note: target(
      'async / sync',
      'target >= 1.5x sync',
      num(get(async, 'figures', 'asyncToSyncRatio')),
      (ratio) => ratio >= 1.5,
    ),
  },
  {
    label: 'async / sync (same run)',
    value: num(get(async, 'figures', 'asyncToSyncRatio')) ?? 'n/a',
    note: `sync measured beside it: ${asyncSyncRate ?? 'n/a'} events/s`,
  },
  {
    label: 'async worker drain events/s',
    value: num(get(async, 'figures', 'async', 'worker', 'drainPerSecond')) ?? 'n/a',
    note: `${get(async, 'figures', 'workerToSyncRatio') ?? 'n/a'}x sync; ${target('async worker drain / sync', 'target >= 1x', num(get(async, 'figures', 'workerToSyncRatio')), (ratio) => ratio >= 1)}`,
  },
  {
    label: 'async paced at the sync rate',
    value: `backlog max ${get(async, 'figures', 'async', 'worker', 'paced', 'maxBacklog') ?? 'n/a'}, end ${get(async, 'figures', 'async', 'worker', 'paced', 'backlogAtEnd') ?? 'n/a'}`,
    note: `within 1 s of intake: ${get(async, 'figures', 'async', 'worker', 'paced', 'keptUp') === true ? 'yes' : 'no'} (no target)`,
  },
  { label: 'sync vs the Hono floor', value: shareOfHonoFloor('sync'), note: 'bench:floor (no target)' },
  { label: 'async vs the Hono floor', value: shareOfHonoFloor('async'), note: 'acceptance (no target)' },
  { label: 'duplicate storm deliveries/s', value: num(get(storm, 'figures', 'eventsPerSecond')) ?? 'n/a' },
  {
    label: 'duplicate path p50 / p99 (ms)',
    value: `${get(storm, 'figures', 'duplicateP50Ms') ?? 'n/a'} / ${get(storm, 'figures', 'duplicateP99Ms') ?? 'n/a'}`,
  },
  {
    label: 'outbox drain messages/s',
    value:
      num(get(outbox, 'messagesPerSecond')) === undefined
        ? 'n/a'
        : round(num(get(outbox, 'messagesPerSecond')) ?? 0, 1),
    note: target(
      'outbox HTTP messages/s',
      'target >= 3000 (HTTP)',
      num(get(outbox, 'messagesPerSecond')),
      (rate) => rate >= 3000,
    ),
  },
  ...['nats', 'rabbitmq', 'redis'].map((broker) => {
    const rate = num(get(outbox, 'publishers', broker, 'messagesPerSecond'));
    const http = num(get(outbox, 'messagesPerSecond')) ?? 0;
    return {
      label: `outbox to ${broker} messages/s`,
      value: rate === undefined ? 'n/a' : round(rate, 1),
      note: target(
        `outbox to ${broker}`,
        'target >= 10000 and >= HTTP',
        rate,
        (value) => value >= 10_000 && value >= http,
      ),
    };
  }),
  {
    label: 'slowest HMAC verification /CPU s',
    value: senderRate(slowestSender(false)),
    note: target(
      'slowest HMAC verification',
      'target >= 20000 per sender',
      slowestSender(false)?.perCpuSecond,
      (rate) => rate >= 20_000,
    ),
  },
  {
    label: 'slowest key-pair verification /CPU s',
    value: senderRate(slowestSender(true)),
    note: 'Ed25519, ECDSA P-256 (no target)',
  },
  {
    label: 'Worker bundle gzip (KiB)',
    value: num(get(bundle, 'gzipBytes')) === undefined ? 'n/a' : round((num(get(bundle, 'gzipBytes')) ?? 0) / 1024, 1),
    note: target(
      'Worker bundle gzip',
      'target <= 256 KiB',
      num(get(bundle, 'gzipBytes')),
      (bytes) => bytes <= 256 * 1024,
    ),
  },
];
console.log(`\n${formatTable('Webhook Inbox benchmarks (one run)', rows)}`);
const file = writeResult('all', startedAt, {
  startedAt: startedAt.toISOString(),
  ...runContext(),
  rows,
  failures,
  misses,
});
console.log(`\nwritten to ${file}`);
process.exit(verdict(failures, misses) ? 0 : 1);
