// `npm run mutate:engine`: the sender-description engine's mutants (src/senders/described.ts and
// content-digest.ts) against its fast tests alone (no database, no HTTP), in minutes rather than the
// two hours the whole suite needs on this machine. Those tests are a subset of the suite, so the score
// is a lower bound on what `npm run mutate` would report. Own cache and reports beside the main ones.
import base from '../stryker.config.mjs';

export default {
  ...base,
  mutate: ['src/senders/described.ts', 'src/senders/content-digest.ts'],
  vitest: { configFile: 'test/vitest.engine-mutation.config.ts', related: false },
  incrementalFile: '.stryker/engine/incremental.json',
  tempDirName: '.stryker/engine/tmp',
  htmlReporter: { fileName: '.stryker/engine/report/mutation.html' },
  jsonReporter: { fileName: '.stryker/engine/report/mutation.json' },
};
