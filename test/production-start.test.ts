// No silent fallbacks at start-up, through the real processes: in production a missing DATABASE_URL
// stops the service and the CLI (unless EMBEDDED_DATABASE=allow, which is then warned about), and
// start-up names the enabled senders and why acme's development secret is or is not in use.
// Needs a process: start-up refusals are exit codes and lines of the real service and CLI processes.
import { generateKeyPairSync } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { acmeEvent, deliverAcme, TEST_NOW_SECONDS } from './helpers/acme.ts';
import { runCli } from './helpers/cli.ts';
import { useTestDatabase } from './helpers/database.ts';
import { patience, WAIT_MS } from './helpers/patience.ts';
import { type Running, type ServiceUnderTest, startListeningService, startService } from './helpers/process.ts';

const { url } = await useTestDatabase();
const folder = await mkdtemp(join(tmpdir(), 'webhook-inbox-production-'));
afterAll(() => rm(folder, { recursive: true, force: true }));

const ACME_SECRET = 'acme-production-secret-VALUE';
const GITHUB_SECRET = 'github-secret-VALUE-long-enough';

/** A DATA_DIR of the test's own that does not exist yet, so whether start-up made it is visible. */
let dataDirs = 0;
const freshDataDir = () => join(folder, `data-${++dataDirs}`);

/**
 * The exit of a service expected to refuse. One still running after `ms` fails the test, stopped by
 * SIGTERM so that an embedded server it started stops with it (SIGKILL would orphan that server).
 */
async function refusal(service: Running, ms = WAIT_MS): Promise<{ code: number | null; lines: string[] }> {
  const timers = [
    setTimeout(() => service.child.kill('SIGTERM'), ms),
    setTimeout(() => service.child.kill('SIGKILL'), ms + patience(10_000)),
  ];
  const { code } = await service.exited;
  for (const timer of timers) clearTimeout(timer);
  return { code, lines: service.output().trim().split('\n') };
}

/** The first log line matching `pattern`, parsed. */
async function logLine(service: Running, pattern: RegExp): Promise<Record<string, unknown>> {
  return JSON.parse(await service.waitForLine(pattern)) as Record<string, unknown>;
}

const sendersLine = (service: Running) => logLine(service, /"msg":"senders"/);

async function stop(service: ServiceUnderTest): Promise<void> {
  service.child.kill('SIGTERM');
  expect((await service.exited).code).toBe(0);
}

describe('NODE_ENV=production without DATABASE_URL', () => {
  it('refuses to start: exit 1, one line naming DATABASE_URL, no data folder made', async () => {
    const dataDir = freshDataDir();
    const service = startService({
      NODE_ENV: 'production',
      PORT: '0',
      DATA_DIR: dataDir,
      ACME_WEBHOOK_SECRET: ACME_SECRET,
    });
    const { code, lines } = await refusal(service);
    expect(code).toBe(1);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('DATABASE_URL');
    expect(lines[0]).toContain('EMBEDDED_DATABASE=allow');
    expect(existsSync(dataDir)).toBe(false);
  });

  it('names DATABASE_URL first when no provider secret is set either', async () => {
    const dataDir = freshDataDir();
    const { code, lines } = await refusal(startService({ NODE_ENV: 'production', PORT: '0', DATA_DIR: dataDir }));
    expect(code).toBe(1);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('DATABASE_URL');
    expect(existsSync(dataDir)).toBe(false);
  });

  it('refuses an EMBEDDED_DATABASE other than allow, naming it, in any environment', async () => {
    const environments: Record<string, string>[] = [{ NODE_ENV: 'production' }, { DATABASE_URL: url }];
    for (const env of environments) {
      const dataDir = freshDataDir();
      const service = startService({
        ...env,
        PORT: '0',
        DATA_DIR: dataDir,
        ACME_WEBHOOK_SECRET: ACME_SECRET,
        EMBEDDED_DATABASE: 'yes',
      });
      const { code, lines } = await refusal(service);
      expect(code).toBe(1);
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain('EMBEDDED_DATABASE');
      expect(lines[0]).not.toContain('yes');
      expect(existsSync(dataDir)).toBe(false);
    }
  });

  it('the CLI refuses the same way instead of looking for an embedded server', async () => {
    const { code, output } = await runCli(['events', 'list'], { NODE_ENV: 'production' });
    expect(code).toBe(1);
    const lines = output.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('DATABASE_URL');
    expect(lines[0]).toContain('EMBEDDED_DATABASE=allow');
  });

  it('with EMBEDDED_DATABASE=allow: starts the embedded server, warns, and the CLI finds it', async () => {
    const dataDir = freshDataDir();
    const env = { NODE_ENV: 'production', DATA_DIR: dataDir, EMBEDDED_DATABASE: 'allow' };
    const service = await startListeningService({ ...env, ACME_WEBHOOK_SECRET: ACME_SECRET });
    try {
      const warning = await logLine(service, /"variable":"EMBEDDED_DATABASE"/);
      expect(warning.level).toBe('warn');
      expect(warning.msg).toContain('embedded PostgreSQL');
      const listening = await logLine(service, /"msg":"listening"/);
      expect(listening.database).toBe('embedded');
      expect(existsSync(join(dataDir, 'postgres', 'postmaster.pid'))).toBe(true);
      expect((await fetch(`${service.origin}/readyz`)).status).toBe(200);

      const cli = await runCli(['events', 'list', '--json'], env);
      expect(cli.code).toBe(0);
    } finally {
      await stop(service);
    }
    expect(service.output()).not.toContain(ACME_SECRET);
  });
});

