// The one test command (`npm test`): every file against real PostgreSQL, each in its own database.
// Three projects (test/tiers.ts says which file goes where): `node` runs the app in the test's own
// process, the fast tier; `process` runs the files that need a real process (the service, the CLI,
// a browser); `workers` runs the Worker entry inside workerd (@cloudflare/vitest-pool-workers),
// reaching PostgreSQL through its Hyperdrive binding. With TEST_NODE_LINE_ONLY=1 (test/on-node.sh)
// only the files whose behaviour depends on the Node line run. Limits come from TEST_TIMEOUT_SCALE
// (test/helpers/patience.ts); no test depends on how fast the machine is.
import { availableParallelism } from 'node:os';
import { cloudflareTest } from '@cloudflare/vitest-pool-workers';
import { defineConfig } from 'vitest/config';
import { HOOK_TIMEOUT_MS, TEST_TIMEOUT_MS } from './test/helpers/patience.ts';
import { ProcessFilesFirst } from './test/sequencer.ts';
import { NODE_LINE_FILES, nodeTestFiles, processFiles } from './test/tiers.ts';
import { workerPoolOptions } from './test/worker-pool.ts';

const timeouts = { testTimeout: TEST_TIMEOUT_MS, hookTimeout: HOOK_TIMEOUT_MS };

/**
 * postgres.js 3.4.9 in workerd rejects a socket read with exactly this message after `end()` closed
 * the socket (porsager/postgres#1196, #1202): noise from a finished client, not a failure. Vitest
 * reads this hook from the root config only; it drops that one message and nothing else.
 */
const POSTGRES_JS_CANCELLED_STREAM = 'Stream was cancelled.';

/**
 * Node-side files share their worker processes (`isolate: false`): each file still has a database of
 * its own and builds its app from dependencies passed in, so nothing it needs lives in a module's
 * state, and a fresh process per file cost two thirds of the run in module loading (decision 0018).
 *
 * Files at once. Most of a file's time is spent waiting on PostgreSQL, a broker or a child process,
 * so twice the cores keeps a 2-core machine busy without queueing every file behind the slowest
 * (vitest's own default, cores - 1, runs one file at a time there). TEST_WORKERS overrides it.
 */
const workers = Number(process.env.TEST_WORKERS ?? '') || Math.max(2, availableParallelism() * 2);

const nodeLineOnly = process.env.TEST_NODE_LINE_ONLY === '1';
const needProcess = processFiles();
const onLine = (files: string[]) => (nodeLineOnly ? files.filter((file) => file in NODE_LINE_FILES) : files);
const inProcess = onLine(nodeTestFiles().filter((file) => !needProcess.includes(file)));

export default defineConfig({
  test: {
    // Root-level, so each runs once for every project; the second one's teardown runs first.
    globalSetup: ['test/global-setup.ts', ...(nodeLineOnly ? [] : ['test/worker-global-setup.ts'])],
    onUnhandledError: (error) => error.message !== POSTGRES_JS_CANCELLED_STREAM,
    maxWorkers: workers,
    sequence: { sequencer: ProcessFilesFirst },
    projects: [
      { test: { name: 'node', include: inProcess, isolate: false, ...timeouts } },
      { test: { name: 'process', include: onLine(needProcess), isolate: false, ...timeouts } },
      ...(nodeLineOnly
        ? []
        : [
            {
              plugins: [cloudflareTest(workerPoolOptions)],
              test: {
                name: 'workers',
                include: ['test/worker/**/*.test.ts'],
                ...timeouts,
                // Two known ways for @cloudflare/vitest-pool-workers 0.23 to leave workerd running and
                // the run unfinished after every test passed (seen once in .ci/run): files in parallel
                // runtimes (cloudflare/workers-sdk#14903) and a Worker's console line relayed while a
                // file closes (#15498, #15719). Six files one after another cost about ten seconds.
                fileParallelism: false,
                disableConsoleIntercept: true,
              },
            },
          ]),
    ],
  },
});
