// The publishers' own vectors, reproduced byte for byte by our signed-content construction and
// checked by each sender's verify function; the oracles agree on them too. Plus the strict decoders
// every sender relies on. No HTTP and no database: the signature layer alone.
import { sign as signGitHub } from '@octokit/webhooks-methods';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { sha256Hex } from '../src/senders/content-digest.ts';
import { secretBytes } from '../src/senders/described.ts';
import { type Bytes, decodeBase64, decodeBase64Url, decodeHex, encodeHex, utf8 } from '../src/senders/encoding.ts';
import { importHmacKey, signHmac } from '../src/senders/hmac.ts';
import { parseEntries } from '../src/senders/parsing.ts';
import { allSenders } from '../src/senders/registry.ts';
import type { Sender, Verification } from '../src/senders/types.ts';

function senderNamed(name: string): Sender {
  const found = allSenders.find((candidate) => candidate.name === name);
  if (found === undefined) throw new Error(`no sender ${name}`);
  return found;
}
const [standard, github, shopify, slack] = ['standard', 'github', 'shopify', 'slack'].map(senderNamed) as [
  Sender,
  Sender,
  Sender,
  Sender,
];

function standardKeyBytes(secret: string): Bytes {
  const bytes = secretBytes(secret, 'whsec');
  if (bytes === null) throw new Error('not a whsec_ secret');
  return bytes;
}

const base64 = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64');
const at = (nowSeconds: number) => ({ nowSeconds, toleranceSeconds: 300 });

async function verify(sender: Sender, secret: string, body: string, headers: Record<string, string>, now = 0) {
  const keys = await sender.importKeys([secret]);
  return sender.verify({ body: utf8(body), headers: new Headers(headers) }, keys, at(now));
}

/** One byte of the body changed: the answer that proves the first one came from the signature. */
const tampered = (body: string) => `${body.slice(0, -1)}${body.endsWith(' ') ? '_' : ' '}`;

describe('Standard Webhooks vector', () => {
  const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
  const id = 'msg_p5jXN8AQM9LWM0D4loKWxJek';
  const timestamp = 1614265330;
  const body = '{"test": 2432232314}';
  const expected = 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=';
  const headers = { 'webhook-id': id, 'webhook-timestamp': String(timestamp), 'webhook-signature': expected };

  it('is reproduced by our key derivation and signed content', async () => {
    const key = await importHmacKey(standardKeyBytes(secret));
    const signature = await signHmac(key, utf8(`${id}.${timestamp}.${body}`));
    expect(`v1,${base64(signature)}`).toBe(expected);
    expect(new Webhook(secret).sign(id, new Date(timestamp * 1000), body)).toBe(expected);
  });

  it('passes verify (then fails the payload check: the vector has no `type`), and one changed byte does not', async () => {
    expect(await verify(standard, secret, body, headers, timestamp)).toEqual({
      outcome: 'invalid_payload',
      field: 'type',
    });
    expect(await verify(standard, secret, tampered(body), headers, timestamp)).toEqual({
      outcome: 'unauthorized',
      reason: 'signature_mismatch',
    });
    expect(await verify(standard, secret, body, headers, timestamp + 301)).toEqual({
      outcome: 'unauthorized',
      reason: 'timestamp_outside_tolerance',
    });
  });

  it('refuses a secret that is not whsec_ + base64 at import, without echoing it', async () => {
    await expect(standard.importKeys(['whsec_not base64!'])).rejects.toThrow(/^standard: /);
    await expect(standard.importKeys(['whsec_not base64!'])).rejects.not.toThrow(/not base64!/);
    expect(standardKeyBytes('MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw')).toEqual(standardKeyBytes(secret));
  });
});

describe('GitHub vector', () => {
  const secret = "It's a Secret to Everybody";
  const body = 'Hello, World!';
  const expected = 'sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17';
  const headers = { 'x-hub-signature-256': expected, 'x-github-delivery': 'd1', 'x-github-event': 'ping' };

  it('is reproduced over the body alone', async () => {
    expect(`sha256=${encodeHex(await signHmac(await importHmacKey(secret), utf8(body)))}`).toBe(expected);
    expect(await signGitHub(secret, body)).toBe(expected);
  });

  it('passes verify (then fails the payload check: not JSON), and one changed byte does not', async () => {
    expect(await verify(github, secret, body, headers)).toEqual({ outcome: 'invalid_payload' });
    expect(await verify(github, secret, tampered(body), headers)).toEqual({
      outcome: 'unauthorized',
      reason: 'signature_mismatch',
    });
  });
});

