// Every named sender through the HTTP route, each against an oracle that is not ours: the
// publisher's SDK accepts what the test helper signs (and refuses it once the body changes), and the
// service stores it once under its authenticated id, refuses anything changed, missing or
// malformed with the one 401, keeps rotation and the time tolerance, and is 404 while unset.
import { describe, expect, it } from 'vitest';
import { enableProviders } from '../src/providers/registry.ts';
import { TEST_SECRET, TOLERANCE_EDGES } from './helpers/acme.ts';
import { buildTestApp, type TestApp } from './helpers/app.ts';
import { useTestDatabase } from './helpers/database.ts';
import { countEvents, eventRow, providerRows } from './helpers/facts.ts';
import { enableNamedSenders, hmacCredential, namedSenders, type Outgoing, sha256Hex } from './helpers/named-senders.ts';

const { sql, db } = await useTestDatabase();

/** Real time: several SDKs check the signed time against their own clock. */
const nowSeconds = () => Math.floor(Date.now() / 1000);

const enabledProviders = await enableNamedSenders();
const app = await buildTestApp(db, { enabledProviders });

const UNAUTHORIZED = 'application/json {"error":"unauthorized"}';
const answer = async (response: Response) => `${response.headers.get('content-type')} ${await response.text()}`;

/** One character of the signature changed, staying in its alphabet (hex or base64). */
function flipped(value: string): string {
  const at = value.length - 5;
  const char = value[at] ?? '';
  const replacement = /[0-9a-f]/.test(char) ? (char === 'a' ? 'b' : 'a') : char === 'A' ? 'B' : 'A';
  return `${value.slice(0, at)}${replacement}${value.slice(at + 1)}`;
}

const storedId = (outgoing: Outgoing) => outgoing.eventId ?? sha256Hex(outgoing.body);

