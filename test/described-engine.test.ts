// The description engine (described.ts) on the paths no sender's everyday delivery takes: a time
// written in another format, a token-only description, a batch description without a payload
// schema, a signed URL or method, the reason each refusal gives. No HTTP and no database: what the
// engine decides, signed with node:crypto as each sender's documentation says.
import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { parseJsonText } from '../src/lib/json.ts';
import { describedSender, secretBytes, valueAt } from '../src/senders/described.ts';
import type { SenderDescription } from '../src/senders/description.ts';
import { utf8 } from '../src/senders/encoding.ts';
import { allSenders } from '../src/senders/registry.ts';
import { MAX_SIGNATURES } from '../src/senders/scheme.ts';
import { senderDescriptions } from '../src/senders/senders.ts';
import type { Sender, Verification } from '../src/senders/types.ts';
import { TEST_NOW_SECONDS } from './helpers/acme.ts';
import { namedSenders, sha256Hex } from './helpers/named-senders.ts';

const SECRET = 'engine-test-secret';
const at = { nowSeconds: TEST_NOW_SECONDS, toleranceSeconds: 300 };
const hmac = (content: string, encoding: 'hex' | 'base64', key: string | Buffer = SECRET) =>
  createHmac('sha256', key).update(content).digest(encoding);

/** The sender's description run by a provider built here, so what the engine works out once is worked out in the test. */
function provider(name: string): Sender {
  const found = senderDescriptions.find((candidate) => candidate.name === name);
  if (found === undefined) throw new Error(`no sender ${name}`);
  const built = describedSender(found);
  expect(allSenders.find((candidate) => candidate.name === name)?.credentials).toEqual(built.credentials);
  return built;
}

async function verify(
  sender: Sender,
  body: string,
  headers: Record<string, string>,
  extra: { method?: string; url?: string; secrets?: string[] } = {},
): Promise<Verification> {
  const keys = await sender.importKeys(extra.secrets ?? [SECRET]);
  const { method, url } = extra;
  return sender.verify(
    { body: utf8(body), headers: new Headers(headers), ...(method === undefined ? {} : { method }), url },
    keys,
    at,
  );
}

const malformed = { outcome: 'unauthorized', reason: 'signature_malformed' };
const missing = { outcome: 'unauthorized', reason: 'headers_missing' };
const mismatch = { outcome: 'unauthorized', reason: 'signature_mismatch' };
const stale = { outcome: 'unauthorized', reason: 'timestamp_outside_tolerance' };

describe('signed times are read in exactly the format described', () => {
  const box = provider('box');
  const body = JSON.stringify({ id: 'box_evt_1', trigger: 'FILE.UPLOADED', created_at: '2026-01-01T00:00:00Z' });
  const boxHeaders = (timestamp: string) => ({
    'box-delivery-timestamp': timestamp,
    'box-signature-primary': hmac(`${body}${timestamp}`, 'base64'),
  });

  it('accepts an RFC 3339 time, and refuses the same instant in a form Date.parse also reads', async () => {
    const verified = await verify(box, body, boxHeaders('2026-01-01T00:00:00Z'));
    expect(verified).toMatchObject({ outcome: 'verified', event: { eventId: 'box_evt_1' } });
    // Signed as sent: only the format refuses them.
    for (const written of ['Thu, 01 Jan 2026 00:00:00 GMT', '2026-01-01', '2026-01-01 00:00:00Z']) {
      expect(await verify(box, body, boxHeaders(written)), written).toEqual(stale);
    }
  });
});

