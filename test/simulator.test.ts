// The simulator behind `webhook-inbox send` signs by the senders' descriptions (senders/signing.ts):
// for the six original senders its headers must be, byte for byte, those of each publisher's own
// library (or, for acme, Shopify and Slack, node:crypto following their documentation).
import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { type SigningKey, simulatedSenders } from '../src/ops/sender-setup/simulator.ts';
import { senderDescriptions } from '../src/senders/senders.ts';
import { signAsSender } from '../src/senders/signing.ts';
import { acmeEvent, signedHeaders, TEST_NOW_SECONDS, TEST_SECRET } from './helpers/acme.ts';
import { type NamedSender, namedSenders } from './helpers/named-senders.ts';
import {
  githubSender,
  type Sender,
  shopifySender,
  slackSender,
  standardSender,
  stripeSender,
} from './helpers/senders.ts';

/** Every header the simulator sends, compared with the oracle's value under the same name. */
function sharedHeaders(simulated: Record<string, string>, oracle: Record<string, string>) {
  // Shopify's `triggered-at` is informational: the oracle's is a fixed date, the simulator's now.
  const names = Object.keys(simulated).filter((name) => name !== 'x-shopify-triggered-at');
  return {
    simulated: Object.fromEntries(names.map((name) => [name, simulated[name]])),
    oracle: Object.fromEntries(names.map((name) => [name, oracle[name]])),
  };
}

describe('the simulator signs as each sender does', () => {
  it.each([
    ['standard', standardSender, 'invoice.paid', 'webhook-signature'],
    ['stripe', stripeSender, 'invoice.paid', 'stripe-signature'],
    ['github', githubSender, 'issues', 'x-hub-signature-256'],
    ['shopify', shopifySender, 'orders/create', 'x-shopify-hmac-sha256'],
    ['slack', slackSender, 'app_mention', 'x-slack-signature'],
  ] as Array<[string, Sender, string, string]>)('%s', async (name, sender, eventType, signatureHeader) => {
    const delivery = sender.newEvent();
    const sign = simulatedSenders[name]?.sign;
    const simulated = (await sign?.({ ...delivery, eventType }, { secret: sender.secrets[0] }, TEST_NOW_SECONDS)) ?? {};
    const { simulated: sent, oracle } = sharedHeaders(simulated, await sender.headers(delivery));
    expect(Object.keys(sent)).toContain(signatureHeader);
    expect(sent).toEqual(oracle);
  });

  it('acme', async () => {
    const event = acmeEvent();
    const body = JSON.stringify(event);
    const simulated = await simulatedSenders.acme?.sign(
      { eventId: event.id, body, eventType: event.type },
      { secret: TEST_SECRET },
      TEST_NOW_SECONDS,
    );
    expect(simulated).toEqual(await signedHeaders(body, { timestamp: TEST_NOW_SECONDS }));
  });

  it('refuses, naming the sender, what it cannot sign: a secret for a key, no URL to sign, a malformed secret', async () => {
    const outgoing = { eventId: 'evt_1', body: '{}', eventType: 'test' };
    const described = (name: string) => senderDescriptions.find((candidate) => candidate.name === name);
    const discord = described('discord');
    const hubspot = described('hubspot');
    const standard = described('standard');
    if (discord === undefined || hubspot === undefined || standard === undefined) throw new Error('no such sender');
    const secret = { secret: 'secret' };
    await expect(signAsSender(discord, outgoing, secret, TEST_NOW_SECONDS)).rejects.toThrow(
      'discord: signs with a private key, not a secret',
    );
    await expect(signAsSender(hubspot, outgoing, secret, TEST_NOW_SECONDS)).rejects.toThrow(
      'hubspot: signs the URL it posts to: none given',
    );
    await expect(signAsSender(standard, outgoing, { secret: 'not base64 VALUE' }, TEST_NOW_SECONDS)).rejects.toThrow(
      /^standard: every secret must be "whsec_" followed by base64$/,
    );
    const ecdsa = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.toCryptoKey(
      { name: 'ECDSA', namedCurve: 'P-256' },
      false,
      ['sign'],
    );
    await expect(signAsSender(discord, outgoing, { privateKey: ecdsa }, TEST_NOW_SECONDS)).rejects.toThrow(
      'discord: signs with no ECDSA-P256 private key',
    );
    const { signature: _signed, ...unsigned } = standard;
    await expect(signAsSender(unsigned, outgoing, secret, TEST_NOW_SECONDS)).rejects.toThrow('standard: signs nothing');
  });

  it("sends the time in the header a sender names for it (Shopify), and any secret as a token-only sender's token", async () => {
    const outgoing = { eventId: 'evt_1', body: '{}', eventType: 'orders/create' };
    const shopify = senderDescriptions.find((candidate) => candidate.name === 'shopify');
    const gitlab = senderDescriptions.find((candidate) => candidate.name === 'gitlab');
    if (shopify === undefined || gitlab === undefined) throw new Error('no such sender');
    const headers = await signAsSender(shopify, outgoing, { secret: TEST_SECRET }, TEST_NOW_SECONDS);
    expect(headers['x-shopify-triggered-at']).toBe(new Date(TEST_NOW_SECONDS * 1000).toISOString());
    const { signature: _signed, ...tokenOnly } = gitlab;
    const token = await signAsSender(tokenOnly, outgoing, { secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' }, 0);
    expect(token['x-gitlab-token']).toBe('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw');
  });
});

/** A key pair for a sender that signs with a private key: the public half as its oracle reads it. */
function privateKeyFor(sender: NamedSender): { key: SigningKey; configured: string } {
  const method = simulatedSenders[sender.name]?.description.signature?.methods.find(
    (candidate) => candidate.algorithm !== 'HMAC',
  );
  if (method === undefined || !('publicKey' in method)) throw new Error(`${sender.name}: no public key`);
  const pair =
    method.algorithm === 'Ed25519'
      ? generateKeyPairSync('ed25519')
      : generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const raw = Buffer.from(pair.publicKey.export({ format: 'jwk' }).x ?? '', 'base64url');
  const configured =
    method.publicKey === 'spki'
      ? pair.publicKey.export({ type: 'spki', format: 'der' }).toString('base64')
      : raw.toString(method.publicKey === 'hex' ? 'hex' : 'base64');
  return {
    key: {
      privateKey: pair.privateKey.toCryptoKey(
        method.algorithm === 'Ed25519' ? 'Ed25519' : { name: 'ECDSA', namedCurve: 'P-256' },
        false,
        ['sign'],
      ),
    },
    configured,
  };
}

describe("every sender's sample, signed by the simulator, passes the publisher's own verifier", () => {
  it.each(
    namedSenders
      .filter((sender) => sender.oracle !== undefined)
      .map((sender) => [sender.label ?? sender.name, sender] as const),
  )('%s', async (_label, sender) => {
    const simulated = simulatedSenders[sender.name];
    if (simulated === undefined) throw new Error(`${sender.name}: not simulated`);
    const nowSeconds = Math.floor(Date.now() / 1000);
    const [credential] = sender.credentials;
    const { key, configured } =
      sender.variable === 'publicKey'
        ? privateKeyFor(sender)
        : { key: { secret: credential.configured }, configured: credential.configured };
    const delivery = simulated.newDelivery(undefined, nowSeconds);
    const headers = await simulated.sign(delivery, key, nowSeconds, { url: sender.url });
    const verdict = await sender.oracle?.(delivery, headers, { ...credential, configured });
    expect(verdict).toBe(true);
  });
});