describe.each(namedSenders.map((sender) => [sender.label ?? sender.name, sender] as const))('%s', (_label, sender) => {
  /** Posted at `at` (unix seconds; now by default) on the app's clock. */
  const post = (body: string, headers: Record<string, string>, to: TestApp = app, at = nowSeconds()) => {
    to.setNow(at * 1000);
    return to.request(`/webhooks/${sender.name}`, { method: 'POST', body, headers });
  };
  const signed = (outgoing: Outgoing, credential = sender.credentials[0], at = nowSeconds()) =>
    sender.headers(outgoing, credential, at);

  const { oracle, vector } = sender;
  if (oracle !== undefined) {
    it(`is accepted by its publisher's own verifier: ${sender.oracleName}`, async () => {
      const outgoing = sender.newEvent(nowSeconds());
      const headers = signed(outgoing);
      expect(await oracle(outgoing, headers, sender.credentials[0])).toBe(true);
      // The oracle can say no: the same headers over a changed body (a renamed member, so that an
      // SDK that re-serialises the parsed body, as Zoom's does, sees the change too).
      const changed = { ...outgoing, body: outgoing.body.replace(/"([^"]+)"/, '"$1x"') };
      if (!sender.token) expect(await oracle(changed, headers, sender.credentials[0])).toBe(false);
      else expect(await oracle(outgoing, headers, sender.stranger)).toBe(false);
    });
  }

  if (vector !== undefined) {
    it(`reproduces and accepts its publisher's own example: ${sender.oracleName}`, async () => {
      // The helper signs the example's body with the example's secret into the example's headers...
      const helper = sender.headers(vector, hmacCredential(vector.secret, 'hex'), 0);
      expect(helper).toEqual(vector.headers);
      // ...and the route takes the example as published, and refuses what the publisher refuses.
      const example = await buildTestApp(db, {
        enabledProviders: await enableProviders({ [sender.name]: [vector.secret] }),
      });
      expect(await answer(await post(vector.body, vector.refused, example))).toBe(UNAUTHORIZED);
      expect(await answer(await post(vector.body, vector.headers, example))).toBe('application/json {"received":true}');
      const row = await eventRow(sql, vector.eventId, sender.name);
      expect(row).toMatchObject({ event_type: vector.eventType, status: 'ignored' });
    });
  }

  it('stores what the sender signs once, under its authenticated id', async () => {
    const outgoing = sender.newEvent(nowSeconds());
    const headers = signed(outgoing);
    const first = await post(outgoing.body, headers);
    expect(await answer(first)).toBe('application/json {"received":true}');
    const row = await eventRow(sql, storedId(outgoing), sender.name);
    expect(row).toMatchObject({
      status: 'ignored',
      event_type: outgoing.eventType,
      // Backed by the body digest where the id is not signed or no time is (for an event of a batch,
      // the digest of its id): see docs/providers.md.
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
      const outgoing = sender.newEvent(nowSeconds());
      expect((await post(outgoing.body, signed(outgoing))).status).toBe(200);
      const replayed = { ...outgoing, deliveryId: crypto.randomUUID(), eventId: crypto.randomUUID() };
      const response = await post(replayed.body, signed(replayed));
      expect(await response.text()).toBe('{"received":true,"duplicate":true}');
      expect(await countEvents(sql, replayed.eventId)).toBe(0);
    });
  }

  it('accepts the previous key during a rotation and refuses one that is not configured', async () => {
    const rotated = sender.newEvent(nowSeconds());
    expect((await post(rotated.body, signed(rotated, sender.credentials[1]))).status).toBe(200);
    expect((await eventRow(sql, storedId(rotated), sender.name))?.status).toBe('ignored');

    const stranger = sender.newEvent(nowSeconds());
    expect(await answer(await post(stranger.body, signed(stranger, sender.stranger)))).toBe(UNAUTHORIZED);
    expect(await countEvents(sql, storedId(stranger))).toBe(0);
  });

  it('answers a changed body, a changed or missing signature with the one 401 and stores nothing', async () => {
    const outgoing = sender.newEvent(nowSeconds());
    const good = signed(outgoing);
    const before = (await providerRows(sql, sender.name)).length;
    const withoutSignature = Object.fromEntries(
      Object.entries(good).filter(([name]) => !sender.signatureHeaders.includes(name)),
    );
    const variants: Record<string, [string, Record<string, string>]> = {
      'no signature header': [outgoing.body, withoutSignature],
    };
    // A token sender signs nothing: only its token authenticates (and the body digest dedups).
    if (!sender.token) variants['body changed by one space'] = [outgoing.body.replace('{', '{ '), good];
    const header = sender.signatureHeaders[0] ?? '';
    const value = good[header];
    if (value !== undefined && !sender.token) {
      variants['signature changed by one character'] = [outgoing.body, { ...good, [header]: flipped(value) }];
      variants['signature header empty'] = [outgoing.body, { ...good, [header]: '' }];
    }
    if (sender.token) variants['token changed'] = [outgoing.body, { ...good, [header]: `${value}x` }];
    const answers: Record<string, string> = {};
    for (const [name, [body, headers]] of Object.entries(variants))
      answers[name] = await answer(await post(body, headers));
    expect(answers).toEqual(Object.fromEntries(Object.keys(variants).map((name) => [name, UNAUTHORIZED])));
    expect((await providerRows(sql, sender.name)).length).toBe(before);
    expect((await post(outgoing.body, good)).status).toBe(200);
  });

  if (sender.signsTime) {
    it('keeps the timestamp tolerance, past and future (300 s)', async () => {
      for (const [offset, status] of TOLERANCE_EDGES) {
        const now = nowSeconds();
        const outgoing = sender.newEvent(now + offset);
        // The same `now` signs and receives: a second ticking over between them must not move an edge.
        const response = await post(outgoing.body, signed(outgoing, sender.credentials[0], now + offset), app, now);
        expect(response.status, `offset ${offset}`).toBe(status);
        expect(await countEvents(sql, storedId(outgoing))).toBe(status === 200 ? 1 : 0);
      }
    });
  }

  it('is 404 while its key is unset', async () => {
    const acmeOnly = await buildTestApp(db, { enabledProviders: await enableProviders({ acme: [TEST_SECRET] }) });
    const outgoing = sender.newEvent(nowSeconds());
    const response = await post(outgoing.body, signed(outgoing), acmeOnly);
    expect(await answer(response)).toBe('application/json {"error":"not_found"}');
    expect(await countEvents(sql, storedId(outgoing))).toBe(0);
  });
});
