// The engine's fast tests as `npm run mutate:engine` runs them (test/stryker.engine.config.mjs): the
// files that exercise the sender descriptions without a database or a server. Providers are built
// inside these tests, not when a file loads, so Stryker can tell which test reaches which mutant.
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    root: fileURLToPath(new URL('..', import.meta.url)),
    include: [
      'test/described-engine.test.ts',
      'test/sender-vectors.test.ts',
      'test/config.test.ts',
      'test/simulator.test.ts',
    ],
    testTimeout: 30_000,
  },
});
