// `npm run mutate`: StrykerJS over the modules that keep the service's promises (docs/development.md,
// "Mutation testing"). A tool for engineers, not a CI step. One module at a time:
//   npm run mutate -- --mutate src/senders/described.ts
// At the top level because that is where `stryker run` looks for it, so the command needs no path.
/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  testRunner: 'vitest',
  vitest: {
    configFile: 'test/vitest.mutation.config.ts',
    // The dry run runs only the test files that import the mutated modules (vitest's related-file
    // selection); per-test coverage then runs each mutant against the tests that reach it.
    related: true,
  },
  coverageAnalysis: 'perTest',
  // Stryker rewrites the tsconfig's `extends` and `references` for its sandbox through TypeScript's
  // JavaScript API, which TypeScript 7 (native) no longer has; ours has neither, so it is pointed at a
  // file that does not exist and the step is skipped.
  tsconfigFile: 'no-tsconfig-to-rewrite.json',
  // A static mutant (a module-level constant) would need every test file re-run for each: too slow
  // for this machine; they are reported as ignored, not as survivors.
  ignoreStatic: true,
  mutate: [
    'src/senders/senders.ts',
    'src/senders/described.ts',
    'src/inbox/committer.ts',
    'src/inbox/event-rows.ts',
    'src/inbox/worker.ts',
    'src/outbox/relay.ts',
    'src/outbox/message-rows.ts',
    'src/domain/*.ts',
  ],
  // Results kept between runs (git-ignored, per machine): a mutant whose code and tests did not
  // change is not run again.
  incremental: true,
  incrementalFile: '.stryker/incremental.json',
  tempDirName: '.stryker/tmp',
  // Two cores, shared with whoever else works on the machine.
  concurrency: 1,
  timeoutMS: 20_000,
  reporters: ['clear-text', 'progress', 'html', 'json'],
  htmlReporter: { fileName: '.stryker/report/mutation.html' },
  jsonReporter: { fileName: '.stryker/report/mutation.json' },
  // The sandbox copies only what a test run needs.
  ignorePatterns: ['.stryker', '.data', 'bench/results', 'test/artifacts', '.wrangler', 'dist'],
  thresholds: { high: 90, low: 80, break: null },
};
