// What some senders do beyond the shared suite (test/senders.test.ts), each asserting what was
// stored: signature lists and several signatures (Standard Webhooks' `v1` entries among `v1a` ones
// and its Ed25519 `v1a`, Stripe's several `v1`, Box's two headers, the cap on how many), protocol
// messages answered without storing (Slack's, Zoom's URL validation, Discord's ping), where types
// and ids come from (Standard Webhooks, Slack, GitHub, Shopify, GitLab), authentic deliveries still
// refused (for their payload, a missing header, a lax DER signature, Linear's missing signed time),
// and how a sender that cannot be enabled as configured stops start-up, naming it and never a value.
import { createHmac, generateKeyPairSync, sign } from 'node:crypto';
import { verifyKey as discordVerifyKey } from 'discord-interactions';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfig } from '../src/config.ts';
import { senderExtras } from '../src/sender-variables.ts';
import { derToP1363, importPrivateKey, importPublicKey, p1363ToDer } from '../src/senders/asymmetric.ts';
import { describedSender } from '../src/senders/described.ts';
import { descriptionProblems, type SenderDescription } from '../src/senders/description.ts';
import { MAX_SIGNATURES } from '../src/senders/parsing.ts';
import { enableSenders } from '../src/senders/registry.ts';
import { TEST_NOW_MS, TEST_NOW_SECONDS, uniqueId } from './helpers/acme.ts';
import { buildTestApp } from './helpers/app.ts';
import { useTestDatabase } from './helpers/database.ts';
import { countEvents, eventRow, senderRows } from './helpers/facts.ts';
import { discordKeys, enableNamedSenders, namedSenders, zoomOracle, zoomSecrets } from './helpers/named-senders.ts';
import {
  allSenderSecrets,
  githubHeaders,
  githubSender,
  type Sender,
  shopifySender,
  slackEventCallback,
  slackSender,
  standardSender,
  stripeEvent,
  stripeHeader,
  stripeSender,
} from './helpers/senders.ts';

const { sql, db } = await useTestDatabase();
const app = await buildTestApp(db, {
  enabledSenders: new Map([...(await enableSenders(allSenderSecrets())), ...(await enableNamedSenders())]),
});
const nowSeconds = () => Math.floor(Date.now() / 1000);

/** Posted on the app's clock at `nowMs`: real time by default, as several SDKs sign by their own clock. */
function post(name: string, body: string, headers: Record<string, string>, to = app, nowMs = Date.now()) {
  to.setNow(nowMs);
  return to.request(`/webhooks/${name}`, {
    method: 'POST',
    body,
    headers: { 'content-type': 'application/json', ...headers },
  });
}

/** The first senders' helpers (test/helpers/senders.ts) sign at TEST_NOW_SECONDS unless told otherwise. */
const postAtTestNow = (name: string, body: string, headers: Record<string, string>) =>
  post(name, body, headers, app, TEST_NOW_MS);

/** Signs `body` as `sender` would, with `eventId` where the sender carries the id in a header. */
async function send(sender: Sender, body: string, eventId = uniqueId('id')) {
  return postAtTestNow(sender.name, body, await sender.headers({ body, eventId }));
}

function sender(name: string) {
  const found = namedSenders.find((candidate) => candidate.name === name);
  if (found === undefined) throw new Error(`no sender ${name}`);
  return found;
}

/** Standard Webhooks' `webhook-signature` over `body` under `secret` (the helper's current one by default). */
const standardSignature = async (body: string, eventId: string, secret?: string) =>
  (await standardSender.headers({ body, eventId }, { secret }))['webhook-signature'] ?? '';

describe('Standard Webhooks signature lists', () => {
  it('skips v1a entries and accepts the v1 entry among them', async () => {
    const delivery = standardSender.newEvent();
    const headers = await standardSender.headers(delivery);
    const asymmetric = `v1a,${Buffer.alloc(64, 7).toString('base64')}`;
    const response = await postAtTestNow('standard', delivery.body, {
      ...headers,
      'webhook-signature': `${asymmetric} ${headers['webhook-signature']}`,
    });
    expect(response.status).toBe(200);
    expect((await eventRow(sql, delivery.eventId, 'standard'))?.status).toBe('ignored');
  });

  it('accepts a sender rotating its secret: one entry per secret, the first from a key we lack', async () => {
    const delivery = standardSender.newEvent();
    const headers = await standardSender.headers(delivery);
    const theirs = await standardSignature(delivery.body, delivery.eventId, standardSender.strangerSecret);
    const response = await postAtTestNow('standard', delivery.body, {
      ...headers,
      'webhook-signature': `${theirs} ${headers['webhook-signature']}`,
    });
    expect(response.status).toBe(200);
    expect(await countEvents(sql, delivery.eventId)).toBe(1);
  });

  it('takes the type and the occurrence time from the payload; 400 without a type', async () => {
    const delivery = standardSender.newEvent();
    expect((await postAtTestNow('standard', delivery.body, await standardSender.headers(delivery))).status).toBe(200);
    expect((await eventRow(sql, delivery.eventId, 'standard'))?.event_type).toBe('invoice.paid');

    const untyped = { eventId: uniqueId('msg'), body: JSON.stringify({ data: {} }) };
    const response = await postAtTestNow('standard', untyped.body, await standardSender.headers(untyped));
    expect(response.status).toBe(400);
    expect(await response.text()).toBe('{"error":"invalid_payload"}');
    expect(await countEvents(sql, untyped.eventId)).toBe(0);
  });
});

