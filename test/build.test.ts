// Build once, run many: `npm start` runs dist/ as `npm run build` made it and writes nothing into the
// package. The built service starts from a read-only bind mount of the checkout (a mount namespace
// of its own, where this machine allows one), takes a delivery, stops, and the package's files hash
// the same before and after.
// Needs a process: the built service run from a read-only copy of the package, as an image runs it.
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { acmeEvent, deliverAcme } from './helpers/acme.ts';
import { useTestDatabase } from './helpers/database.ts';
import { cleanEnv, run } from './helpers/process.ts';

const { url } = await useTestDatabase();
const root = process.cwd();
const SECRET = 'build-test-secret-0123456789';

/** Every file under the package's run-time folders, with its content hash. */
function packageFiles(): Map<string, string> {
  const files = new Map<string, string>();
  const walk = (relative: string) => {
    const path = join(root, relative);
    if (statSync(path).isDirectory()) {
      for (const entry of readdirSync(path)) walk(join(relative, entry));
    } else {
      files.set(relative, createHash('sha256').update(readFileSync(path)).digest('hex'));
    }
  };
  for (const top of ['bin', 'dist', 'drizzle', 'src', 'package.json']) walk(top);
  return files;
}

/** Whether this machine lets a process make a read-only bind mount in a mount namespace of its own. */
function readOnlyMountWorks(): boolean {
  const probe = spawnSync('unshare', ['-m', 'sh', '-c', READ_ONLY_SCRIPT.replace('exec "$@"', 'true'), root], {
    stdio: 'ignore',
  });
  return probe.status === 0;
}
/** Binds $0 onto itself read-only, then runs the rest of its arguments there. */
const READ_ONLY_SCRIPT = 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && cd "$0" && exec "$@"';

describe('the built service', () => {
  it('starts from a read-only package, serves, stops, and leaves every file as it was', async () => {
    const before = packageFiles();
    expect([...before.keys()]).toContain(join('dist', 'entry', 'node.mjs'));
    const env = cleanEnv({ DATABASE_URL: url, PORT: '0', ACME_WEBHOOK_SECRET: SECRET, RELAY_INTERVAL_MS: '0' });
    const readOnly = readOnlyMountWorks();
    const service = readOnly
      ? run('unshare', ['-m', 'sh', '-c', READ_ONLY_SCRIPT, root, process.execPath, 'bin/start.js'], env)
      : run(process.execPath, ['bin/start.js'], env);
    try {
      const { port } = JSON.parse(await service.waitForLine(/"msg":"listening"/)) as { port: number };
      const response = await deliverAcme(`http://127.0.0.1:${port}`, acmeEvent(), {
        secret: SECRET,
        timestamp: Math.floor(Date.now() / 1000),
      });
      expect(response.status).toBe(200);
    } finally {
      service.child.kill('SIGTERM');
    }
    expect(await service.exited).toEqual({ code: 0, signal: null });
    expect(packageFiles()).toEqual(before);
    if (readOnly) {
      // The mount was read-only indeed: the same script refuses a write.
      const write = spawnSync('unshare', ['-m', 'sh', '-c', READ_ONLY_SCRIPT, root, 'touch', 'dist/probe'], {
        stdio: 'ignore',
      });
      expect(write.status).not.toBe(0);
    }
  });

  it('the CLI runs from the build: --version answers without tsx', () => {
    const version = execFileSync(process.execPath, ['bin/webhook-inbox.js', '--version'], {
      env: cleanEnv({}),
      encoding: 'utf8',
    });
    const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string };
    expect(version.trim()).toBe(manifest.version);
    expect(readFileSync(join(root, 'bin', 'webhook-inbox.js'), 'utf8')).not.toContain('tsx');
  });
});