describe('the reason a refusal gives', () => {
  const stripe = provider('stripe');
  const body = JSON.stringify({ id: 'evt_engine', object: 'event', type: 'customer.created', data: { object: {} } });
  const v1 = (key = SECRET) => `v1=${hmac(`${TEST_NOW_SECONDS}.${body}`, 'hex', key)}`;

  it('a signature header that is only blank carries no signature: malformed, not a mismatch', async () => {
    expect(await verify(stripe, body, { 'stripe-signature': '   ' })).toEqual(malformed);
    expect(await verify(provider('github'), '{}', { 'x-hub-signature-256': ' ', 'x-github-delivery': 'd' })).toEqual(
      malformed,
    );
  });

  it(`takes exactly ${MAX_SIGNATURES} signatures, the valid one last`, async () => {
    const strangers = Array.from({ length: MAX_SIGNATURES - 1 }, (_, index) => v1(`stranger-${index}`));
    const header = [`t=${TEST_NOW_SECONDS}`, ...strangers, v1()].join(',');
    expect(await verify(stripe, body, { 'stripe-signature': header })).toMatchObject({ outcome: 'verified' });
    const tooMany = [`t=${TEST_NOW_SECONDS}`, v1('one-more'), ...strangers, v1()].join(',');
    expect(await verify(stripe, body, { 'stripe-signature': tooMany })).toEqual(malformed);
  });

  it('a time entry must be there exactly once: none, or two, leaves it open which was signed', async () => {
    const t = `t=${TEST_NOW_SECONDS}`;
    expect(await verify(stripe, body, { 'stripe-signature': `${t},${v1()}` })).toMatchObject({ outcome: 'verified' });
    expect(await verify(stripe, body, { 'stripe-signature': v1() })).toEqual(missing);
    expect(await verify(stripe, body, { 'stripe-signature': `${t},${t},${v1()}` })).toEqual(missing);
  });

  it('a sender that signs its URL, verified without one: headers missing', async () => {
    const hubspot = provider('hubspot');
    const batch = JSON.stringify([{ eventId: 1, subscriptionType: 'contact.creation' }]);
    const timestamp = String(TEST_NOW_SECONDS * 1000);
    const url = 'https://hooks.example.com/webhooks/hubspot';
    const headers = {
      'x-hubspot-request-timestamp': timestamp,
      'x-hubspot-signature-v3': hmac(`POST${url}${batch}${timestamp}`, 'base64'),
    };
    expect(await verify(hubspot, batch, headers, { url })).toMatchObject({ outcome: 'verified_batch' });
    expect(await verify(hubspot, batch, headers)).toEqual(missing);
  });

  it('the method signed is the delivery’s, POST when it names none', async () => {
    const hubspot = provider('hubspot');
    const batch = JSON.stringify([{ eventId: 2, subscriptionType: 'contact.creation' }]);
    const timestamp = String(TEST_NOW_SECONDS * 1000);
    const url = 'https://hooks.example.com/webhooks/hubspot';
    const signedAs = (method: string) => ({
      'x-hubspot-request-timestamp': timestamp,
      'x-hubspot-signature-v3': hmac(`${method}${url}${batch}${timestamp}`, 'base64'),
    });
    expect(await verify(hubspot, batch, signedAs('PUT'), { url, method: 'PUT' })).toMatchObject({
      outcome: 'verified_batch',
    });
    expect(await verify(hubspot, batch, signedAs('POST'), { url, method: 'PUT' })).toEqual(mismatch);
    expect(await verify(hubspot, batch, signedAs('POST'), { url })).toMatchObject({ outcome: 'verified_batch' });
  });
});

describe('which events the body digest keys', () => {
  it('a time inside the signed body counts as signed: an id in the body under it needs no digest', async () => {
    const timeInBody = describedSender({
      name: 'timeinbody',
      signature: {
        headers: ['x-signature'],
        encoding: 'hex',
        methods: [{ algorithm: 'HMAC', hash: 'SHA-256', secret: 'utf8' }],
      },
      signed: '{body}',
      timestamp: { from: { path: ['sentAt'] }, format: 'unix' },
      id: { path: ['id'] },
      type: { path: ['type'] },
    });
    const fresh = JSON.stringify({ id: 'e1', type: 't', sentAt: TEST_NOW_SECONDS });
    const verified = await verify(timeInBody, fresh, { 'x-signature': hmac(fresh, 'hex') });
    expect(verified).toMatchObject({ outcome: 'verified', event: { eventId: 'e1' } });
    expect(verified.outcome === 'verified' && 'contentDigest' in verified.event).toBe(false);
    const old = JSON.stringify({ id: 'e1', type: 't', sentAt: TEST_NOW_SECONDS - 301 });
    expect(await verify(timeInBody, old, { 'x-signature': hmac(old, 'hex') })).toEqual(stale);
  });

  it('an id that is the body digest under a signed time is the digest, and no second key', async () => {
    const body = JSON.stringify({ triggerType: 'form_submission', payload: {} });
    const timestamp = String(TEST_NOW_SECONDS * 1000);
    const headers = { 'x-webflow-timestamp': timestamp, 'x-webflow-signature': hmac(`${timestamp}:${body}`, 'hex') };
    const verified = await verify(provider('webflow'), body, headers);
    expect(verified).toMatchObject({
      outcome: 'verified',
      event: { eventId: sha256Hex(body), eventType: 'form_submission', occurredAt: new Date(TEST_NOW_SECONDS * 1000) },
    });
    expect(verified.outcome === 'verified' && 'contentDigest' in verified.event).toBe(false);
  });
});

