// Configuration that can never work, or that weakens a promise, met as an operator meets it: through
// the real process. A retention shorter than an enabled sender's retry window, low-entropy secrets and
// tokens (refused in production, warned about elsewhere), `_FILE` contents an editor leaves behind (a
// byte order mark, lines of spaces), public keys from files, and a Twilio URL that can never verify.
// Needs a process: the built service under signals: graceful shutdown and what it promises on exit.
import { generateKeyPairSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { allSenders, redeliveryBySender } from '../src/senders/registry.ts';
import { useTestDatabase } from './helpers/database.ts';
import { type Running, startListeningService, startService } from './helpers/process.ts';
import { githubSender } from './helpers/senders.ts';

const { url } = await useTestDatabase();
const folder = await mkdtemp(join(tmpdir(), 'webhook-inbox-promises-'));
afterAll(() => rm(folder, { recursive: true, force: true }));

const ACME = { ACME_WEBHOOK_SECRET: 'acme-secret-long-enough' };
/** A Standard Webhooks secret whose key is 24 zero bytes, and a token of one repeated character. */
const ZERO_KEY = `whsec_${Buffer.alloc(24).toString('base64')}`;
const ONE_CHARACTER_TOKEN = 'a'.repeat(24);

/** Starts the service expecting a refusal (exit 1); one that starts listening instead fails the test at once. */
async function refusal(env: Record<string, string>): Promise<string> {
  const service = startService({ PORT: '0', DATABASE_URL: url, ...ACME, ...env });
  const outcome = await Promise.race([
    service.exited.then((exited) => exited.code),
    service.waitForLine(/"msg":"listening"/).then(
      () => 'listening',
      () => 'no line',
    ),
  ]);
  if (outcome === 'listening') {
    service.child.kill('SIGTERM');
    await service.exited;
  }
  expect(outcome).toBe(1);
  return service.output();
}

async function stopped(service: Running): Promise<void> {
  service.child.kill('SIGTERM');
  await service.exited;
}

const warningsIn = (output: string) =>
  output
    .split('\n')
    .filter((line) => line.includes('"level":"warn"'))
    .map((line) => JSON.parse(line) as { msg: string; variable?: string });

describe('retention against the senders’ retry windows', () => {
  it('refuses in production a retention shorter than Stripe’s three days, naming the variable and the sender', async () => {
    const output = await refusal({
      NODE_ENV: 'production',
      STRIPE_WEBHOOK_SECRET: 'whsec_stripe-secret-0123456789',
      EVENT_RETENTION_DAYS: '2',
    });
    expect(output).toContain('EVENT_RETENTION_DAYS: shorter than the retry window');
    expect(output).toContain('stripe (3)');
  });

  it('keeps every sender’s window in docs/senders.md, and its description’s figure, in step', () => {
    const documented = Object.fromEntries(
      [...readFileSync('docs/senders.md', 'utf8').matchAll(/^\| `([a-z0-9]+)` \| (\d+) \| /gm)].map((match) => [
        match[1],
        Number(match[2]),
      ]),
    );
    const described = Object.fromEntries([...redeliveryBySender].map(([name, { windowDays }]) => [name, windowDays]));
    expect(documented).toEqual(described);
    expect(Object.keys(described).sort()).toEqual(allSenders.map((provider) => provider.name).sort());
  });
});

describe('low-entropy secrets and tokens', () => {
  it('refuses them in production, naming each variable and never the value', async () => {
    const output = await refusal({
      NODE_ENV: 'production',
      STANDARD_WEBHOOK_SECRET: ZERO_KEY,
      ADMIN_TOKEN: ONE_CHARACTER_TOKEN,
    });
    expect(output).toContain('STANDARD_WEBHOOK_SECRET: low entropy');
    expect(output).toContain('ADMIN_TOKEN: low entropy');
    expect(output).not.toContain(ZERO_KEY);
    expect(output).not.toContain(ONE_CHARACTER_TOKEN);
  });

  it('starts in development with a warning for each, and for a retention shorter than a retry window', async () => {
    const service = await startListeningService({
      DATABASE_URL: url,
      ...ACME,
      STANDARD_WEBHOOK_SECRET: ZERO_KEY,
      ADMIN_TOKEN: ONE_CHARACTER_TOKEN,
      EVENT_RETENTION_DAYS: '0',
    });
    try {
      const warned = warningsIn(service.output()).map((warning) => warning.variable);
      expect(warned).toEqual(
        expect.arrayContaining(['STANDARD_WEBHOOK_SECRET', 'ADMIN_TOKEN', 'EVENT_RETENTION_DAYS']),
      );
      expect(service.output()).not.toContain(ZERO_KEY);
      expect(service.output()).not.toContain(ONE_CHARACTER_TOKEN);
    } finally {
      await stopped(service);
    }
  });
});

describe('secrets and keys from files', () => {
  it('drops a leading byte order mark and lines of spaces: the secret verifies', async () => {
    const secretFile = join(folder, 'github-bom');
    await writeFile(secretFile, '\uFEFFgithub-secret-from-windows\r\n   \r\n');
    const service = await startListeningService({ DATABASE_URL: url, ...ACME, GITHUB_WEBHOOK_SECRET_FILE: secretFile });
    try {
      const post = async (secret: string) => {
        const delivery = githubSender.newEvent();
        const headers = await githubSender.headers(delivery, { secret });
        return fetch(`${service.origin}/webhooks/github`, { method: 'POST', body: delivery.body, headers });
      };
      expect((await post('github-secret-from-windows')).status).toBe(200);
      expect((await post('  ')).status).toBe(401);
    } finally {
      await stopped(service);
    }
  });

  it('refuses a file of blank lines and spaces, naming the variable', async () => {
    const blankFile = join(folder, 'blank');
    await writeFile(blankFile, '\n  \n\t\n');
    const output = await refusal({ GITHUB_WEBHOOK_SECRET_FILE: blankFile });
    expect(output).toContain('GITHUB_WEBHOOK_SECRET_FILE: the file holds no secret');
  });

  it('reads <NAME>_WEBHOOK_PUBLIC_KEY_FILE like every `_FILE`: the sender is enabled', async () => {
    const { publicKey } = generateKeyPairSync('ed25519');
    const keyFile = join(folder, 'discord');
    await writeFile(keyFile, `${publicKey.export({ format: 'der', type: 'spki' }).subarray(-32).toString('hex')}\n`);
    const service = await startListeningService({
      DATABASE_URL: url,
      ...ACME,
      DISCORD_WEBHOOK_PUBLIC_KEY_FILE: keyFile,
    });
    try {
      const senders = JSON.parse(await service.waitForLine(/"msg":"senders"/)) as { enabled: string[] };
      expect(senders.enabled).toContain('discord');
    } finally {
      await stopped(service);
    }
  });
});

describe('a signed URL that can never verify', () => {
  it('refuses a TWILIO_WEBHOOK_URL with a query string, naming it', async () => {
    const output = await refusal({
      TWILIO_WEBHOOK_SECRET: 'twilio-auth-token-0123456789',
      TWILIO_WEBHOOK_URL: 'https://hooks.example.com/webhooks/twilio?tenant=1',
    });
    expect(output).toContain('TWILIO_WEBHOOK_URL: must have no query string');
  });
});