describe("Standard Webhooks' v1a (Ed25519) signatures", () => {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const raw = Buffer.from(publicKey.export({ format: 'jwk' }).x ?? '', 'base64url');
  const stranger = generateKeyPairSync('ed25519').privateKey;
  const secret = `whsec_${Buffer.alloc(24, 7).toString('base64')}`;

  async function standardApp(secrets: string[], publicKeys: string[]) {
    const enabledSenders = await enableSenders({ standard: secrets }, { publicKeys: { standard: publicKeys } });
    return buildTestApp(db, { enabledSenders });
  }
  const delivery = () => {
    const id = uniqueId('msg');
    const timestamp = nowSeconds();
    const body = JSON.stringify({ type: 'invoice.paid', timestamp: new Date().toISOString(), data: {} });
    const content = `${id}.${timestamp}.${body}`;
    const v1a = (key = privateKey) => `v1a,${sign(null, Buffer.from(content), key).toString('base64')}`;
    return { id, timestamp, body, content, v1a };
  };
  const headers = (d: ReturnType<typeof delivery>, signature: string) => ({
    'webhook-id': d.id,
    'webhook-timestamp': String(d.timestamp),
    'webhook-signature': signature,
  });

  it('verifies against STANDARD_WEBHOOK_PUBLIC_KEY (whpk_ + base64), with or without a secret', async () => {
    const publicOnly = await standardApp([], [`whpk_${raw.toString('base64')}`]);
    const d = delivery();
    // An independent Ed25519 verifier agrees on the signature over `id.timestamp.body`.
    const signatureHex = Buffer.from(d.v1a().slice(4), 'base64').toString('hex');
    expect(await discordVerifyKey(d.content, signatureHex, '', raw.toString('hex'))).toBe(true);

    expect((await post('standard', d.body, headers(d, d.v1a()), publicOnly)).status).toBe(200);
    expect((await eventRow(sql, d.id, 'standard'))?.status).toBe('ignored');

    // A v1 HMAC means nothing without a secret; a v1a by another key nothing at all.
    const other = delivery();
    const v1 = new Webhook(secret).sign(other.id, new Date(other.timestamp * 1000), other.body);
    expect((await post('standard', other.body, headers(other, v1), publicOnly)).status).toBe(401);
    expect((await post('standard', other.body, headers(other, other.v1a(stranger)), publicOnly)).status).toBe(401);
    expect(await countEvents(sql, other.id)).toBe(0);
  });

  it('accepts either entry when both a secret and a public key are configured', async () => {
    const both = await standardApp([secret], [raw.toString('base64')]);
    const d = delivery();
    const v1 = new Webhook(secret).sign(d.id, new Date(d.timestamp * 1000), d.body);
    expect((await post('standard', d.body, headers(d, `${d.v1a(stranger)} ${v1}`), both)).status).toBe(200);
    const e = delivery();
    const wrongV1 = new Webhook(`whsec_${Buffer.alloc(24, 9).toString('base64')}`).sign(
      e.id,
      new Date(e.timestamp * 1000),
      e.body,
    );
    expect((await post('standard', e.body, headers(e, `${wrongV1} ${e.v1a()}`), both)).status).toBe(200);
    expect(await countEvents(sql, d.id)).toBe(1);
    expect(await countEvents(sql, e.id)).toBe(1);
  });

  it('refuses a v1a entry that is not 64 bytes of canonical base64', async () => {
    const both = await standardApp([secret], [raw.toString('base64')]);
    const d = delivery();
    const good = d.v1a();
    for (const signature of [
      good.replace(/=+$/, ''),
      `v1a,${Buffer.alloc(63).toString('base64')}`,
      `v1a,${good.slice(4, -8)}`,
    ]) {
      expect((await post('standard', d.body, headers(d, signature), both)).status).toBe(401);
    }
    expect(await countEvents(sql, d.id)).toBe(0);
  });
});

