#!/usr/bin/env node
// `npm start`: bundles the Node entry with esbuild (about 0.1 s) and runs the bundle in this very
// process. Compiled rather than run through tsx: no loader thread or per-module transform, so the
// service starts faster and its resident memory is lower (docs/scaling.md has the figures). The
// bundle goes to a file of its own and is renamed into place, so several `npm start` at once (the
// tests) never read one another's half-written output.
import { renameSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { buildSync } from 'esbuild';

const root = fileURLToPath(new URL('..', import.meta.url));
// Two levels below the root, like src/entry/node.ts: paths it resolves from its own URL stay right.
const bundle = `${root}dist/entry/node.mjs`;
const scratch = `${bundle}.${process.pid}.tmp`;
buildSync({
  entryPoints: [`${root}src/entry/node.ts`],
  bundle: true,
  platform: 'node',
  format: 'esm',
  packages: 'external',
  target: 'node20',
  outfile: scratch,
  logLevel: 'warning',
});
renameSync(scratch, bundle);
await import(pathToFileURL(bundle).href);