describe('a type with a suffix', () => {
  it('needs its base: a GitHub body with an action but no event header is refused, naming the header', async () => {
    const body = '{"action":"opened"}';
    const headers = { 'x-hub-signature-256': `sha256=${hmac(body, 'hex')}`, 'x-github-delivery': 'd-suffix' };
    expect(await verify(provider('github'), body, headers)).toEqual({
      outcome: 'invalid_payload',
      field: 'header x-github-event',
    });
    expect(await verify(provider('github'), body, { ...headers, 'x-github-event': 'issues' })).toMatchObject({
      outcome: 'verified',
      event: { eventId: 'd-suffix', eventType: 'issues.opened', contentDigest: sha256Hex(body) },
    });
  });
});

describe('a token key never checks a signature', () => {
  it('GitLab: a signature made with the digest of the plain token is refused', async () => {
    const gitlab = provider('gitlab');
    const token = 'plain-gitlab-token';
    const body = JSON.stringify({ object_kind: 'push' });
    const id = 'msg_token_key';
    // The token key's material is the token's SHA-256: whoever knows only that digest must not sign.
    const digestKey = Buffer.from(sha256Hex(token), 'hex');
    const headers = {
      'webhook-id': id,
      'webhook-timestamp': String(TEST_NOW_SECONDS),
      'webhook-signature': `v1,${hmac(`${id}.${TEST_NOW_SECONDS}.${body}`, 'base64', digestKey)}`,
    };
    expect(await verify(gitlab, body, headers, { secrets: [token] })).toEqual(mismatch);
    expect(
      await verify(gitlab, body, { 'x-gitlab-token': token, 'idempotency-key': id }, { secrets: [token] }),
    ).toMatchObject({ outcome: 'verified', event: { eventId: id, eventType: 'push' } });
  });
});

describe('a description with a token and no signature', () => {
  const description: SenderDescription = {
    name: 'tokenonly',
    token: { header: 'x-token' },
    id: { header: 'x-delivery' },
    type: { path: ['kind'] },
  };
  // Built in each test, so what the engine works out once is worked out while the test runs.
  const tokenSender = () => describedSender(description);
  const body = JSON.stringify({ kind: 'ping' });

  it('needs a secret only, and checks the token the delivery carries', async () => {
    const sender = tokenSender();
    expect(sender.credentials).toEqual({ secret: true, publicKey: false, url: false });
    const verified = await verify(sender, body, { 'x-token': SECRET, 'x-delivery': 'd1' });
    // The id is an unsigned header: the body's digest keys the event beside it.
    expect(verified).toEqual({
      outcome: 'verified',
      event: {
        eventId: 'd1',
        eventType: 'ping',
        occurredAt: null,
        payload: { kind: 'ping' },
        unknownSchemaVersion: false,
        contentDigest: sha256Hex(body),
      },
    });
    expect(await verify(sender, body, { 'x-token': 'another', 'x-delivery': 'd1' })).toEqual(mismatch);
    expect(await verify(sender, body, { 'x-delivery': 'd1' })).toEqual(missing);
  });

  it('with a signature in any one of its headers, is judged by that signature, not the token', async () => {
    const key = Buffer.alloc(24, 3);
    const both = describedSender({
      name: 'tokenandtwo',
      token: { header: 'x-token' },
      signature: {
        headers: ['sig-a', 'sig-b'],
        encoding: 'base64',
        methods: [{ algorithm: 'HMAC', hash: 'SHA-256', secret: 'whsec' }],
      },
      signed: '{body}',
      id: { path: ['id'] },
      type: { path: ['kind'] },
    });
    const signedBody = JSON.stringify({ id: 'e2', kind: 'ping' });
    const secrets = [`whsec_${key.toString('base64')}`];
    expect(await verify(both, signedBody, { 'sig-b': hmac(signedBody, 'base64', key) }, { secrets })).toMatchObject({
      outcome: 'verified',
      event: { eventId: 'e2' },
    });
  });

  it('reads unprefixed headers when its header-set list is empty', async () => {
    const unprefixed = describedSender({ ...description, name: 'tokenempty', headerSets: [] });
    expect(await verify(unprefixed, body, { 'x-token': SECRET, 'x-delivery': 'd2' })).toMatchObject({
      outcome: 'verified',
      event: { eventId: 'd2' },
    });
  });
});