describe('Stripe-Signature', () => {
  it('tries every v1: a wrong first one and a right second one are accepted', async () => {
    const delivery = stripeSender.newEvent();
    const right = stripeHeader(delivery.body);
    const wrong = stripeHeader(delivery.body, { secret: stripeSender.strangerSecret });
    const v1 = (header: string) => header.split(',')[1] ?? '';
    const header = `t=${TEST_NOW_SECONDS},${v1(wrong)},${v1(right)}`;
    expect(v1(wrong)).not.toBe(v1(right));

    const response = await postAtTestNow('stripe', delivery.body, {
      'content-type': 'application/json',
      'stripe-signature': header,
    });
    expect(response.status).toBe(200);
    expect((await eventRow(sql, delivery.eventId, 'stripe'))?.status).toBe('ignored');
  });

  it('ignores v0 and unknown signature versions next to a valid v1', async () => {
    const delivery = stripeSender.newEvent();
    const header = `${stripeHeader(delivery.body)},v0=${'0'.repeat(64)},v9=whatever`;
    expect(
      (await postAtTestNow('stripe', delivery.body, { 'content-type': 'application/json', 'stripe-signature': header }))
        .status,
    ).toBe(200);
    expect(await countEvents(sql, delivery.eventId)).toBe(1);
  });

  it('refuses authentic bodies that are not snapshot events with 400, storing nothing', async () => {
    const thin = {
      id: uniqueId('evt'),
      object: 'v2.core.event',
      type: 'v1.billing.meter.error_report_triggered',
      created: '2026-01-01T00:00:00.000Z',
    };
    const noId = { ...stripeEvent('invoice.paid', {}), id: undefined };
    for (const event of [thin, noId]) {
      const body = JSON.stringify(event);
      const response = await postAtTestNow('stripe', body, {
        'content-type': 'application/json',
        'stripe-signature': stripeHeader(body),
      });
      expect(response.status).toBe(400);
    }
    expect(await countEvents(sql, thin.id)).toBe(0);
  });
});

describe("Box's two signature headers", () => {
  const box = sender('box');

  it('accepts a delivery whose secondary signature is ours while the primary is not', async () => {
    const outgoing = box.newEvent(nowSeconds());
    const now = nowSeconds();
    const ours = box.headers(outgoing, box.credentials[1], now);
    const theirs = box.headers(outgoing, box.stranger, now);
    const headers = {
      ...ours,
      'box-signature-primary': theirs['box-signature-primary'] ?? '',
      'box-signature-secondary': ours['box-signature-primary'] ?? '',
    };
    expect((await post('box', outgoing.body, headers)).status).toBe(200);
    expect((await eventRow(sql, outgoing.eventId ?? '', 'box'))?.event_type).toBe('FILE.UPLOADED');
  });

  it.each([
    ['empty', ''],
    ['blank', '  '],
    ['absent', undefined],
  ])(
    'accepts a valid primary beside an %s secondary, and still refuses a wrong primary beside it',
    async (_name, secondary) => {
      const now = nowSeconds();
      const outgoing = box.newEvent(now);
      const withSecondary = (headers: Record<string, string>) =>
        secondary === undefined ? headers : { ...headers, 'box-signature-secondary': secondary };
      expect((await post('box', outgoing.body, withSecondary(box.headers(outgoing, box.stranger, now)))).status).toBe(
        401,
      );
      expect(await countEvents(sql, outgoing.eventId)).toBe(0);
      expect(
        (await post('box', outgoing.body, withSecondary(box.headers(outgoing, box.credentials[0], now)))).status,
      ).toBe(200);
      expect(await countEvents(sql, outgoing.eventId)).toBe(1);
    },
  );
});

describe('the signature cap holds for every description', () => {
  it(`refuses Standard Webhooks' list of more than ${MAX_SIGNATURES} entries, even with a valid one among them`, async () => {
    const delivery = standardSender.newEvent();
    const headers = await standardSender.headers(delivery);
    const filler = await standardSignature(delivery.body, delivery.eventId, standardSender.strangerSecret);
    const entries = [...Array.from({ length: MAX_SIGNATURES }, () => filler), headers['webhook-signature']];
    const response = await postAtTestNow('standard', delivery.body, {
      ...headers,
      'webhook-signature': entries.join(' '),
    });
    expect(response.status).toBe(401);
    expect(await countEvents(sql, delivery.eventId)).toBe(0);
  });

  it(`refuses PagerDuty's list of more than ${MAX_SIGNATURES} entries, even with a valid one among them`, async () => {
    const pagerduty = sender('pagerduty');
    const outgoing = pagerduty.newEvent(nowSeconds());
    const good = pagerduty.headers(outgoing, pagerduty.credentials[0], 0)['x-pagerduty-signature'] ?? '';
    const filler = pagerduty.headers(outgoing, pagerduty.stranger, 0)['x-pagerduty-signature'] ?? '';
    const listed = (fillers: number) => [...Array.from({ length: fillers }, () => filler), good].join(',');
    expect((await post('pagerduty', outgoing.body, { 'x-pagerduty-signature': listed(MAX_SIGNATURES) })).status).toBe(
      401,
    );
    expect(await countEvents(sql, outgoing.eventId)).toBe(0);
    // One fewer, and the valid one is found among the rest.
    const within = await post('pagerduty', outgoing.body, { 'x-pagerduty-signature': listed(MAX_SIGNATURES - 1) });
    expect(within.status).toBe(200);
  });
});

