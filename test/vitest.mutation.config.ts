// The suite as `npm run mutate` (StrykerJS, stryker.config.mjs) runs it: the node project only, on the
// PostgreSQL server DATABASE_URL names. A mutant lives in the sources Stryker instruments and runs in
// vitest's own process, so the files that test the service through a child process, the build or a
// browser (they run dist/, where no mutant is ever active) are left out: they would cost minutes per
// run and could not kill anything. `npm test` keeps using vitest.config.ts, unchanged.
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

if (process.env.DATABASE_URL === undefined || process.env.DATABASE_URL === '') {
  // An embedded server per Stryker test runner would start (and be left behind by a killed one) on
  // every run: mutation runs use the server that is already up.
  throw new Error('npm run mutate needs DATABASE_URL (e.g. postgres://postgres@127.0.0.1:5432/postgres)');
}

/** Files that drive the built service, the CLI, another Node line or a browser as child processes. */
const throughChildProcesses = [
  'test/admin-dashboard.test.ts',
  'test/async-crash.test.ts',
  'test/async-service.test.ts',
  'test/build.test.ts',
  'test/chaos.test.ts',
  'test/cli-*.test.ts',
  'test/connection-shedding.test.ts',
  'test/db-start.test.ts',
  'test/exit-status.test.ts',
  'test/node-line.test.ts',
  'test/outbox-crash.test.ts',
  'test/production-start.test.ts',
  'test/start*.test.ts',
  'test/worker-bundle.test.ts',
];

export default defineConfig({
  test: {
    root: fileURLToPath(new URL('..', import.meta.url)),
    globalSetup: ['test/global-setup.ts'],
    include: ['test/**/*.test.ts'],
    exclude: ['test/worker/**', ...throughChildProcesses],
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
