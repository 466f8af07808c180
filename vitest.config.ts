// The one test command (`npm test`): every file against real PostgreSQL, each in its own database.
// Two projects: `node` runs the app in Node; `workers` runs the Worker entry inside workerd
// (@cloudflare/vitest-pool-workers), reaching PostgreSQL through its Hyperdrive binding.
import { cloudflareTest } from '@cloudflare/vitest-pool-workers';
import { defineConfig } from 'vitest/config';
import { workerPoolOptions } from './test/worker-pool.ts';

const timeouts = { testTimeout: 30_000, hookTimeout: 60_000 };

/**
 * postgres.js 3.4.9 in workerd rejects a socket read with exactly this message after `end()` closed
 * the socket (porsager/postgres#1196, #1202): noise from a finished client, not a failure. Vitest
 * reads this hook from the root config only; it drops that one message and nothing else.
 */
const POSTGRES_JS_CANCELLED_STREAM = 'Stream was cancelled.';

export default defineConfig({
  test: {
    // Root-level, so each runs once for both projects; the second one's teardown runs first.
    globalSetup: ['test/global-setup.ts', 'test/worker-global-setup.ts'],
    onUnhandledError: (error) => error.message !== POSTGRES_JS_CANCELLED_STREAM,
    projects: [
      {
        test: { name: 'node', include: ['test/**/*.test.ts'], exclude: ['test/worker/**'], ...timeouts },
      },
      {
        plugins: [cloudflareTest(workerPoolOptions)],
        test: {
          name: 'workers',
          include: ['test/worker/**/*.test.ts'],
          ...timeouts,
          // Two known ways for @cloudflare/vitest-pool-workers 0.23 to leave workerd running and the
          // run unfinished after every test passed (seen once in .ci/run): files in parallel
          // runtimes (cloudflare/workers-sdk#14903) and a Worker's console line relayed while a
          // file closes (#15498, #15719). Six files one after another cost about ten seconds.
          fileParallelism: false,
          disableConsoleIntercept: true,
        },
      },
    ],
  },
});