describe('Slack protocol messages', () => {
  it('answers a signed url_verification with its challenge and stores nothing', async () => {
    const before = (await senderRows(sql, 'slack')).length;
    const challenge = '3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P';
    const body = JSON.stringify({ token: 'Jhj5dZrVaK7ZwHHjRyZWjbDl', challenge, type: 'url_verification' });

    const response = await send(slackSender, body);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/json');
    expect(await response.text()).toBe(JSON.stringify({ challenge }));
    expect((await senderRows(sql, 'slack')).length).toBe(before);
    expect(app.logs.some((line) => line.includes('"reason":"url_verification"'))).toBe(true);
  });

  it('refuses an unsigned url_verification without echoing the challenge', async () => {
    const body = JSON.stringify({ challenge: 'echo-me', type: 'url_verification' });
    const headers = await slackSender.headers({ body, eventId: '' }, { secret: slackSender.strangerSecret });
    const response = await postAtTestNow('slack', body, headers);
    expect(response.status).toBe(401);
    expect(await response.text()).toBe('{"error":"unauthorized"}');
  });

  it('acknowledges app_rate_limited without storing it', async () => {
    const before = (await senderRows(sql, 'slack')).length;
    const body = JSON.stringify({
      token: 't',
      type: 'app_rate_limited',
      team_id: 'T1',
      minute_rate_limited: 1518467820,
    });
    const response = await send(slackSender, body);
    expect(await response.text()).toBe('{"received":true}');
    expect((await senderRows(sql, 'slack')).length).toBe(before);
    expect(app.logs.some((line) => line.includes('"reason":"app_rate_limited"'))).toBe(true);
  });

  it('stores event_callback under its event_id, typed by the inner event', async () => {
    const event = slackEventCallback({ event: { type: 'reaction_added', reaction: 'tada' } });
    expect((await send(slackSender, JSON.stringify(event))).status).toBe(200);
    expect(await eventRow(sql, event.event_id, 'slack')).toMatchObject({
      event_type: 'reaction_added',
      status: 'ignored',
    });

    const unknownEnvelope = JSON.stringify({ type: 'block_actions', event_id: uniqueId('Ev') });
    expect((await send(slackSender, unknownEnvelope)).status).toBe(400);
  });
});

describe("Zoom's endpoint.url_validation", () => {
  const zoom = sender('zoom');
  const validation = (plainToken: string) =>
    JSON.stringify({ payload: { plainToken }, event_ts: Date.now(), event: 'endpoint.url_validation' });
  /** Posts a signed `endpoint.url_validation` body; with the headers sent and Zoom's row count before. */
  async function postValidation(body: string) {
    const headers = zoom.headers(
      { body, eventType: 'endpoint.url_validation' },
      zoomSecrets.credentials[0],
      nowSeconds(),
    );
    const before = (await senderRows(sql, 'zoom')).length;
    return { headers, before, response: await post('zoom', body, headers) };
  }

  it("is answered as Zoom's own receiver answers it, and nothing is stored", async () => {
    const body = validation('qgg8vlvZRS6UYooatFL8Aw');
    const { headers, before, response } = await postValidation(body);
    expect(response.status).toBe(200);
    const answer = await response.json();
    const oracle = await zoomOracle(body, headers, zoomSecrets.credentials[0]);
    expect(oracle.statusCode).toBe(200);
    expect(answer).toEqual(JSON.parse(oracle.body));
    expect(answer).toEqual({
      plainToken: 'qgg8vlvZRS6UYooatFL8Aw',
      encryptedToken: createHmac('sha256', zoomSecrets.credentials[0].configured)
        .update('qgg8vlvZRS6UYooatFL8Aw')
        .digest('hex'),
    });
    expect((await senderRows(sql, 'zoom')).length).toBe(before);
    expect(app.logs.some((line) => line.includes('"reason":"endpoint.url_validation"'))).toBe(true);
  });

  it('is stored as an ordinary event, not answered, when it carries no plainToken', async () => {
    // Only a validation Zoom's own receiver would answer gets a token back: one without a plainToken
    // is an event like any other (no answer to sign, and no 500).
    const body = JSON.stringify({ payload: {}, event_ts: Date.now(), event: 'endpoint.url_validation' });
    const { before, response } = await postValidation(body);
    expect(response.status).toBe(200);
    expect(await response.text()).not.toContain('encryptedToken');
    const rows = await senderRows(sql, 'zoom');
    expect(rows.length).toBe(before + 1);
    expect(rows.at(-1)).toMatchObject({ event_type: 'endpoint.url_validation', status: 'ignored' });
  });

  it('is refused like any delivery when its signature is not ours', async () => {
    const body = validation('probe');
    const headers = zoom.headers({ body, eventType: 'endpoint.url_validation' }, zoomSecrets.stranger, nowSeconds());
    const response = await post('zoom', body, headers);
    expect(response.status).toBe(401);
    expect(await response.text()).toBe('{"error":"unauthorized"}');
  });
});

