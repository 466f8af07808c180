// What the thin runners in bin/ share: load one entry from dist/, as `npm run build` made it, and
// say what to do when it is not there instead of a module-not-found trace.
import { existsSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));

/** Runs `dist/<path>` in this process; exit 1 with one line when the build is missing. */
export async function runBuilt(path) {
  const file = `${root}dist/${path}`;
  if (!existsSync(file)) {
    console.error(`webhook-inbox is not built (no dist/${path}): run npm run build (npm ci runs it)`);
    process.exit(1);
  }
  await import(pathToFileURL(file).href);
}