describe('where a refused field is named', () => {
  it('an id read at a nested path is named by its dotted path', async () => {
    const body = JSON.stringify({ event: { type: 'charge:created' } });
    expect(await verify(provider('coinbase'), body, { 'x-cc-webhook-signature': hmac(body, 'hex') })).toEqual({
      outcome: 'invalid_payload',
      field: 'event.id',
    });
  });

  it('a batch event whose type and suffix together exceed 255 characters names its type; 255 are taken', async () => {
    const event = { id: 'EV1', resource_type: 'r'.repeat(200), action: 'a'.repeat(60) };
    const body = JSON.stringify({ events: [{ id: 'EV0', resource_type: 'payments', action: 'paid' }, event] });
    // Set aside, named; its batch-mate goes on.
    expect(await verify(provider('gocardless'), body, { 'webhook-signature': hmac(body, 'hex') })).toMatchObject({
      outcome: 'verified_batch',
      events: [{ eventId: 'EV0' }],
      refused: [{ field: 'events.1.resource_type' }],
    });
    const alone = JSON.stringify({ events: [event] });
    expect(await verify(provider('gocardless'), alone, { 'webhook-signature': hmac(alone, 'hex') })).toEqual({
      outcome: 'invalid_payload',
      field: 'events.0.resource_type',
    });
    const longest = { id: 'EV2', resource_type: 'r'.repeat(200), action: 'a'.repeat(54) };
    const accepted = JSON.stringify({ events: [longest] });
    expect(
      await verify(provider('gocardless'), accepted, { 'webhook-signature': hmac(accepted, 'hex') }),
    ).toMatchObject({
      outcome: 'verified_batch',
      events: [{ eventId: 'EV2', eventType: `${'r'.repeat(200)}.${'a'.repeat(54)}` }],
    });
  });

  it('a header id is named with its header set, every name it may come under', async () => {
    const shopifyBody = '{"id":1}';
    const shopify = { 'x-shopify-hmac-sha256': hmac(shopifyBody, 'base64'), 'x-shopify-topic': 'orders/create' };
    expect(await verify(provider('shopify'), shopifyBody, shopify)).toEqual({
      outcome: 'invalid_payload',
      field: 'header x-shopify-webhook-id',
    });
    const gitlabBody = '{"object_kind":"push"}';
    expect(await verify(provider('gitlab'), gitlabBody, { 'x-gitlab-token': SECRET })).toEqual({
      outcome: 'invalid_payload',
      field: 'header webhook-id|idempotency-key',
    });
  });

  it('an id is 1 to 255 characters, or a non-negative integer written exactly', async () => {
    const coinbase = provider('coinbase');
    // The id's JSON text as written in the body, and the id stored (null: refused, naming event.id).
    const cases: Array<[string, string | null]> = [
      ['"a"', 'a'],
      [`"${'i'.repeat(255)}"`, 'i'.repeat(255)],
      ['""', null],
      [`"${'i'.repeat(256)}"`, null],
      ['0', '0'],
      ['42', '42'],
      ['-1', null],
      ['1.5', null],
      ['1152921504606846976', '1152921504606846976'],
      ['-1152921504606846976', null],
      [`1${'0'.repeat(254)}`, `1${'0'.repeat(254)}`],
      [`1${'0'.repeat(255)}`, null],
      ['true', null],
    ];
    for (const [written, stored] of cases) {
      const body = `{"event":{"id":${written},"type":"charge:created"}}`;
      const verified = await verify(coinbase, body, { 'x-cc-webhook-signature': hmac(body, 'hex') });
      const expected =
        stored === null
          ? { outcome: 'invalid_payload', field: 'event.id' }
          : { outcome: 'verified', event: { eventId: stored } };
      expect(verified, written.slice(0, 20)).toMatchObject(expected);
    }
  });

  describe('a batch description without a payload schema', () => {
    const batchDescription = (path: readonly string[]): SenderDescription => ({
      name: 'batchnoschema',
      signature: {
        headers: ['x-signature'],
        encoding: 'hex',
        methods: [{ algorithm: 'HMAC', hash: 'SHA-256', secret: 'utf8' }],
      },
      signed: '{body}',
      events: { path },
      id: { path: ['id'] },
      type: { path: ['type'] },
    });
    const send = (path: readonly string[], body: string) =>
      verify(describedSender(batchDescription(path)), body, { 'x-signature': hmac(body, 'hex') });

    it('refuses a body whose events are not an array, naming where they were expected', async () => {
      expect(await send(['events'], '{"events":{"id":"a","type":"t"}}')).toEqual({
        outcome: 'invalid_payload',
        field: 'events',
      });
      expect(await send([], '{"id":"a","type":"t"}')).toEqual({ outcome: 'invalid_payload' });
    });

    it('sets aside an event without an id, naming it, and refuses a batch of no other', async () => {
      expect(await send(['events'], '{"events":[{"id":"a","type":"t"},{"type":"t"}]}')).toMatchObject({
        outcome: 'verified_batch',
        events: [{ eventId: 'a' }],
        refused: [{ field: 'events.1.id' }],
      });
      expect(await send(['events'], '{"events":[{"type":"t"},{"type":"t"}]}')).toEqual({
        outcome: 'invalid_payload',
        field: 'events.0.id',
      });
    });
  });
});

