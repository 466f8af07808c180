// The suite as `npm run mutate:narrow` runs it (test/stryker.narrow.config.mjs): only the test files
// MUTATE_TESTS names (comma-separated paths or globs), on the server DATABASE_URL names. For a module
// whose related files are most of the suite, whose dry run and mutants then cost minutes each on this
// machine: a subset of the suite, so its score is a lower bound on what `npm run mutate` reports.
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const tests = (process.env.MUTATE_TESTS ?? '')
  .split(',')
  .map((path) => path.trim())
  .filter((path) => path !== '');
if (tests.length === 0) throw new Error('npm run mutate:narrow needs MUTATE_TESTS (e.g. test/stored.test.ts)');
if (process.env.DATABASE_URL === undefined || process.env.DATABASE_URL === '') {
  throw new Error('npm run mutate:narrow needs DATABASE_URL (e.g. postgres://postgres@127.0.0.1:5432/postgres)');
}

export default defineConfig({
  test: {
    root: fileURLToPath(new URL('..', import.meta.url)),
    globalSetup: ['test/global-setup.ts'],
    include: tests,
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
