// Every sender through the HTTP route, each against an oracle that is not ours, in one suite: the
// five first schemes (Standard Webhooks, Stripe, GitHub, Shopify, Slack: test/helpers/senders.ts)
// signed by the publisher's own library, with the malformed headers each can be sent; the others
// (test/helpers/named-senders.ts) signed by node:crypto, which the publisher's SDK, or the example
// it publishes, must accept. Each is stored once under its authenticated id, refused with the one
// 401 when anything signed is changed, missing or malformed, keeps rotation and the time tolerance
// (or, signing no time, verifies a day later), and is 404 while unset. acme: test/signature.test.ts.
import { describe, expect, it } from 'vitest';
import { enableSenders } from '../src/senders/registry.ts';
import { TEST_NOW_SECONDS, TEST_SECRET, TOLERANCE_EDGES } from './helpers/acme.ts';
import { buildTestApp, type TestApp } from './helpers/app.ts';
import { useTestDatabase } from './helpers/database.ts';
import { countEvents, eventRow, providerRows } from './helpers/facts.ts';
import {
  enableNamedSenders,
  hmacCredential,
  type NamedSender,
  namedSenders,
  type Outgoing,
  sha256Hex,
} from './helpers/named-senders.ts';
import { allSchemeSecrets, type SchemeName, type Sender, senders } from './helpers/senders.ts';

const { sql, db } = await useTestDatabase();

const app = await buildTestApp(db, {
  enabledSenders: new Map([...(await enableSenders(allSchemeSecrets())), ...(await enableNamedSenders())]),
});

const UNAUTHORIZED = 'application/json {"error":"unauthorized"}';
const answer = async (response: Response) => `${response.headers.get('content-type')} ${await response.text()}`;

type Key = 'current' | 'previous' | 'stranger';
/** A delivery's body and headers, as one variant of it is sent. */
type Variant = [body: string, headers: Record<string, string>];

/** A sender as this suite plays it, whichever helper table it comes from. */
interface Played {
  label: string;
  name: string;
  /** Unix seconds now, as the sender signs: real time where an SDK checks its own clock. */
  now(): number;
  signsTime: boolean;
  id: NamedSender['id'];
  newEvent(now: number): Outgoing;
  sign(outgoing: Outgoing, key: Key, at: number): Promise<Record<string, string>>;
  /** The delivery with its signature missing, changed or malformed (or its body changed), by name. */
  broken(outgoing: Outgoing, good: Record<string, string>): Record<string, Variant>;
  /** The publisher's SDK or published example, for the named senders. */
  named?: NamedSender;
}

/** Where each scheme's stored id comes from, and the type its helper's event is stored under. */
const SCHEMES: Readonly<Record<SchemeName, { id: NamedSender['id']; eventType: string }>> = {
  standard: { id: 'signed-header', eventType: 'invoice.paid' },
  stripe: { id: 'payload', eventType: 'invoice.paid' },
  github: { id: 'unsigned-header', eventType: 'issues.opened' },
  shopify: { id: 'unsigned-header', eventType: 'orders/create' },
  slack: { id: 'payload', eventType: 'app_mention' },
};

function schemePlayed(sender: Sender): Played {
  const secret = { current: sender.secrets[0], previous: sender.secrets[1], stranger: sender.strangerSecret };
  return {
    label: sender.name,
    name: sender.name,
    // Fixed: the helpers' headers change a signed time to TEST_NOW_SECONDS - 1, which must stay in tolerance.
    now: () => TEST_NOW_SECONDS,
    signsTime: sender.signsTimestamp,
    id: SCHEMES[sender.name].id,
    newEvent: () => ({ ...sender.newEvent(), eventType: SCHEMES[sender.name].eventType }),
    sign: (outgoing, key, at) =>
      sender.headers({ body: outgoing.body, eventId: outgoing.eventId ?? '' }, { secret: secret[key], timestamp: at }),
    broken: (outgoing, good) => {
      const delivery = { body: outgoing.body, eventId: outgoing.eventId ?? '' };
      const malformed = Object.entries(sender.brokenHeaders(good, delivery)).map(
        ([name, headers]) => [name, [outgoing.body, headers]] as const,
      );
      return {
        'body changed by one space': [outgoing.body.replace('{', '{ '), good],
        ...Object.fromEntries(malformed),
      };
    },
  };
}