describe("Discord's ping", () => {
  const ping = '{"version":1,"application_id":"1","type":0}';

  it('is answered 204 with no body when signed, and nothing is stored', async () => {
    const timestamp = String(nowSeconds());
    const signature = discordKeys[0].sign(`${timestamp}${ping}`);
    expect(await discordVerifyKey(ping, signature, timestamp, discordKeys[0].configured)).toBe(true);
    const before = (await senderRows(sql, 'discord')).length;

    const response = await post('discord', ping, {
      'x-signature-timestamp': timestamp,
      'x-signature-ed25519': signature,
    });
    expect(response.status).toBe(204);
    expect(await response.text()).toBe('');
    expect((await senderRows(sql, 'discord')).length).toBe(before);
    expect(app.logs.some((line) => line.includes('"reason":"ping"'))).toBe(true);
  });

  it('is the one 401 unsigned, or signed with 63 bytes', async () => {
    const timestamp = String(nowSeconds());
    const signature = discordKeys[0].sign(`${timestamp}${ping}`);
    for (const value of ['', signature.slice(0, -2), `${signature}00`]) {
      const response = await post('discord', ping, {
        'x-signature-timestamp': timestamp,
        'x-signature-ed25519': value,
      });
      expect(await response.text()).toBe('{"error":"unauthorized"}');
    }
  });
});

describe('GitHub and Shopify metadata headers', () => {
  it('types GitHub events as event.action when the payload has an action, else the event', async () => {
    const opened = githubSender.newEvent();
    expect((await postAtTestNow('github', opened.body, await githubSender.headers(opened))).status).toBe(200);
    expect((await eventRow(sql, opened.eventId, 'github'))?.event_type).toBe('issues.opened');

    const ping = { eventId: crypto.randomUUID(), body: JSON.stringify({ zen: uniqueId('zen'), hook_id: 1 }) };
    const headers = { ...(await githubSender.headers(ping)), ...githubHeaders(ping.eventId, 'ping') };
    expect((await postAtTestNow('github', ping.body, headers)).status).toBe(200);
    expect((await eventRow(sql, ping.eventId, 'github'))?.event_type).toBe('ping');
  });

  it.each([
    ['github', githubSender, 'x-github-delivery'],
    ['github', githubSender, 'x-github-event'],
    ['shopify', shopifySender, 'x-shopify-webhook-id'],
    ['shopify', shopifySender, 'x-shopify-topic'],
  ] as const)('%s: an authentic body without %s is 400 and stores nothing', async (name, sender, header) => {
    const delivery = sender.newEvent();
    const headers = await sender.headers(delivery);
    const before = (await senderRows(sql, name)).length;
    const response = await postAtTestNow(name, delivery.body, { ...headers, [header]: '' });
    expect(response.status).toBe(400);
    expect((await senderRows(sql, name)).length).toBe(before);
  });

  it('accepts Shopify’s un-prefixed header set', async () => {
    const delivery = shopifySender.newEvent();
    const prefixed = await shopifySender.headers(delivery);
    const unprefixed = Object.fromEntries(
      Object.entries(prefixed).map(([name, value]) => [name.replace(/^x-shopify-/, 'shopify-'), value]),
    );
    expect((await postAtTestNow('shopify', delivery.body, unprefixed)).status).toBe(200);
    expect(await eventRow(sql, delivery.eventId, 'shopify')).toMatchObject({ event_type: 'orders/create' });
  });
});

