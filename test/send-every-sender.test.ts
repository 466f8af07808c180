// `webhook-inbox send <name>` for every sender the service knows, against the service served on a
// local port in this process: each sender's sample, signed as that sender signs (its secret, a
// private key whose public half the service holds, a signed public URL, GitLab's token), is accepted
// and leaves one row per event it carried, batches included. And the lines a refusal gets.
import { generateKeyPairSync, type KeyObject, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { serve } from '@hono/node-server';
import { afterAll, describe, expect, it } from 'vitest';
import { senderVariable } from '../src/sender-variables.ts';
import type { PublicKeyFormat } from '../src/senders/asymmetric.ts';
import { enableSenders } from '../src/senders/registry.ts';
import { senderDescriptions } from '../src/senders/senders.ts';
import { privateKeyAlgorithm, takesSecret } from '../src/senders/signing.ts';
import { buildTestApp } from './helpers/app.ts';
import { runCli } from './helpers/cli.ts';
import { useTestDatabase } from './helpers/database.ts';
import { providerRows } from './helpers/facts.ts';

const { sql, db } = await useTestDatabase();
const keyFolder = mkdtempSync(join(tmpdir(), 'send-keys-'));

/** A key pair as the sender's dashboard shows the public half, and the private half's PEM file. */
function keyPair(name: string, format: PublicKeyFormat, algorithm: 'Ed25519' | 'ECDSA-P256') {
  const { publicKey, privateKey } =
    algorithm === 'Ed25519' ? generateKeyPairSync('ed25519') : generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const file = join(keyFolder, `${name}-${randomBytes(4).toString('hex')}.pem`);
  writeFileSync(file, privateKey.export({ type: 'pkcs8', format: 'pem' }));
  return { configured: publicText(publicKey, format), file };
}

function publicText(publicKey: KeyObject, format: PublicKeyFormat): string {
  if (format === 'spki') return publicKey.export({ type: 'spki', format: 'der' }).toString('base64');
  const raw = Buffer.from(publicKey.export({ format: 'jwk' }).x ?? '', 'base64url');
  if (format === 'hex') return raw.toString('hex');
  return format === 'whpk' ? `whpk_${raw.toString('base64')}` : raw.toString('base64');
}

function described(name: string) {
  const description = senderDescriptions.find((candidate) => candidate.name === name);
  if (description === undefined) throw new Error(`${name}: no such sender`);
  return description;
}

/** The public-key format a sender's description reads. */
function publicKeyFormat(name: string): PublicKeyFormat {
  const method = described(name).signature?.methods.find((candidate) => candidate.algorithm !== 'HMAC');
  if (method === undefined || !('publicKey' in method)) throw new Error(`${name}: no public-key method`);
  return method.publicKey;
}

const secretSenders = senderDescriptions.filter(takesSecret).map((description) => description.name);
const keySenders = senderDescriptions.filter((description) => privateKeyAlgorithm(description) !== undefined);
// One secret form every secret sender reads: `whsec_` + base64 is text too.
const secrets = Object.fromEntries(secretSenders.map((name) => [name, `whsec_${randomBytes(24).toString('base64')}`]));
const pairs = Object.fromEntries(
  keySenders.map(({ name }) => {
    return [name, keyPair(name, publicKeyFormat(name), privateKeyAlgorithm(described(name)) ?? 'Ed25519')];
  }),
);
const gitlabToken = `gitlab-token-${randomBytes(12).toString('hex')}`;
// Senders that sign their URL sign the public one, which differs from where the test delivers.
const urlSenders = senderDescriptions.filter((description) => description.signed?.includes('{url}'));
const publicUrls = Object.fromEntries(
  urlSenders.map(({ name }) => [name, `https://inbox.example.com/webhooks/${name}`]),
);

const test = await buildTestApp(db, {
  enabledSenders: await enableSenders(
    {
      ...Object.fromEntries(Object.entries(secrets).map(([name, secret]) => [name, [secret]])),
      gitlab: [secrets.gitlab ?? '', gitlabToken],
    },
    {
      publicKeys: Object.fromEntries(Object.entries(pairs).map(([name, pair]) => [name, [pair.configured]])),
      urls: publicUrls,
    },
  ),
});
test.setNow(Date.now());
const server = serve({ fetch: test.app.fetch, port: 0, hostname: '127.0.0.1' });
const origin = await new Promise<string>((resolve) =>
  server.once('listening', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)),
);
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

/** The CLI's environment: the server's own secrets and signed URLs, as an operator runs it. */
const env = {
  ...Object.fromEntries(Object.entries(secrets).map(([name, secret]) => [senderVariable(name, 'secret'), secret])),
  ...Object.fromEntries(Object.entries(publicUrls).map(([name, url]) => [senderVariable(name, 'url'), url])),
};

const send = async (name: string, args: string[] = [], extraEnv: Record<string, string> = {}) =>
  runCli(['send', name, '--url', `${origin}/webhooks/${name}`, ...args], { ...env, ...extraEnv });

