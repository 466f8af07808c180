// The Worker as wrangler bundles it for upload: within the size target with the tracing SDK inside,
// with nothing Node-only (no embedded PostgreSQL, no Node adapter, no node:* reached from the portable
// app), and with zod's English locale only (wrangler.toml's [alias]; docs/decisions/0016).
import { describe, expect, it } from 'vitest';
import { buildWorkerBundle, GZIP_TARGET_BYTES } from '../bench/lib/worker-bundle.ts';

describe('the Worker bundle', () => {
  it('holds only what runs in workerd, within the size target', async () => {
    const bundle = await buildWorkerBundle();

    expect(bundle.violations).toEqual([]);
    expect(bundle.gzipBytes).toBeLessThanOrEqual(GZIP_TARGET_BYTES);
    const paths = bundle.inputs.map((input) => input.path);
    expect(paths).toContain('src/app.ts');
    expect(paths).toContain('src/entry/setup/tracing-sdk.ts');
    expect(paths.filter((path) => path.includes('/zod/v4/locales/'))).toEqual(['node_modules/zod/v4/locales/en.js']);
    // Only what workerd itself provides: the driver's socket and its nodejs_compat modules.
    expect(bundle.runtimeImports.every((module) => /^(cloudflare|node):/.test(module))).toBe(true);
  });
});