describe("GitLab's two tokens, configured side by side", () => {
  const [signing, secretToken] = namedSenders.filter((candidate) => candidate.name === 'gitlab');

  it('judges a delivery that carries a signature by its signature alone, however right its token', async () => {
    if (signing === undefined || secretToken === undefined) throw new Error('both GitLab senders expected');
    const outgoing = signing.newEvent(nowSeconds());
    const forged = {
      ...signing.headers(outgoing, signing.stranger, nowSeconds()),
      'x-gitlab-token': secretToken.credentials[0].configured,
    };
    expect((await post('gitlab', outgoing.body, forged)).status).toBe(401);
    // Nor is a signing token a secret token: sent in X-Gitlab-Token it is refused.
    const asToken = secretToken.headers(
      outgoing,
      { ...secretToken.credentials[0], configured: signing.credentials[0].configured },
      0,
    );
    expect((await post('gitlab', outgoing.body, asToken)).status).toBe(401);
    expect(await countEvents(sql, outgoing.eventId)).toBe(0);
  });

  it('keys a signed delivery on its signed webhook-id, whatever Idempotency-Key says', async () => {
    if (signing === undefined) throw new Error('GitLab signing sender expected');
    const outgoing = signing.newEvent(nowSeconds());
    const headers = { ...signing.headers(outgoing, signing.credentials[0], nowSeconds()), 'idempotency-key': 'other' };
    expect((await post('gitlab', outgoing.body, headers)).status).toBe(200);
    expect(await eventRow(sql, outgoing.eventId ?? '', 'gitlab')).toMatchObject({
      event_type: 'push',
      content_digest: null,
    });
    expect(await countEvents(sql, 'other')).toBe(0);
  });
});

describe('SendGrid signatures are strict DER', () => {
  it('refuses an ECDSA signature with a needless leading zero in r', async () => {
    const sendgrid = sender('sendgrid');
    const outgoing = sendgrid.newEvent(nowSeconds());
    const headers = sendgrid.headers(outgoing, sendgrid.credentials[0], nowSeconds());
    const der = Buffer.from(headers['x-twilio-email-event-webhook-signature'] ?? '', 'base64');
    const rLength = der[3] ?? 0;
    const padded = Buffer.concat([Buffer.from([0x30, (der[1] ?? 0) + 1, 0x02, rLength + 1, 0x00]), der.subarray(4)]);
    const response = await post('sendgrid', outgoing.body, {
      ...headers,
      'x-twilio-email-event-webhook-signature': padded.toString('base64'),
    });
    expect(response.status).toBe(401);
    expect((await post('sendgrid', outgoing.body, headers)).status).toBe(200);
  });

  it('refuses an ECDSA signature whose r or s is a negative INTEGER (its sign-padding zero left out)', async () => {
    const sendgrid = sender('sendgrid');
    const outgoing = sendgrid.newEvent(nowSeconds());
    const signatureHeader = 'x-twilio-email-event-webhook-signature';
    // About half of all signatures pad r with a zero (its top bit is set), and half pad s: sign until one does.
    let headers: Record<string, string> = {};
    let der = Buffer.alloc(0);
    const sAt = () => 4 + (der[3] ?? 0);
    const padded = (at: number) => der[at + 2] === 0x00 && ((der[at + 3] ?? 0) & 0x80) !== 0;
    for (let tries = 0; tries < 1000 && !(padded(2) && padded(sAt())); tries += 1) {
      headers = sendgrid.headers(outgoing, sendgrid.credentials[0], nowSeconds());
      der = Buffer.from(headers[signatureHeader] ?? '', 'base64');
    }
    if (!padded(2) || !padded(sAt())) throw new Error('no signature with both r and s padded in 1,000');
    /** The signature with the zero that keeps the INTEGER at `at` positive left out: the same bytes, read as negative. */
    const negative = (at: number) =>
      Buffer.concat([
        Buffer.from([0x30, (der[1] ?? 0) - 1]),
        der.subarray(2, at),
        Buffer.from([0x02, (der[at + 1] ?? 0) - 1]),
        der.subarray(at + 3),
      ]).toString('base64');
    for (const at of [2, sAt()]) {
      const response = await post('sendgrid', outgoing.body, { ...headers, [signatureHeader]: negative(at) });
      expect(response.status).toBe(401);
    }
    expect(await countEvents(sql, outgoing.eventId)).toBe(0);
    expect((await post('sendgrid', outgoing.body, headers)).status).toBe(200);
  });

  it('verifies genuine signatures whose r, or whose s, is shorter than 32 bytes (each about one in 256)', async () => {
    const sendgrid = sender('sendgrid');
    const outgoing = sendgrid.newEvent(nowSeconds());
    /** Bytes of a DER INTEGER's value, its sign-padding zero left out. */
    const valueBytes = (der: Buffer, at: number) => {
      const length = der[at + 1] ?? 0;
      return der[at + 2] === 0 ? length - 1 : length;
    };
    // ECDSA signing draws a fresh nonce each time: sign until r comes out short, and s, DER-encoded
    // as node:crypto and SendGrid write it (the INTEGER one or more bytes shorter).
    const short: { r?: Record<string, string>; s?: Record<string, string> } = {};
    for (let tries = 0; tries < 50_000 && (short.r === undefined || short.s === undefined); tries += 1) {
      const headers = sendgrid.headers(outgoing, sendgrid.credentials[0], nowSeconds());
      const der = Buffer.from(headers['x-twilio-email-event-webhook-signature'] ?? '', 'base64');
      const rAt = 2;
      const sAt = rAt + 2 + (der[rAt + 1] ?? 0);
      if (valueBytes(der, rAt) < 32) short.r ??= headers;
      if (valueBytes(der, sAt) < 32) short.s ??= headers;
    }
    for (const headers of [short.r, short.s]) {
      if (headers === undefined) throw new Error('no short r or s in 50,000 signatures');
      expect(await sendgrid.oracle?.(outgoing, headers, sendgrid.credentials[0])).toBe(true);
      expect((await post('sendgrid', outgoing.body, headers)).status).toBe(200);
    }
    expect(await countEvents(sql, outgoing.eventId)).toBe(1);
  });
});