/** One character of the signature changed, staying in its alphabet (hex or base64). */
function flipped(value: string): string {
  const at = value.length - 5;
  const char = value[at] ?? '';
  const replacement = /[0-9a-f]/.test(char) ? (char === 'a' ? 'b' : 'a') : char === 'A' ? 'B' : 'A';
  return `${value.slice(0, at)}${replacement}${value.slice(at + 1)}`;
}

function namedPlayed(sender: NamedSender): Played {
  const credential = { current: sender.credentials[0], previous: sender.credentials[1], stranger: sender.stranger };
  return {
    label: sender.label ?? sender.name,
    name: sender.name,
    // Real time: several SDKs check the signed time against their own clock.
    now: () => Math.floor(Date.now() / 1000),
    signsTime: sender.signsTime,
    id: sender.id,
    newEvent: (now) => sender.newEvent(now),
    sign: async (outgoing, key, at) => sender.headers(outgoing, credential[key], at),
    broken: (outgoing, good) => {
      const withoutSignature = Object.fromEntries(
        Object.entries(good).filter(([name]) => !sender.signatureHeaders.includes(name)),
      );
      const variants: Record<string, Variant> = { 'no signature header': [outgoing.body, withoutSignature] };
      // A token sender signs nothing: only its token authenticates (and the body digest dedups).
      if (!sender.token) variants['body changed by one space'] = [outgoing.body.replace('{', '{ '), good];
      const header = sender.signatureHeaders[0] ?? '';
      const value = good[header];
      if (value !== undefined && !sender.token) {
        variants['signature changed by one character'] = [outgoing.body, { ...good, [header]: flipped(value) }];
        variants['signature header empty'] = [outgoing.body, { ...good, [header]: '' }];
      }
      if (sender.token) variants['token changed'] = [outgoing.body, { ...good, [header]: `${value}x` }];
      return variants;
    },
    named: sender,
  };
}

const played = [...senders.map(schemePlayed), ...namedSenders.map(namedPlayed)];

const storedId = (outgoing: Outgoing) => outgoing.eventId ?? sha256Hex(outgoing.body);