describe('Shopify vector', () => {
  const secret = 'test_secret_key';
  const body = '{"foo": "bar"}';
  const expected = 'B23tXN681gZ0qIWNRrgtzBE9XSDo5yaUu6wfmhu3a7g=';
  const metadata = { 'webhook-id': 'b54557e4-bdd9-4b37-8a5f-bf7d70bcd043', topic: 'orders/create' };

  it('is reproduced over the body alone', async () => {
    expect(base64(await signHmac(await importHmacKey(secret), utf8(body)))).toBe(expected);
  });

  it.each(['x-shopify-', 'shopify-'])('verifies with the %s header set, keyed by id and body digest', async (set) => {
    const headers = {
      [`${set}hmac-sha256`]: expected,
      [`${set}webhook-id`]: metadata['webhook-id'],
      [`${set}topic`]: metadata.topic,
    };
    const outcome: Verification = await verify(shopify, secret, body, headers);
    expect(outcome).toEqual({
      outcome: 'verified',
      event: {
        eventId: metadata['webhook-id'],
        eventType: 'orders/create',
        occurredAt: null,
        payload: { foo: 'bar' },
        unknownSchemaVersion: false,
        contentDigest: await sha256Hex(utf8(body)),
      },
      // The sender and the signature that verified: what a copy of this delivery is known by.
      fingerprint: expect.stringMatching(
        new RegExp(`^shopify \\S+ ${Buffer.from(expected, 'base64').toString('hex')}$`),
      ),
    });
    expect(await verify(shopify, secret, tampered(body), headers)).toEqual({
      outcome: 'unauthorized',
      reason: 'signature_mismatch',
    });
  });
});

describe('Slack vector', () => {
  const secret = '8f742231b10e8888abcd99yyyzzz85a5';
  const timestamp = '1531420618';
  const body =
    'token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c';
  const expected = 'v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503';
  const headers = { 'x-slack-request-timestamp': timestamp, 'x-slack-signature': expected };

  it('is reproduced over v0:timestamp:body', async () => {
    const signature = await signHmac(await importHmacKey(secret), utf8(`v0:${timestamp}:${body}`));
    expect(`v0=${encodeHex(signature)}`).toBe(expected);
  });

  it('passes verify (then fails the payload check: a form body), and one changed byte does not', async () => {
    const now = Number(timestamp);
    expect(await verify(slack, secret, body, headers, now)).toEqual({ outcome: 'invalid_payload' });
    expect(await verify(slack, secret, tampered(body), headers, now)).toEqual({
      outcome: 'unauthorized',
      reason: 'signature_mismatch',
    });
    expect(await verify(slack, secret, body, headers, now - 301)).toEqual({
      outcome: 'unauthorized',
      reason: 'timestamp_outside_tolerance',
    });
  });
});

describe('strict decoding', () => {
  it('takes canonical padded base64 only', () => {
    expect(decodeBase64('QQ==')).toEqual(new Uint8Array([0x41]));
    expect(decodeBase64('')).toEqual(new Uint8Array([]));
    for (const text of ['QR==', 'QQ', 'QQ=', 'Q Q==', 'QQ==\n', '-_8=', 'QQ==QQ==', null]) {
      expect(decodeBase64(text), String(text)).toBeNull();
    }
  });

  it('takes whole hex bytes only, of exactly the length asked for', () => {
    expect(decodeHex('0aFf')).toEqual(new Uint8Array([0x0a, 0xff]));
    expect(decodeHex('0aff', 2)).toEqual(new Uint8Array([0x0a, 0xff]));
    for (const [text, length] of [
      ['0af', undefined],
      ['0af', 2],
      ['0aff', 1],
      ['0aff', 3],
      ['0aff0a', 2],
      ['0g', undefined],
      [null, 1],
      ['', undefined],
      // Each character just outside the alphabet: '/' ':' '@' 'G' '`' 'g', and a space, a sign, a non-ASCII letter.
      ...['/0', '0:', '@0', '0G', '`0', 'g0', ' 0', '+1', '0á'].map((text) => [text, undefined] as const),
    ] as const) {
      expect(decodeHex(text, length), `${text} ${length}`).toBeNull();
    }
  });

  it('writes every byte as two lower-case hex digits and reads each back, in either case', () => {
    const every = new Uint8Array(256).map((_, byte) => byte);
    const hex = encodeHex(every);
    expect(hex).toBe(Array.from(every, (byte) => byte.toString(16).padStart(2, '0')).join(''));
    expect(decodeHex(hex, 256)).toEqual(every);
    expect(decodeHex(hex.toUpperCase(), 256)).toEqual(every);
  });

  it('takes unpadded base64url only where a sender writes it', () => {
    expect(decodeBase64Url('-_8')).toEqual(new Uint8Array([0xfb, 0xff]));
    expect(decodeBase64Url('QQ')).toEqual(new Uint8Array([0x41]));
    for (const text of ['QQ==', '+/8', 'QR', 'Q', 'Q Q', null]) expect(decodeBase64Url(text), String(text)).toBeNull();
  });

  it('splits signature lists strictly', () => {
    const one = base64(new Uint8Array(32).fill(1));
    for (const header of ['', 'v1', ',x', 'v1,', `v1,${one}  v1,${one}`, null]) {
      expect(parseEntries(header, ' ', ','), String(header)).toBeNull();
    }
    expect(parseEntries('t=1,v1=ab=', ',', '=')).toEqual([
      ['t', '1'],
      ['v1', 'ab='],
    ]);
  });
});
