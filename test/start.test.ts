// `npm start` and `npm run db:migrate` as real processes: the zero-setup path with the embedded
// server and the printed curl, refusal to serve an unmigrated database, configuration errors.
// Needs a process: `npm start` and `npm run db:migrate` as a new user runs them: the embedded server, the
// printed curl.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { useEmptyDatabase } from './helpers/database.ts';
import { cleanEnv, run, startService } from './helpers/process.ts';

const exec = promisify(execFile);
const migrate = (env: Record<string, string>) => run('npm', ['run', '--silent', 'db:migrate'], cleanEnv(env));

const dataDir = await mkdtemp(join(tmpdir(), 'webhook-inbox-start-'));
const unmigrated = await useEmptyDatabase();
const productionDatabase = await useEmptyDatabase();
const portDatabase = await useEmptyDatabase();
afterAll(() => rm(dataDir, { recursive: true, force: true }));

describe('npm start', () => {
  it('with nothing set: embedded PostgreSQL, a development secret and a curl that gets 200', async () => {
    const service = startService({ PORT: '0', DATA_DIR: dataDir });
    try {
      const curl = await service.waitForLine(/^curl /);
      const first = await exec('sh', ['-c', curl]);
      expect(first.stdout).toBe('{"received":true}');
      const again = await exec('sh', ['-c', curl]);
      expect(again.stdout).toBe('{"received":true,"duplicate":true}');
      expect(existsSync(join(dataDir, 'acme-development-secret'))).toBe(true);
      expect(existsSync(join(dataDir, 'postgres', 'postmaster.pid'))).toBe(true);
    } finally {
      service.child.kill('SIGTERM');
    }
    expect(await service.exited).toEqual({ code: 0, signal: null });
    // The embedded server was stopped too, not left behind.
    expect(existsSync(join(dataDir, 'postgres', 'postmaster.pid'))).toBe(false);
  });

  it('with DATABASE_URL and pending migrations: exit 1 naming npm run db:migrate; serves after it', async () => {
    const { url } = unmigrated;
    const refused = startService({ DATABASE_URL: url, PORT: '0', ACME_WEBHOOK_SECRET: 's3cret-long-enough-16' });
    const { code } = await refused.exited;
    expect(code).toBe(1);
    const lines = refused.output().trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('npm run db:migrate');

    const migration = migrate({ DATABASE_URL: url });
    expect((await migration.exited).code).toBe(0);
    const rerun = migrate({ DATABASE_URL: url });
    expect((await rerun.exited).code).toBe(0);

    const service = startService({ DATABASE_URL: url, PORT: '0', ACME_WEBHOOK_SECRET: 's3cret-long-enough-16' });
    try {
      const listening = JSON.parse(await service.waitForLine(/"msg":"listening"/));
      const ready = await fetch(`http://127.0.0.1:${listening.port}/readyz`);
      expect(ready.status).toBe(200);
      // No admin token: the line says the dashboard is off and how to open it.
      expect(listening.dashboard).toBe('off: set ADMIN_TOKEN to open /admin');
      expect(service.output()).not.toContain('s3cret-long-enough-16');
      expect(service.output()).not.toContain(url);
    } finally {
      service.child.kill('SIGTERM');
    }
    expect((await service.exited).code).toBe(0);
  });

  it('a port in use: exit 1 with one line naming the port, no stack trace; a free one prints the dashboard URL', async () => {
    const { url } = portDatabase;
    expect((await migrate({ DATABASE_URL: url }).exited).code).toBe(0);
    const holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, '0.0.0.0', resolve));
    const { port } = holder.address() as AddressInfo;
    const env = {
      DATABASE_URL: url,
      ACME_WEBHOOK_SECRET: 's3cret-long-enough-16',
      ADMIN_TOKEN: 'admin-token-0123456789abcdef',
    };
    try {
      const refused = startService({ ...env, PORT: String(port) });
      expect((await refused.exited).code).toBe(1);
      const errors = refused
        .output()
        .trim()
        .split('\n')
        .filter((line) => !line.startsWith('{'));
      expect(errors).toEqual([`port ${port} is in use by another process: stop it, or set PORT to a free port`]);
    } finally {
      holder.close();
    }
    const service = startService({ ...env, PORT: '0' });
    try {
      const listening = JSON.parse(await service.waitForLine(/"msg":"listening"/));
      expect(listening.dashboard).toBe(`http://localhost:${listening.port}/admin`);
    } finally {
      service.child.kill('SIGTERM');
    }
    expect((await service.exited).code).toBe(0);
  });

  it('db:migrate exits non-zero when it cannot migrate', async () => {
    const failed = migrate({ DATABASE_URL: 'postgres://nobody@127.0.0.1:9/none' });
    expect((await failed.exited).code).not.toBe(0);
    expect(failed.output()).toContain('migration failed');
  });

  it('refuses to start in production without any provider secret', async () => {
    const refused = startService({ NODE_ENV: 'production', DATABASE_URL: productionDatabase.url, PORT: '0' });
    expect((await refused.exited).code).toBe(1);
    expect(refused.output()).toContain('no provider secret');
  });

  it('stops at start-up, naming the sender and never the value, when a sender cannot be enabled', async () => {
    const refused = startService({
      DATABASE_URL: productionDatabase.url,
      PORT: '0',
      ACME_WEBHOOK_SECRET: 's3cret-long-enough-16',
      DISCORD_WEBHOOK_PUBLIC_KEY: 'not-an-ed25519-key-VALUE',
    });
    expect((await refused.exited).code).toBe(1);
    const lines = refused.output().trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^start-up failed: discord: /);
    expect(refused.output()).not.toContain('VALUE');

    const unsigned = startService({ DATABASE_URL: productionDatabase.url, PORT: '0', SQUARE_WEBHOOK_SECRET: 'k' });
    expect((await unsigned.exited).code).toBe(1);
    expect(unsigned.output()).toContain('square: signs the URL it posts to: set SQUARE_WEBHOOK_URL');
  });

  it('names every bad variable, without echoing its value', async () => {
    const refused = startService({ PORT: 'eighty', DB_POOL_MAX: '0', DATABASE_URL: 'mysql://secret-host/db' });
    expect((await refused.exited).code).toBe(1);
    const output = refused.output();
    expect(output).toContain('PORT');
    expect(output).toContain('DB_POOL_MAX');
    expect(output).toContain('DATABASE_URL');
    expect(output).not.toContain('secret-host');
  });

  it('refuses a broker target without its stream or exchange before starting anything', async () => {
    const env = {
      DATABASE_URL: productionDatabase.url,
      PORT: '0',
      ACME_WEBHOOK_SECRET: 'a-secret-long-enough-to-pass',
    };
    const refused = startService({ ...env, OUTBOX_TARGET_URL: 'amqp://relay:hunter2@127.0.0.1:5672' });
    expect((await refused.exited).code).toBe(1);
    expect(refused.output().trim()).toBe(
      'invalid configuration: OUTBOX_TARGET_URL: amqp:// targets need ?exchange= (amqp://user:pass@host:port[/vhost]?exchange=NAME)',
    );
  });

  it('refuses an OUTBOX_DESTINATIONS entry it cannot publish to before starting anything, never quoting its URL', async () => {
    const refused = startService({
      DATABASE_URL: productionDatabase.url,
      PORT: '0',
      ACME_WEBHOOK_SECRET: 'a-secret-long-enough-to-pass',
      OUTBOX_DESTINATIONS: JSON.stringify([{ name: 'rabbit', url: 'amqp://relay:hunter2@127.0.0.1:5672' }]),
    });
    expect((await refused.exited).code).toBe(1);
    expect(refused.output().trim()).toBe(
      'invalid configuration: OUTBOX_DESTINATIONS[0].url: amqp:// targets need ?exchange= (amqp://user:pass@host:port[/vhost]?exchange=NAME)',
    );
  });
});