describe("the start-up line: enabled senders and acme's development secret", () => {
  it('production: not in use because of NODE_ENV', async () => {
    const service = await startListeningService({
      NODE_ENV: 'production',
      DATABASE_URL: url,
      DATA_DIR: freshDataDir(),
      ACME_WEBHOOK_SECRET: ACME_SECRET,
      GITHUB_WEBHOOK_SECRET: GITHUB_SECRET,
    });
    try {
      const line = await sendersLine(service);
      expect(line).toMatchObject({
        level: 'info',
        enabled: ['acme', 'github'],
        acme_development_secret: 'not in use',
        reason: 'NODE_ENV is production',
      });
    } finally {
      await stop(service);
    }
    expect(service.output()).not.toContain(ACME_SECRET);
    expect(service.output()).not.toContain(GITHUB_SECRET);
  });

  it('no sender secret outside production: in use, and acme is enabled', async () => {
    const dataDir = freshDataDir();
    const service = await startListeningService({ DATABASE_URL: url, DATA_DIR: dataDir });
    try {
      const raw = await service.waitForLine(/"msg":"senders"/);
      expect(JSON.parse(raw)).toMatchObject({
        enabled: ['acme'],
        acme_development_secret: 'in use',
        reason: 'no sender secret or public key is set and NODE_ENV is not production',
      });
      const secret = (await readFile(join(dataDir, 'acme-development-secret'), 'utf8')).trim();
      expect(raw).not.toContain(secret);
    } finally {
      await stop(service);
    }
  });

  it('a real secret set: not in use, naming the variables that turned it off; acme answers 404', async () => {
    const publicJwk = generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' });
    const service = await startListeningService({
      DATABASE_URL: url,
      DATA_DIR: freshDataDir(),
      GITHUB_WEBHOOK_SECRET: GITHUB_SECRET,
      STANDARD_WEBHOOK_PUBLIC_KEY: `whpk_${Buffer.from(publicJwk.x ?? '', 'base64url').toString('base64')}`,
    });
    try {
      const line = await sendersLine(service);
      expect(line).toMatchObject({
        enabled: ['standard', 'github'],
        acme_development_secret: 'not in use',
        reason: 'a sender secret or public key is set',
      });
      expect(line.variables).toEqual(['GITHUB_WEBHOOK_SECRET', 'STANDARD_WEBHOOK_PUBLIC_KEY']);
      const acme = await fetch(`${service.origin}/webhooks/acme`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{}',
      });
      expect(acme.status).toBe(404);
    } finally {
      await stop(service);
    }
    expect(service.output()).not.toContain(GITHUB_SECRET);
  });

  it('a variable that names no sender is warned about by name, and alone it is no secret in production', async () => {
    const service = await startListeningService({
      DATABASE_URL: url,
      DATA_DIR: freshDataDir(),
      GITHUB_WEBHOOK_SECRET: GITHUB_SECRET,
      GTIHUB_WEBHOOK_SECRET: 'misspelt-secret-VALUE',
    });
    try {
      const warning = await logLine(service, /"msg":"names no sender/);
      expect(warning).toMatchObject({ level: 'warn', variable: 'GTIHUB_WEBHOOK_SECRET' });
      expect((await sendersLine(service)).enabled).toEqual(['github']);
    } finally {
      await stop(service);
    }
    expect(service.output()).not.toContain('misspelt-secret-VALUE');

    const refused = await refusal(
      startService({
        NODE_ENV: 'production',
        DATABASE_URL: url,
        PORT: '0',
        DATA_DIR: freshDataDir(),
        GTIHUB_WEBHOOK_SECRET: 'misspelt-secret-VALUE',
      }),
    );
    expect(refused.code).toBe(1);
    expect(refused.lines).toHaveLength(1);
    expect(refused.lines[0]).toContain('no provider secret');
  });

  it('a variable that names no sender alone leaves the development secret in use outside production', async () => {
    const service = await startListeningService({
      DATABASE_URL: url,
      DATA_DIR: freshDataDir(),
      GTIHUB_WEBHOOK_SECRET: 'misspelt-secret-VALUE',
    });
    try {
      expect(await logLine(service, /"msg":"names no sender/)).toMatchObject({ variable: 'GTIHUB_WEBHOOK_SECRET' });
      expect(await sendersLine(service)).toMatchObject({
        enabled: ['acme'],
        acme_development_secret: 'in use',
        reason: 'no sender secret or public key is set and NODE_ENV is not production',
      });
    } finally {
      await stop(service);
    }
  });

  it("the CLI's send signs with the development secret exactly when start-up would use it", async () => {
    const dataDir = freshDataDir();
    await mkdir(dataDir);
    await writeFile(join(dataDir, 'acme-development-secret'), 'development-secret-VALUE\n');
    // A public key alone turns it off at start-up, so send must not sign acme with it either.
    const { code, output } = await runCli(['send', 'acme', '--url', 'http://127.0.0.1:9/webhooks/acme'], {
      DATA_DIR: dataDir,
      DISCORD_WEBHOOK_PUBLIC_KEY: 'a'.repeat(64),
    });
    expect(code).toBe(1);
    expect(output).toContain('acme: no secret: set ACME_WEBHOOK_SECRET');
    expect(output).not.toContain('development-secret-VALUE');
  });
});

describe("the libuv pool that runs Web Crypto's HMAC jobs", () => {
  /** The threads of libuv's pool in a running process (Linux names them). */
  const poolThreads = async (pid: number) => {
    const names = await Promise.all(
      (await readdir(`/proc/${pid}/task`)).map((task) =>
        readFile(`/proc/${pid}/task/${task}/comm`, 'utf8').catch(() => ''),
      ),
    );
    return names.filter((name) => name.trim() === 'libuv-worker').length;
  };

  async function threadsAfterOneDelivery(env: Record<string, string>): Promise<number> {
    const service = await startListeningService({
      DATABASE_URL: url,
      ACME_WEBHOOK_SECRET: ACME_SECRET,
      DATA_DIR: freshDataDir(),
      ...env,
    });
    try {
      const answer = await deliverAcme(service.origin, acmeEvent({ created: TEST_NOW_SECONDS }), {
        secret: ACME_SECRET,
        timestamp: Math.floor(Date.now() / 1000),
      });
      // Verified, so the pool has started and run an HMAC.
      expect(answer.status).toBe(200);
      return await poolThreads(service.child.pid as number);
    } finally {
      await stop(service);
    }
  }

  it.runIf(existsSync('/proc/self/task'))('has as many threads as cores, at least 2 and at most 4', async () => {
    expect(await threadsAfterOneDelivery({})).toBe(Math.min(4, Math.max(2, availableParallelism())));
  });

  it.runIf(existsSync('/proc/self/task'))("takes the operator's UV_THREADPOOL_SIZE", async () => {
    expect(await threadsAfterOneDelivery({ UV_THREADPOOL_SIZE: '3' })).toBe(3);
  });
});