describe.each(played.map((sender) => [sender.label, sender] as const))('%s', (_label, sender) => {
  /** Posted at `at` (unix seconds; the sender's now by default) on the app's clock. */
  const post = (body: string, headers: Record<string, string>, to: TestApp = app, at = sender.now()) => {
    to.setNow(at * 1000);
    return to.request(`/webhooks/${sender.name}`, { method: 'POST', body, headers });
  };
  const signed = (outgoing: Outgoing, key: Key = 'current', at = sender.now()) => sender.sign(outgoing, key, at);

  const oracle = sender.named?.oracle;
  const named = sender.named;
  if (named !== undefined && oracle !== undefined) {
    it(`is accepted by its publisher's own verifier: ${named.oracleName}`, async () => {
      const outgoing = sender.newEvent(sender.now());
      const headers = await signed(outgoing);
      expect(await oracle(outgoing, headers, named.credentials[0])).toBe(true);
      // The oracle can say no: the same headers over a changed body (a renamed member, so that an
      // SDK that re-serialises the parsed body, as Zoom's does, sees the change too).
      const changed = { ...outgoing, body: outgoing.body.replace(/"([^"]+)"/, '"$1x"') };
      if (!named.token) expect(await oracle(changed, headers, named.credentials[0])).toBe(false);
      else expect(await oracle(outgoing, headers, named.stranger)).toBe(false);
    });
  }

  const vector = named?.vector;
  if (named !== undefined && vector !== undefined) {
    it(`reproduces and accepts its publisher's own example: ${named.oracleName}`, async () => {
      // The helper signs the example's body with the example's secret into the example's headers...
      const helper = named.headers(vector, hmacCredential(vector.secret, 'hex'), 0);
      expect(helper).toEqual(vector.headers);
      // ...and the route takes the example as published, and refuses what the publisher refuses.
      const example = await buildTestApp(db, {
        enabledSenders: await enableSenders({ [sender.name]: [vector.secret] }),
      });
      expect(await answer(await post(vector.body, vector.refused, example))).toBe(UNAUTHORIZED);
      expect(await answer(await post(vector.body, vector.headers, example))).toBe('application/json {"received":true}');
      const row = await eventRow(sql, vector.eventId, sender.name);
      expect(row).toMatchObject({ event_type: vector.eventType, status: 'ignored' });
    });
  }

  it('stores what the sender signs once, under its authenticated id', async () => {
    const outgoing = sender.newEvent(sender.now());
    const headers = await signed(outgoing);
    const first = await post(outgoing.body, headers);
    expect(first.status).toBe(200);
    expect(await answer(first)).toBe('application/json {"received":true}');
    const row = await eventRow(sql, storedId(outgoing), sender.name);
    expect(row).toMatchObject({
      status: 'ignored',
      attempt_count: 0,
      event_type: outgoing.eventType,
      // Backed by the body digest where the id is not signed or no time is (for an event of a batch,
      // the digest of its id): see docs/senders.md.
      content_digest:
        sender.id === 'unsigned-header' || !sender.signsTime
          ? sha256Hex(sender.id === 'event' ? storedId(outgoing) : outgoing.body)
          : null,
    });
    expect(row?.payload).toEqual(JSON.parse(outgoing.payload ?? outgoing.body));

    const again = await post(outgoing.body, headers);
    expect(await again.text()).toBe('{"received":true,"duplicate":true}');
    expect(await countEvents(sql, storedId(outgoing))).toBe(1);
  });

  if (sender.id === 'unsigned-header') {
    it('treats the same signed body under a new delivery id as a duplicate (the id is not signed)', async () => {
      const outgoing = sender.newEvent(sender.now());
      expect((await post(outgoing.body, await signed(outgoing))).status).toBe(200);
      const replayed = { ...outgoing, deliveryId: crypto.randomUUID(), eventId: crypto.randomUUID() };
      const response = await post(replayed.body, await signed(replayed));
      expect(await response.text()).toBe('{"received":true,"duplicate":true}');
      expect(await countEvents(sql, replayed.eventId)).toBe(0);
    });
  }

  it('accepts the previous key during a rotation and refuses one that is not configured', async () => {
    const rotated = sender.newEvent(sender.now());
    expect((await post(rotated.body, await signed(rotated, 'previous'))).status).toBe(200);
    expect((await eventRow(sql, storedId(rotated), sender.name))?.status).toBe('ignored');

    const stranger = sender.newEvent(sender.now());
    expect(await answer(await post(stranger.body, await signed(stranger, 'stranger')))).toBe(UNAUTHORIZED);
    expect(await countEvents(sql, storedId(stranger))).toBe(0);
  });

  it('answers a changed body, a changed, missing or malformed signature with the one 401, storing nothing', async () => {
    const outgoing = sender.newEvent(sender.now());
    const good = await signed(outgoing);
    const before = (await providerRows(sql, sender.name)).length;
    const variants = sender.broken(outgoing, good);
    const answers: Record<string, string> = {};
    for (const [name, [body, headers]] of Object.entries(variants))
      answers[name] = await answer(await post(body, headers));
    expect(answers).toEqual(Object.fromEntries(Object.keys(variants).map((name) => [name, UNAUTHORIZED])));
    expect((await providerRows(sql, sender.name)).length).toBe(before);
    // The same delivery with its headers intact goes through: the variants failed for their defect.
    expect((await post(outgoing.body, good)).status).toBe(200);
  });

  if (sender.signsTime) {
    it('keeps the timestamp tolerance, past and future (300 s), and refuses a day-old signature', async () => {
      for (const [offset, status] of [...TOLERANCE_EDGES, [-86_400, 401] as const]) {
        const now = sender.now();
        const outgoing = sender.newEvent(now + offset);
        // The same `now` signs and receives: a second ticking over between them must not move an edge.
        const response = await post(outgoing.body, await signed(outgoing, 'current', now + offset), app, now);
        expect(response.status, `offset ${offset}`).toBe(status);
        expect(await countEvents(sql, storedId(outgoing))).toBe(status === 200 ? 1 : 0);
      }
    });
  } else {
    it('has no timestamp to check: a day-old signature still verifies', async () => {
      const now = sender.now();
      const outgoing = sender.newEvent(now);
      const response = await post(outgoing.body, await signed(outgoing, 'current', now), app, now + 86_400);
      expect(response.status).toBe(200);
      expect(await countEvents(sql, storedId(outgoing))).toBe(1);
    });
  }

  it('is 404 while its key is unset', async () => {
    const acmeOnly = await buildTestApp(db, { enabledSenders: await enableSenders({ acme: [TEST_SECRET] }) });
    const outgoing = sender.newEvent(sender.now());
    const response = await post(outgoing.body, await signed(outgoing), acmeOnly);
    expect(response.status).toBe(404);
    expect(await answer(response)).toBe('application/json {"error":"not_found"}');
    expect(await countEvents(sql, storedId(outgoing))).toBe(0);
  });
});
