#!/usr/bin/env node
// `npm run build` (and `npm ci`, through `prepare`): bundles each Node entry with esbuild into
// dist/, once, so that `npm start` and the CLI only run what was built and never write into the
// package (a read-only image works; a compile error stops the build, not a start).
//
// Bundled rather than run through tsx or Node's type stripping (which does not read .tsx): one file
// per entry, no loader thread, no per-module transform; docs/development.md has the start-up and
// memory figures. Packages stay external, loaded from node_modules as installed (and patched), all
// but drizzle-orm: Node 22 and later read a package's package.json again for each module they
// resolve in it, and drizzle-orm's is 175 KiB over some 300 modules (on Node 26, 0.3 s and 150 MiB
// of heap just to import drizzle-orm/pg-core, against 0.1 s on Node 20). Inlined, it costs nothing.
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));

/**
 * Source entry -> built file. Every output sits two levels below the package root, as its source
 * does, so the paths the code resolves from its own URL (`../../drizzle`, `../../package.json`)
 * point at the same files from src/ and from dist/.
 */
export const ENTRIES = {
  'src/entry/node.ts': 'dist/entry/node.mjs',
  'src/entry/migrate.ts': 'dist/entry/migrate.mjs',
  'src/entry/db-start.ts': 'dist/entry/db-start.mjs',
  'src/cli/main.ts': 'dist/cli/main.mjs',
};

/** Packages bundled into dist/ instead of loaded from node_modules (see above). */
const INLINED = new Set(['drizzle-orm']);

/** Every other package the service depends on, loaded from node_modules at run time. */
function externalPackages() {
  const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  const names = [...Object.keys(manifest.dependencies), ...Object.keys(manifest.devDependencies)];
  return names.filter((name) => !INLINED.has(name)).flatMap((name) => [name, `${name}/*`]);
}

/** Builds every entry; each file is written beside its place and renamed in, so a reader never sees half. */
export async function build() {
  const { build: bundle } = await import('esbuild');
  const result = await bundle({
    absWorkingDir: root,
    entryPoints: Object.keys(ENTRIES),
    outdir: 'dist',
    outbase: 'src',
    outExtension: { '.js': '.mjs' },
    bundle: true,
    // What an entry imports dynamically (each CLI command's module) is a chunk of its own, loaded with
    // its packages only when it runs: a CLI process loads one command, not all of them. Chunks sit two
    // levels down as well (dist/chunks/), so paths resolved from their own URL hold there too.
    splitting: true,
    chunkNames: 'chunks/[name]-[hash]',
    platform: 'node',
    format: 'esm',
    external: externalPackages(),
    target: 'node22',
    sourcemap: 'linked',
    write: false,
    logLevel: 'warning',
  });
  for (const file of result.outputFiles) {
    mkdirSync(dirname(file.path), { recursive: true });
    const scratch = `${file.path}.${process.pid}.tmp`;
    writeFileSync(scratch, file.contents);
    renameSync(scratch, file.path);
  }
  // Chunks are named by their content: those of earlier builds are no one's any more.
  const written = new Set(result.outputFiles.map((file) => file.path));
  const chunks = join(root, 'dist', 'chunks');
  for (const name of existsSync(chunks) ? readdirSync(chunks) : []) {
    if (!written.has(join(chunks, name))) rmSync(join(chunks, name));
  }
  return result.outputFiles.map((file) => relative(root, file.path));
}

/** Whether esbuild is installed: a production install (`npm ci --omit=dev`) has no build tools. */
async function canBuild() {
  try {
    await import('esbuild');
    return true;
  } catch {
    return false;
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  if (await canBuild()) {
    const started = performance.now();
    const written = await build();
    const entries = written.filter((path) => path.endsWith('.mjs') && !path.includes('/chunks/'));
    console.log(`built ${entries.join(', ')} in ${Math.round(performance.now() - started)} ms`);
  } else if (Object.values(ENTRIES).every((path) => existsSync(join(root, path)))) {
    console.log('build: esbuild is not installed (a production install); dist/ as built before is kept');
  } else {
    console.error('build: dist/ is missing and esbuild is not installed: build with dev dependencies (npm ci)');
    process.exitCode = 1;
  }
}