describe('DER signatures, byte by byte', () => {
  const integer = (...bytes: number[]) => [0x02, bytes.length, ...bytes];
  const sequence = (...parts: number[][]) => new Uint8Array([0x30, parts.flat().length, ...parts.flat()]);
  /** r and s as the 64 bytes Web Crypto verifies, each right-aligned in its 32. */
  const raw = (r: number[], s: number[]) => {
    const bytes = new Uint8Array(64);
    bytes.set(r, 32 - r.length);
    bytes.set(s, 64 - s.length);
    return bytes;
  };

  it('reads short and sign-padded INTEGERs, zero included, into r || s', () => {
    expect(derToP1363(sequence(integer(0x01), integer(0x02)))).toEqual(raw([0x01], [0x02]));
    expect(derToP1363(sequence(integer(0x00), integer(0x00, 0x80)))).toEqual(raw([0x00], [0x80]));
  });

  it('refuses what is not strict DER: another tag, an empty INTEGER, a needless leading zero', () => {
    expect(derToP1363(sequence([0x03, 1, 0x01], integer(0x01)))).toBeNull();
    expect(derToP1363(sequence([0x02, 0], integer(0x01)))).toBeNull();
    expect(derToP1363(sequence(integer(0x00, 0x01), integer(0x01)))).toBeNull();
    expect(derToP1363(sequence(integer(0x01), integer(0x00, 0x7f)))).toBeNull();
  });

  it('writes r || s back as minimal DER (p1363ToDer)', () => {
    expect([...p1363ToDer(raw([0x01, 0x02], [0x80]))]).toEqual([...sequence(integer(0x01, 0x02), integer(0x00, 0x80))]);
    expect([...p1363ToDer(raw([], []))]).toEqual([...sequence(integer(0x00), integer(0x00))]);
  });

  it('refuses keys that are not of their kind, saying which kind is expected', async () => {
    await expect(importPublicKey('00ff', 'Ed25519', 'hex')).rejects.toThrow(
      'every public key must be an Ed25519 key written as hex',
    );
    const ecdsa = 'every public key must be an ECDSA P-256 key, base64 DER (SPKI) or PEM';
    await expect(importPublicKey('not base64', 'ECDSA-P256', 'spki')).rejects.toThrow(ecdsa);
    await expect(importPublicKey('AAAA', 'ECDSA-P256', 'spki')).rejects.toThrow(ecdsa);
    await expect(
      importPrivateKey('-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n', 'Ed25519'),
    ).rejects.toThrow('expected a PEM private key (PKCS#8, "BEGIN PRIVATE KEY") for Ed25519');
  });
});

describe("Linear's signed time", () => {
  it('refuses a signed body without webhookTimestamp: it could otherwise be replayed at any age', async () => {
    const linear = sender('linear');
    const outgoing = linear.newEvent(nowSeconds());
    const { webhookTimestamp: _dropped, ...untimed } = JSON.parse(outgoing.body) as Record<string, unknown>;
    const body = JSON.stringify(untimed);
    const headers = linear.headers({ ...outgoing, body }, linear.credentials[0], nowSeconds());

    const response = await post('linear', body, headers);
    expect(response.status).toBe(401);
    expect(await countEvents(sql, outgoing.eventId)).toBe(0);
    // The same event with its signed time is accepted.
    expect(
      (await post('linear', outgoing.body, linear.headers(outgoing, linear.credentials[0], nowSeconds()))).status,
    ).toBe(200);
  });
});

