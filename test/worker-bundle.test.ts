// The Worker as wrangler bundles it for upload: within the size target, and with nothing Node-only
// inside (no embedded PostgreSQL, no Node adapter, no node:* reached from the portable app).
import { describe, expect, it } from 'vitest';
import { buildWorkerBundle, GZIP_TARGET_BYTES } from '../bench/lib/worker-bundle.ts';

describe('the Worker bundle', () => {
  it('holds only what runs in workerd, within the size target', async () => {
    const bundle = await buildWorkerBundle();

    expect(bundle.violations).toEqual([]);
    expect(bundle.gzipBytes).toBeLessThanOrEqual(GZIP_TARGET_BYTES);
    expect(bundle.inputs.map((input) => input.path)).toContain('src/app.ts');
    // Only what workerd itself provides: the driver's socket and its nodejs_compat modules.
    expect(bundle.runtimeImports.every((module) => /^(cloudflare|node):/.test(module))).toBe(true);
  }, 60_000);
});