describe('secrets and schema versions', () => {
  it('refuses an empty secret at import, naming the sender and the form expected', async () => {
    await expect(provider('acme').importKeys([''])).rejects.toThrow('acme: every secret must be text');
    await expect(provider('standard').importKeys(['whsec_'])).rejects.toThrow(
      'standard: every secret must be "whsec_" followed by base64',
    );
  });

  it('a base64 secret is plain base64: a whsec_ prefix is not taken off', () => {
    expect(secretBytes('AAAA', 'base64')).toEqual(new Uint8Array([0, 0, 0]));
    expect(secretBytes('whsec_AAAA', 'base64')).toBeNull();
    expect(secretBytes('whsec_AAAA', 'whsec')).toEqual(new Uint8Array([0, 0, 0]));
  });

  it('knows every payload of a sender without schema versions, and only the known versions of acme, saying why not', () => {
    const stripeEvent = { id: 'evt', object: 'event', type: 't', api_version: '1999-01-01', data: { object: {} } };
    expect(provider('stripe').parkReasonOf?.(stripeEvent)).toBeUndefined();
    const acme = provider('acme');
    const acmeEvent = { id: 'evt', type: 't', api_version: '2024-06-01', created: 1, version: 1, data: {} };
    expect(acme.parkReasonOf?.(acmeEvent)).toBeUndefined();
    expect(acme.parkReasonOf?.({ ...acmeEvent, api_version: '2099-01-01' })).toBe(
      'unknown api_version 2099-01-01 (known: 2024-06-01)',
    );
    const { api_version: _, ...versionless } = acmeEvent;
    expect(acme.parkReasonOf?.(versionless)).toBe('no api_version (known: 2024-06-01)');
    expect(acme.parkReasonOf?.({ ...acmeEvent, api_version: [1] })).toBe(
      'api_version is not a version string (known: 2024-06-01)',
    );
    expect(acme.parkReasonOf?.({ ...acmeEvent, api_version: 'x'.repeat(200) })).toBe(
      `unknown api_version "${'x'.repeat(64)}…" (known: 2024-06-01)`,
    );
    expect(acme.parkReasonOf?.({ ...acmeEvent, api_version: 'v 2' })).toBe(
      'unknown api_version "v 2" (known: 2024-06-01)',
    );
    expect(acme.parkReasonOf?.({ ...acmeEvent, created: -1 })).toBe(
      'the payload no longer matches the acme schema of its version',
    );
  });
});

describe('valueAt reads what the payload itself says', () => {
  const payload = parseJsonText('{"list":["first"],"byName":{"0":"zero"},"amount":0.10000000000000000001}');

  it('indexes arrays by number and objects by name, never the other way round', () => {
    expect(valueAt(payload, ['list', 0])).toBe('first');
    expect(valueAt(payload, ['list', '0'])).toBeUndefined();
    expect(valueAt(payload, ['byName', '0'])).toBe('zero');
    expect(valueAt(payload, ['byName', 0])).toBeUndefined();
  });

  it('never reads inside an exact number, nor an inherited member', () => {
    expect(valueAt(payload, ['amount', 'value'])).toBeUndefined();
    expect(valueAt(payload, ['byName', 'constructor'])).toBeUndefined();
    expect(valueAt(payload, ['missing', 'deeper'])).toBeUndefined();
  });
});

