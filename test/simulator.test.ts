// The simulator behind `webhook-inbox send` signs by the senders' descriptions (providers/signing.ts):
// for the six original senders its headers must be, byte for byte, those of each publisher's own
// library (or, for acme, Shopify and Slack, node:crypto following their documentation).
import { describe, expect, it } from 'vitest';
import { simulatedSchemes } from '../src/ops/simulator.ts';
import { senderDescriptions } from '../src/providers/senders.ts';
import { signAsSender } from '../src/providers/signing.ts';
import { acmeEvent, signedHeaders, TEST_NOW_SECONDS, TEST_SECRET } from './helpers/acme.ts';
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
    const sign = simulatedSchemes[name]?.sign;
    const simulated = (await sign?.({ ...delivery, eventType }, sender.secrets[0], TEST_NOW_SECONDS)) ?? {};
    const { simulated: sent, oracle } = sharedHeaders(simulated, await sender.headers(delivery));
    expect(Object.keys(sent)).toContain(signatureHeader);
    expect(sent).toEqual(oracle);
  });

  it('acme', async () => {
    const event = acmeEvent();
    const body = JSON.stringify(event);
    const simulated = await simulatedSchemes.acme?.sign(
      { eventId: event.id, body, eventType: event.type },
      TEST_SECRET,
      TEST_NOW_SECONDS,
    );
    expect(simulated).toEqual(await signedHeaders(body, { timestamp: TEST_NOW_SECONDS }));
  });

  it('refuses, naming the sender, what it cannot sign: a private key, a signed URL, a malformed secret', async () => {
    const outgoing = { eventId: 'evt_1', body: '{}', eventType: 'test' };
    const described = (name: string) => senderDescriptions.find((candidate) => candidate.name === name);
    const discord = described('discord');
    const hubspot = described('hubspot');
    const standard = described('standard');
    if (discord === undefined || hubspot === undefined || standard === undefined) throw new Error('no such sender');
    await expect(signAsSender(discord, outgoing, 'secret', TEST_NOW_SECONDS)).rejects.toThrow(/^discord: /);
    await expect(signAsSender(hubspot, outgoing, 'secret', TEST_NOW_SECONDS)).rejects.toThrow(/^hubspot: /);
    await expect(signAsSender(standard, outgoing, 'not base64 VALUE', TEST_NOW_SECONDS)).rejects.toThrow(
      /^standard: every secret must be "whsec_" followed by base64$/,
    );
  });
});
