// `npm run mutate:narrow -- --mutate <module>`: a module's mutants against the test files MUTATE_TESTS
// names (test/vitest.narrow-mutation.config.ts), not vitest's related files. For the intake's modules,
// whose related files are most of the suite: their dry run alone took 5 minutes on a loaded machine,
// and a mutant 15 s. A lower bound on `npm run mutate`'s score. Own cache and reports beside the main
// ones (the cache is per test selection: keep MUTATE_TESTS the same between a run and its re-run).
import base from '../stryker.config.mjs';

export default {
  ...base,
  vitest: { configFile: 'test/vitest.narrow-mutation.config.ts', related: false },
  incrementalFile: '.stryker/narrow/incremental.json',
  tempDirName: '.stryker/narrow/tmp',
  htmlReporter: { fileName: '.stryker/narrow/report/mutation.html' },
  jsonReporter: { fileName: '.stryker/narrow/report/mutation.json' },
};