describe('every named sender through the engine alone', () => {
  it.each(namedSenders.map((sender) => [sender.label ?? sender.name, sender] as const))(
    '%s: its own signature is verified, with the id, type and second key its description gives; a stranger’s is not',
    async (_label, sender) => {
      const engine = provider(sender.name);
      const [credential] = sender.credentials;
      const configured = [credential.configured];
      const keys =
        sender.variable === 'secret' ? await engine.importKeys(configured) : await engine.importKeys([], configured);
      const outgoing = sender.newEvent(TEST_NOW_SECONDS);
      const deliver = (headers: Record<string, string>) =>
        engine.verify({ body: utf8(outgoing.body), headers: new Headers(headers), url: sender.url }, keys, at);
      const verified = await deliver(sender.headers(outgoing, credential, TEST_NOW_SECONDS));
      const event =
        verified.outcome === 'verified'
          ? verified.event
          : verified.outcome === 'verified_batch'
            ? verified.events[0]
            : null;
      expect(event, verified.outcome).not.toBeNull();
      expect(event?.eventId).toBe(sender.id === 'digest' ? sha256Hex(outgoing.body) : outgoing.eventId);
      expect(event?.eventType).toBe(outgoing.eventType);
      const keyed = sender.id === 'unsigned-header' || sender.token === true || !sender.signsTime;
      const digest = sender.id === 'event' ? sha256Hex(outgoing.eventId ?? '') : sha256Hex(outgoing.body);
      expect(event?.contentDigest).toBe(keyed ? digest : undefined);
      expect(engine.credentials?.publicKey).toBe(sender.variable === 'publicKey' || sender.name === 'standard');
      expect(engine.credentials?.secret).toBe(sender.variable === 'secret');
      expect(engine.credentials?.url).toBe(sender.url !== undefined);

      const stranger = await deliver(sender.headers(outgoing, sender.stranger, TEST_NOW_SECONDS));
      expect(stranger).toEqual(sender.token === true ? mismatch : expect.objectContaining({ outcome: 'unauthorized' }));
    },
  );
});

