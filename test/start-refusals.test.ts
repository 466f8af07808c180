// Start-up as an operator meets it, through the real process: secrets from `_FILE` (a secret with
// spaces stays whole) and the warning for a short one, tokens a bearer header cannot carry or that are
// both shared and named, and each cause of a database that cannot be used named by its class, never
// printing DATABASE_URL.
// Needs a process: start-up refusals are exit codes and lines of the real service process.
import { createHmac } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from './helpers/database.ts';
import { startListeningService, startService } from './helpers/process.ts';
import { githubHeaders } from './helpers/senders.ts';

const { url } = await useTestDatabase();
const folder = await mkdtemp(join(tmpdir(), 'webhook-inbox-secrets-'));
afterAll(() => rm(folder, { recursive: true, force: true }));

/**
 * A password that must never be printed: the server's own where it checks passwords (the embedded
 * one does), so each case below fails for its own reason and not at authentication; else any.
 */
const serverPassword = decodeURIComponent(new URL(url).password);
const PASSWORD = serverPassword === '' ? 'pw-secret-never-printed' : serverPassword;

/** The test database's URL with some parts changed, and PASSWORD. */
function urlWith(parts: { host?: string; port?: string; pathname?: string; username?: string }): string {
  const changed = new URL(url);
  Object.assign(changed, parts);
  changed.password = encodeURIComponent(PASSWORD);
  return changed.toString();
}

/** Starts the service expecting it to refuse; answers its output. */
async function refusal(env: Record<string, string>): Promise<string> {
  const service = startService({ PORT: '0', ACME_WEBHOOK_SECRET: 'acme-secret-long-enough', ...env });
  const exited = await service.exited;
  expect(exited.code).toBe(1);
  return service.output();
}

describe('secrets from files', () => {
  it('a secret with spaces from GITHUB_WEBHOOK_SECRET_FILE is one secret; a short one is warned about', async () => {
    const secretFile = join(folder, 'github');
    await writeFile(secretFile, 'correct horse battery staple\n');
    const service = await startListeningService({
      DATABASE_URL: url,
      GITHUB_WEBHOOK_SECRET_FILE: secretFile,
      ACME_WEBHOOK_SECRET: 'tiny-s3',
    });
    try {
      const post = (secret: string) => {
        const body = JSON.stringify({ action: 'opened', issue: { number: 1 }, secret });
        const signature = `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
        return fetch(`${service.origin}/webhooks/github`, {
          method: 'POST',
          body,
          headers: { ...githubHeaders(crypto.randomUUID()), 'x-hub-signature-256': signature },
        });
      };
      expect((await post('correct horse battery staple')).status).toBe(200);
      expect((await post('horse')).status).toBe(401);
      const warning = service
        .output()
        .split('\n')
        .find((line) => line.includes('"level":"warn"') && line.includes('ACME_WEBHOOK_SECRET'));
      expect(warning).toBeDefined();
      expect(service.output()).not.toContain('tiny-s3');
    } finally {
      service.child.kill('SIGTERM');
      await service.exited;
    }
  });

  it('refuses an ADMIN_TOKEN outside the bearer syntax, naming it and not its value', async () => {
    const output = await refusal({ DATABASE_URL: url, ADMIN_TOKEN: 'admin-token-0123456789!' });
    expect(output).toContain('ADMIN_TOKEN');
    expect(output).not.toContain('admin-token-0123456789!');
  });

  it('refuses an ADMIN_TOKEN that is also a named token: one line naming both variables, not the token', async () => {
    const shared = 'shared-and-named-token-0123456789';
    const output = await refusal({ DATABASE_URL: url, ADMIN_TOKEN: shared, ADMIN_TOKENS: `alice:${shared}` });
    const lines = output.split('\n').filter((line) => line.includes('ADMIN_TOKENS'));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('ADMIN_TOKEN:');
    expect(output).not.toContain(shared);
  });
});

/** A server that answers every connection's start-up message with a FATAL ErrorResponse. */
async function fatalServer(code: string, message: string): Promise<{ server: Server; port: number }> {
  const field = (type: string, value: string) => Buffer.concat([Buffer.from(type), Buffer.from(`${value}\0`)]);
  const fields = Buffer.concat([field('S', 'FATAL'), field('V', 'FATAL'), field('C', code), field('M', message)]);
  const length = Buffer.alloc(4);
  length.writeInt32BE(4 + fields.length + 1);
  const response = Buffer.concat([Buffer.from('E'), length, fields, Buffer.from([0])]);
  const server = createServer((socket) => socket.once('data', () => socket.end(response)));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  return { server, port: typeof address === 'object' && address !== null ? address.port : 0 };
}

describe('database start-up failures, by cause', () => {
  it.each([
    [
      'a missing database',
      () => urlWith({ pathname: '/wi_no_such_database' }),
      'the database named in DATABASE_URL does not exist',
    ],
    [
      'a missing role',
      () => urlWith({ username: 'wi_no_such_role' }),
      // A server that checks passwords answers an unknown role as a wrong password (28P01), on
      // purpose: it does not tell a client which roles exist.
      serverPassword === '' ? 'role (user) named in DATABASE_URL' : 'check the user and password in DATABASE_URL',
    ],
    ['a refused port', () => urlWith({ host: '127.0.0.1', port: '1' }), 'connection refused'],
    ['an unknown host', () => urlWith({ host: 'db.invalid' }), 'unknown host'],
  ])(
    '%s',
    async (_name, makeUrl, expected) => {
      const output = await refusal({ DATABASE_URL: makeUrl() });
      expect(output).toContain(expected);
      expect(output).not.toContain(PASSWORD);
      expect(output).not.toContain('unreachable');
    },
    30_000,
  );

  it.each([
    ['an authentication failure', '28P01', 'password authentication failed for user "app"', 'authentication failed'],
    [
      'a server that requires TLS',
      '28000',
      'no pg_hba.conf entry for host "127.0.0.1", user "app", database "app", no encryption',
      'requires TLS',
    ],
  ])(
    '%s',
    async (_name, code, message, expected) => {
      const { server, port } = await fatalServer(code, message);
      try {
        const output = await refusal({ DATABASE_URL: urlWith({ host: '127.0.0.1', port: String(port) }) });
        expect(output).toContain(expected);
        expect(output).not.toContain(PASSWORD);
      } finally {
        server.close();
      }
    },
    30_000,
  );

  it('a bad port in DATABASE_URL names the variable, not a TypeError', async () => {
    const output = await refusal({ DATABASE_URL: `postgres://app:${PASSWORD}@127.0.0.1:99999/app` });
    expect(output).toContain('DATABASE_URL');
    expect(output).not.toContain('TypeError');
    expect(output).not.toContain(PASSWORD);
  });
});
