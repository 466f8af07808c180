// `npm run bench:bundle`: the Worker as `wrangler deploy` would upload it (a dry run, no account),
// its size raw and gzipped against the 256 KiB target, the largest inputs so growth is visible, and
// a check that nothing Node-only (embedded PostgreSQL, the Node adapter, node:* from our code) is in
// it. Exits 1 when something is bundled that must not be; a gzipped size over the target is printed
// MISSED and fails the run only with BENCH_STRICT=1 (bench/lib/targets.ts).

import { runContext, writeResult } from './lib/results.ts';
import { formatTable, round } from './lib/stats.ts';
import { targetMark, verdict } from './lib/targets.ts';
import { buildWorkerBundle, GZIP_TARGET_BYTES } from './lib/worker-bundle.ts';

const TOP_INPUTS = 12;
const kib = (bytes: number) => `${round(bytes / 1024, 1)} KiB`;

const startedAt = new Date();
const bundle = await buildWorkerBundle();

console.log(
  formatTable('Worker bundle (wrangler deploy --dry-run)', [
    { label: 'raw', value: kib(bundle.rawBytes) },
    {
      label: 'gzip',
      value: kib(bundle.gzipBytes),
      note: `target <= ${kib(GZIP_TARGET_BYTES)}: ${targetMark(bundle.gzipBytes <= GZIP_TARGET_BYTES)}`,
    },
    { label: 'runtime imports', value: bundle.runtimeImports.join(' ') },
  ]),
);
console.log(
  `\n${formatTable(
    'By package (bytes in output)',
    bundle.packages.map(({ path, bytes }) => ({ label: path, value: kib(bytes) })),
  )}`,
);
console.log(
  `\n${formatTable(
    `Largest ${TOP_INPUTS} inputs`,
    bundle.inputs.slice(0, TOP_INPUTS).map(({ path, bytes }) => ({ label: path, value: kib(bytes) })),
  )}`,
);

const misses =
  bundle.gzipBytes > GZIP_TARGET_BYTES
    ? [`gzipped size ${kib(bundle.gzipBytes)} is over ${kib(GZIP_TARGET_BYTES)}`]
    : [];
const file = writeResult('bundle', startedAt, { context: runContext(), ...bundle, inputs: bundle.inputs.slice(0, 50) });
console.log(`\nresult: ${file}`);
if (!verdict(bundle.violations, misses)) process.exitCode = 1;