describe('senders that cannot be enabled as configured', () => {
  const good: SenderDescription = {
    name: 'example',
    signature: {
      headers: ['x-signature'],
      encoding: 'hex',
      methods: [{ algorithm: 'HMAC', hash: 'SHA-256', secret: 'utf8' }],
    },
    signed: '{timestamp}.{body}',
    timestamp: { from: { header: 'x-timestamp' }, format: 'unix' },
    id: { path: ['id'] },
    type: { path: ['type'] },
  };

  it('names every problem of an invalid description, and its import fails naming the sender', async () => {
    expect(descriptionProblems(good)).toEqual([]);
    const broken: SenderDescription = {
      ...good,
      name: 'Broken Sender',
      signed: '{timestamp}.{bdy}',
      id: { header: 'x-id' },
      timestamp: undefined,
    };
    expect(descriptionProblems(broken)).toEqual([
      'name must be lower-case letters and digits',
      'signed content names an unknown part {bdy}',
      'signed content must contain {body} (or {bodySha256}) exactly once',
      '{timestamp} is signed but no timestamp header or entry is described',
    ]);
    const unsignedTime = { ...good, signed: '{id}.{body}' };
    await expect(describedSender(unsignedTime).importKeys(['s'])).rejects.toThrow(
      'example: invalid description: a timestamp from a header or entry must be in the signed content; ' +
        '{id} is signed but the id is no header',
    );
    expect(descriptionProblems({ ...good, signature: undefined })).toEqual([
      'needs a signature or a token',
      'a token sender signs nothing: no signed content or timestamp',
    ]);
    expect(descriptionProblems({ ...good, token: { header: 'x-token' } })).toEqual([
      'a token beside a signature needs whsec_ secrets, the form that tells them apart',
    ]);
  });

  it('stops with the sender named, never the value: a malformed public key, a missing signed URL', async () => {
    await expect(enableSenders({}, { publicKeys: { discord: ['not-a-key-VALUE'] } })).rejects.toThrow(/^discord: /);
    await expect(enableSenders({}, { publicKeys: { discord: ['not-a-key-VALUE'] } })).rejects.not.toThrow(/VALUE/);
    await expect(enableSenders({}, { publicKeys: { sendgrid: ['bm90IGEga2V5'] } })).rejects.toThrow(/^sendgrid: /);
    await expect(enableSenders({ hubspot: ['s3cret'] })).rejects.toThrow(/^hubspot: .*HUBSPOT_WEBHOOK_URL/);
    // A key of a kind the sender does not use would enable it with nothing to verify by.
    await expect(enableSenders({ discord: ['s3cret'] })).rejects.toThrow(
      'discord: takes DISCORD_WEBHOOK_PUBLIC_KEY, not DISCORD_WEBHOOK_SECRET',
    );
    await expect(enableSenders({}, { publicKeys: { paddle: ['ab'.repeat(32)] } })).rejects.toThrow(
      'paddle: takes PADDLE_WEBHOOK_SECRET, not PADDLE_WEBHOOK_PUBLIC_KEY',
    );
    await expect(
      enableSenders({ paddle: ['s3cret'] }, { urls: { paddle: 'https://hooks.example.com/webhooks/paddle' } }),
    ).rejects.toThrow('paddle: takes PADDLE_WEBHOOK_SECRET, not PADDLE_WEBHOOK_URL');
  });

  it('reads every sender variable from the environment, naming a bad one', () => {
    const config = parseConfig({
      PADDLE_WEBHOOK_SECRET: 'pdl_a pdl_b',
      DISCORD_WEBHOOK_PUBLIC_KEY: 'ab'.repeat(32),
      SQUARE_WEBHOOK_SECRET: 'sq',
      SQUARE_WEBHOOK_URL: 'https://hooks.example.com/webhooks/square',
    });
    expect(config.senderSettings.paddle?.secrets).toEqual(['pdl_a', 'pdl_b']);
    // Slack's secret has its own name; the rule's name for it configures nothing.
    expect(parseConfig({ SLACK_SIGNING_SECRET: 'a', SLACK_WEBHOOK_SECRET: 'b' }).senderSettings.slack?.secrets).toEqual(
      ['a'],
    );
    expect(senderExtras(config)).toMatchObject({
      publicKeys: { discord: ['ab'.repeat(32)] },
      urls: { square: 'https://hooks.example.com/webhooks/square' },
    });
    expect(() => parseConfig({ HUBSPOT_WEBHOOK_URL: 'hooks.example.com/x', PORT: 'x' })).toThrow(ConfigError);
    try {
      parseConfig({ HUBSPOT_WEBHOOK_URL: 'hooks.example.com/x', PORT: 'x' });
    } catch (error) {
      const names = (error as ConfigError).problems.map((problem) => problem.split(':')[0]);
      expect(names.sort()).toEqual(['HUBSPOT_WEBHOOK_URL', 'PORT']);
      expect((error as ConfigError).message).not.toContain('hooks.example.com');
    }
  });

  it('answers 404 for a sender nobody listed', async () => {
    const response = await post('unlisted', '{}', {});
    expect(response.status).toBe(404);
    expect(await response.text()).toBe('{"error":"not_found"}');
  });
});