describe('more refusals, each with its reason', () => {
  const github = provider('github');
  const body = '{"action":"opened"}';

  it('a signature without its prefix, or not hex, is malformed; an entry list that does not parse too', async () => {
    const headers = { 'x-github-delivery': 'd', 'x-github-event': 'issues' };
    expect(await verify(github, body, { ...headers, 'x-hub-signature-256': hmac(body, 'hex') })).toEqual(malformed);
    expect(await verify(github, body, { ...headers, 'x-hub-signature-256': `sha256=${'z'.repeat(64)}` })).toEqual(
      malformed,
    );
    const stripe = provider('stripe');
    expect(await verify(stripe, body, { 'stripe-signature': `t=${TEST_NOW_SECONDS},v1=${'z'.repeat(64)}` })).toEqual(
      malformed,
    );
    expect(await verify(stripe, body, { 'stripe-signature': `t=${TEST_NOW_SECONDS},v1` })).toEqual(malformed);
  });

  it('a signed header id that is missing: headers missing', async () => {
    const standard = provider('standard');
    const secret = `whsec_${Buffer.alloc(24, 1).toString('base64')}`;
    const content = `.${TEST_NOW_SECONDS}.${body}`;
    const headers = {
      'webhook-timestamp': String(TEST_NOW_SECONDS),
      'webhook-signature': `v1,${hmac(content, 'base64', Buffer.alloc(24, 1))}`,
    };
    expect(await verify(standard, body, headers, { secrets: [secret] })).toEqual(missing);
  });

  it('GitLab: its signing secret sent as a plain token is refused', async () => {
    const secret = `whsec_${Buffer.alloc(24, 2).toString('base64')}`;
    const headers = { 'x-gitlab-token': secret, 'idempotency-key': 'k1' };
    expect(await verify(provider('gitlab'), '{"object_kind":"push"}', headers, { secrets: [secret] })).toEqual(
      mismatch,
    );
  });

  it('Box: an empty secondary beside a valid primary is no signature; the tolerance holds at both edges', async () => {
    const box = provider('box');
    const boxBody = JSON.stringify({ id: 'box_evt_2', trigger: 'FILE.UPLOADED', created_at: '2025-06-01T00:00:00Z' });
    const signedAt = (seconds: number) => {
      const timestamp = new Date(seconds * 1000).toISOString();
      return { 'box-delivery-timestamp': timestamp, 'box-signature-primary': hmac(`${boxBody}${timestamp}`, 'base64') };
    };
    expect(await verify(box, boxBody, { ...signedAt(TEST_NOW_SECONDS), 'box-signature-secondary': '' })).toMatchObject({
      outcome: 'verified',
      event: { occurredAt: new Date('2025-06-01T00:00:00Z') },
    });
    for (const offset of [-300, 300]) {
      expect(await verify(box, boxBody, signedAt(TEST_NOW_SECONDS + offset))).toMatchObject({ outcome: 'verified' });
    }
    for (const offset of [-301, 301])
      expect(await verify(box, boxBody, signedAt(TEST_NOW_SECONDS + offset))).toEqual(stale);
  });

  it('acme: a known schema version is known, another is kept and flagged', async () => {
    const acme = provider('acme');
    const event = { id: 'evt_v', type: 't', api_version: '2024-06-01', created: 1, version: 1, data: {} };
    const sign = (text: string) => ({
      'x-acme-timestamp': String(TEST_NOW_SECONDS),
      'x-acme-signature': hmac(`${TEST_NOW_SECONDS}.${text}`, 'hex'),
    });
    const known = JSON.stringify(event);
    expect(await verify(acme, known, sign(known))).toMatchObject({ event: { unknownSchemaVersion: false } });
    const later = JSON.stringify({ ...event, api_version: '2099-01-01' });
    expect(await verify(acme, later, sign(later))).toMatchObject({ event: { unknownSchemaVersion: true } });
  });

  it('Slack: a signed url_verification is answered with its challenge', async () => {
    const slackBody = JSON.stringify({ type: 'url_verification', challenge: 'c-123' });
    const headers = {
      'x-slack-request-timestamp': String(TEST_NOW_SECONDS),
      'x-slack-signature': `v0=${hmac(`v0:${TEST_NOW_SECONDS}:${slackBody}`, 'hex')}`,
    };
    expect(await verify(provider('slack'), slackBody, headers)).toEqual({
      outcome: 'respond',
      body: '{"challenge":"c-123"}',
      reason: 'url_verification',
    });
  });

  it('names the sender when a public key or the description itself is unusable', async () => {
    await expect(provider('discord').importKeys([], ['zz'])).rejects.toThrow(/^discord: /);
    const invalid = describedSender({
      name: 'Bad!',
      token: { header: 'x-t' },
      id: { path: ['id'] },
      type: { path: ['t'] },
    });
    await expect(invalid.importKeys(['s'])).rejects.toThrow('Bad!: invalid description: name must be lower-case');
  });

  it('NFKD and UTF-8 secrets are their text’s bytes, decomposed or not', () => {
    expect(secretBytes('\u00e9', 'nfkd')).toEqual(utf8('e\u0301'));
    expect(secretBytes('\u00e9', 'utf8')).toEqual(utf8('\u00e9'));
  });

  it('a body that is not UTF-8 or not JSON, or not the sender’s schema, is an invalid payload', async () => {
    const github = provider('github');
    const keys = await github.importKeys([SECRET]);
    const bytes = new Uint8Array([0x7b, 0xff, 0x7d]);
    const headers = new Headers({
      'x-hub-signature-256': `sha256=${createHmac('sha256', SECRET).update(bytes).digest('hex')}`,
      'x-github-delivery': 'd-bytes',
      'x-github-event': 'push',
    });
    expect(await github.verify({ body: bytes, headers }, keys, at)).toEqual({ outcome: 'invalid_payload' });
    const stripeBody = '{"id":"evt_thin","type":"t"}';
    const stripeHeaders = {
      'stripe-signature': `t=${TEST_NOW_SECONDS},v1=${hmac(`${TEST_NOW_SECONDS}.${stripeBody}`, 'hex')}`,
    };
    expect(await verify(provider('stripe'), stripeBody, stripeHeaders)).toMatchObject({
      outcome: 'invalid_payload',
      field: expect.any(String),
    });
  });

  it('Zoom: its URL validation is answered with the token’s HMAC under the secret', async () => {
    const zoomBody = JSON.stringify({ event: 'endpoint.url_validation', payload: { plainToken: 'pt-1' } });
    const headers = {
      'x-zm-request-timestamp': String(TEST_NOW_SECONDS),
      'x-zm-signature': `v0=${hmac(`v0:${TEST_NOW_SECONDS}:${zoomBody}`, 'hex')}`,
    };
    expect(await verify(provider('zoom'), zoomBody, headers)).toEqual({
      outcome: 'respond',
      body: JSON.stringify({ plainToken: 'pt-1', encryptedToken: hmac('pt-1', 'hex') }),
      reason: 'endpoint.url_validation',
    });
  });

  it('LINE: an empty batch (its check of a new URL) is answered and stores nothing', async () => {
    const lineBody = '{"destination":"U1","events":[]}';
    expect(await verify(provider('line'), lineBody, { 'x-line-signature': hmac(lineBody, 'base64') })).toEqual({
      outcome: 'respond',
      body: '{"received":true}',
      reason: 'empty_batch',
    });
  });

  it("LINE: its schema's refusal inside one event sets that event aside; one about the envelope refuses the delivery", async () => {
    const line = (body: string) => verify(provider('line'), body, { 'x-line-signature': hmac(body, 'base64') });
    const good = { webhookEventId: '01A', type: 'follow' };
    expect(await line(JSON.stringify({ destination: 'U1', events: [{ type: 'follow' }, good, 7] }))).toMatchObject({
      outcome: 'verified_batch',
      events: [{ eventId: '01A', eventType: 'follow' }],
      refused: [{ field: 'events.0.webhookEventId' }, { field: 'events.2' }],
    });
    expect(await line(JSON.stringify({ events: [good, { type: 'follow' }] }))).toEqual({
      outcome: 'invalid_payload',
      field: 'destination',
    });
    expect(await line(JSON.stringify({ destination: 'U1', events: { 0: good } }))).toEqual({
      outcome: 'invalid_payload',
      field: 'events',
    });
    // The all-good batch carries no `refused` at all.
    expect(await line(JSON.stringify({ destination: 'U1', events: [good] }))).not.toHaveProperty('refused');
  });

  it('a delivery without its signature header is malformed', async () => {
    expect(await verify(provider('github'), '{}', { 'x-github-delivery': 'd', 'x-github-event': 'push' })).toEqual(
      malformed,
    );
  });

  it('a token-only sender takes any secret as its token, one written whsec_… too', async () => {
    const sender = describedSender({
      name: 'tokenwhsec',
      token: { header: 'x-token' },
      id: { path: ['id'] },
      type: { path: ['kind'] },
    });
    const secret = 'whsec_AAAA';
    expect(await verify(sender, '{"id":"w1","kind":"k"}', { 'x-token': secret }, { secrets: [secret] })).toMatchObject({
      outcome: 'verified',
      event: { eventId: 'w1' },
    });
    const twoProblems = describedSender({ name: 'Bad!', id: { path: ['id'] }, type: { path: ['t'] } });
    await expect(twoProblems.importKeys(['s'])).rejects.toThrow(
      'Bad!: invalid description: name must be lower-case letters and digits; needs a signature or a token',
    );
  });

  it('Slack: an event time in seconds is a time, in milliseconds none (it is described as seconds)', async () => {
    const slack = provider('slack');
    const send = (eventTime: number) => {
      const text = JSON.stringify({
        type: 'event_callback',
        event_id: `Ev${eventTime}`,
        event: { type: 'message' },
        event_time: eventTime,
      });
      return verify(slack, text, {
        'x-slack-request-timestamp': String(TEST_NOW_SECONDS),
        'x-slack-signature': `v0=${hmac(`v0:${TEST_NOW_SECONDS}:${text}`, 'hex')}`,
      });
    };
    expect(await send(TEST_NOW_SECONDS)).toMatchObject({ event: { occurredAt: new Date(TEST_NOW_SECONDS * 1000) } });
    expect(await send(TEST_NOW_SECONDS * 1000)).toMatchObject({ event: { occurredAt: null } });
  });

  it('a batch at a nested path names that path when it is not an array', async () => {
    const nested = describedSender({
      name: 'nestedbatch',
      signature: {
        headers: ['x-signature'],
        encoding: 'hex',
        methods: [{ algorithm: 'HMAC', hash: 'SHA-256', secret: 'utf8' }],
      },
      signed: '{body}',
      events: { path: ['data', 'events'] },
      id: { path: ['id'] },
      type: { path: ['type'] },
    });
    const text = '{"data":{"events":{}}}';
    expect(await verify(nested, text, { 'x-signature': hmac(text, 'hex') })).toEqual({
      outcome: 'invalid_payload',
      field: 'data.events',
    });
  });

  it('a path through null reads nothing', () => {
    expect(valueAt(parseJsonText('{"a":null}'), ['a', 'b'])).toBeUndefined();
  });
});