/** `send`'s JSON summary. */
const summary = (output: string) =>
  JSON.parse(output.slice(output.indexOf('{'), output.lastIndexOf('}') + 1)) as {
    events: number;
    deliveries: number;
    answers: Record<string, number>;
  };

const BATCH_SENDERS = senderDescriptions
  .filter((description) => description.events !== undefined)
  .map(({ name }) => name);

describe('send signs as every sender, and the service accepts each', () => {
  it('knows every sender docs/senders.md lists, and tells those that sign a URL or hold a public key', () => {
    // The table of senders, not a count: adding a sender touches its description and its test only.
    const documented = [...readFileSync('docs/senders.md', 'utf8').matchAll(/^\| `([a-z0-9]+)` \| `[A-Z0-9_]+`/gm)];
    expect(senderDescriptions.map(({ name }) => name)).toEqual(documented.map((row) => row[1]));
    expect(urlSenders.map(({ name }) => name)).toEqual(expect.arrayContaining(['hubspot', 'square', 'twilio']));
    expect(keySenders.map(({ name }) => name)).toEqual(
      expect.arrayContaining(['discord', 'sendgrid', 'standard', 'telnyx']),
    );
  });

  it.each(senderDescriptions.map(({ name }) => name))('%s', async (name) => {
    const privateKey = takesSecret(described(name)) ? [] : ['--private-key', pairs[name]?.file ?? ''];
    const result = await send(name, [...privateKey, '--count', '2', '--json']);
    expect(result.code, result.output).toBe(0);
    const sent = summary(result.output);
    expect(sent).toMatchObject({ deliveries: 2, answers: { '200': 2 } });
    // A batch sender's sample carries several events, each a row of its own.
    expect(sent.events).toBe(BATCH_SENDERS.includes(name) ? sent.events : 2);
    if (BATCH_SENDERS.includes(name)) expect(sent.events).toBeGreaterThanOrEqual(4);
    const rows = await providerRows(sql, name);
    expect(rows).toHaveLength(sent.events);
    expect(new Set(rows.map((row) => row.event_id)).size).toBe(sent.events);
    for (const row of rows) {
      expect(row.event_type.length).toBeGreaterThan(0);
      expect(row.payload).toBeTypeOf('object');
      expect(['completed', 'ignored']).toContain(row.status);
    }
  });

  it("standard's Ed25519 (v1a) signatures, and GitLab's token without a signature", async () => {
    const standardBefore = (await providerRows(sql, 'standard')).length;
    const signed = await send('standard', ['--private-key', pairs.standard?.file ?? '']);
    expect(signed.code, signed.output).toBe(0);
    expect((await providerRows(sql, 'standard')).length).toBe(standardBefore + 1);

    const gitlabBefore = (await providerRows(sql, 'gitlab')).length;
    const token = await send('gitlab', [], { GITLAB_WEBHOOK_SECRET: gitlabToken });
    expect(token.code, token.output).toBe(0);
    expect((await providerRows(sql, 'gitlab')).length).toBe(gitlabBefore + 1);
  });
});

describe('what a refusal says', () => {
  it('a private-key sender without --private-key: exit 1 naming the option and the server variable', async () => {
    const result = await send('discord');
    expect(result.code).toBe(1);
    expect(result.output).toContain('discord signs with a private key only the sender holds: pass --private-key');
    expect(result.output).toContain('DISCORD_WEBHOOK_PUBLIC_KEY');
    const unusable = join(keyFolder, 'not-a-key.pem');
    writeFileSync(unusable, 'hello');
    expect((await send('discord', ['--private-key', unusable])).output).toContain(
      `cannot use ${unusable}: expected a PEM private key (PKCS#8, "BEGIN PRIVATE KEY") for Ed25519`,
    );
    expect((await send('github', ['--private-key', unusable])).code).toBe(2);
  });

  it('a 401 names what most likely differs: the public key, or the signed URL', async () => {
    const before = (await providerRows(sql, 'telnyx')).length;
    const stranger = keyPair('stranger', 'base64', 'Ed25519');
    const wrongKey = await send('telnyx', ['--private-key', stranger.file]);
    expect(wrongKey.code).toBe(1);
    expect(wrongKey.output).toContain(
      "refused the signatures (401): the server's TELNYX_WEBHOOK_PUBLIC_KEY is not the public half of --private-key",
    );
    expect((await providerRows(sql, 'telnyx')).length).toBe(before);

    const wrongUrl = await send('hubspot', [], { HUBSPOT_WEBHOOK_URL: 'https://elsewhere.example.com/hooks' });
    expect(wrongUrl.code).toBe(1);
    expect(wrongUrl.output).toContain(
      'the URL signed (https://elsewhere.example.com/hooks, from HUBSPOT_WEBHOOK_URL or --url) is not its HUBSPOT_WEBHOOK_URL',
    );
  });
});
