// Signature and timestamp checks over the exact received bytes: every failure answers the same
// 401 bytes and leaves no row; rotation accepts any configured secret.
import { describe, expect, it } from 'vitest';
import { enableSenders } from '../src/senders/registry.ts';
import {
  acmeEvent,
  PREVIOUS_SECRET,
  readFixture,
  signAcme,
  signedHeaders,
  TEST_NOW_MS,
  TEST_NOW_SECONDS,
} from './helpers/acme.ts';
import { buildTestApp } from './helpers/app.ts';
import { useTestDatabase } from './helpers/database.ts';
import { countEvents, eventRow } from './helpers/facts.ts';

const { sql, db } = await useTestDatabase();
const test = await buildTestApp(db);

const post = (body: string | Uint8Array, headers: Record<string, string>) =>
  test.request('/webhooks/acme', { method: 'POST', body, headers });

describe('acme signature verification', () => {
  it('accepts the openssl-signed fixture byte for byte', async () => {
    const fixture = readFixture('acme-subscription-updated.json');
    const signed = JSON.parse(readFixture('acme-subscription-updated.signature.json').toString('utf8'));
    const app = await buildTestApp(db, { enabledSenders: await enableSenders({ acme: [signed.secret] }) });
    app.setNow(Number(signed.timestamp) * 1000);

    const response = await app.request('/webhooks/acme', {
      method: 'POST',
      body: fixture,
      headers: {
        'content-type': 'application/json',
        'x-acme-timestamp': signed.timestamp,
        'x-acme-signature': signed.signature,
      },
    });
    expect(response.status).toBe(200);
    expect((await eventRow(sql, 'evt_fixture_0001'))?.status).toBe('completed');
  });

  it('verifies the bytes received, not a re-serialization of them', async () => {
    const pretty = readFixture('acme-subscription-updated.json').toString('utf8');
    const parsed = JSON.parse(pretty);
    const compactEvent = { ...parsed, id: 'evt_whitespace_compact' };
    const prettyEvent = { ...parsed, id: 'evt_whitespace_pretty' };

    // Re-serialized first, then signed: the signature covers what is sent.
    const compact = JSON.stringify(compactEvent);
    const accepted = await post(compact, await signedHeaders(compact));
    expect(accepted.status).toBe(200);

    // Signed as sent by the provider, then re-serialized on the way (what a JSON body parser does).
    const original = JSON.stringify(prettyEvent, null, 2);
    const reserialized = JSON.stringify(JSON.parse(original));
    const refused = await post(reserialized, await signedHeaders(original));
    expect(refused.status).toBe(401);
    expect(await countEvents(sql, 'evt_whitespace_pretty')).toBe(0);
  });

  it('accepts every configured secret during a rotation', async () => {
    const body = JSON.stringify(acmeEvent());
    const response = await post(body, await signedHeaders(body, { secret: PREVIOUS_SECRET }));
    expect(response.status).toBe(200);
  });

  it('accepts upper-case hex, as the digest is the same', async () => {
    const body = JSON.stringify(acmeEvent());
    const headers = await signedHeaders(body);
    headers['x-acme-signature'] = (headers['x-acme-signature'] ?? '').toUpperCase();
    expect((await post(body, headers)).status).toBe(200);
  });

  describe('timestamp tolerance (300 s, past and future)', () => {
    const cases: Array<[string, number, number]> = [
      ['exactly at the past bound', -300, 200],
      ['exactly at the future bound', 300, 200],
      ['one second stale', -301, 401],
      ['one second in the future', 301, 401],
      ['an hour stale', -3600, 401],
    ];
    it.each(cases)('%s', async (_name, offset, status) => {
      const event = acmeEvent();
      const body = JSON.stringify(event);
      const response = await post(body, await signedHeaders(body, { timestamp: TEST_NOW_SECONDS + offset }));
      expect(response.status).toBe(status);
      expect(await countEvents(sql, event.id)).toBe(status === 200 ? 1 : 0);
    });

    it('follows the injected clock, not the wall clock', async () => {
      const event = acmeEvent();
      const body = JSON.stringify(event);
      const headers = await signedHeaders(body, { timestamp: TEST_NOW_SECONDS });
      const later = await buildTestApp(db);
      later.setNow(TEST_NOW_MS + 301_000);
      expect((await later.request('/webhooks/acme', { method: 'POST', body, headers })).status).toBe(401);
      later.setNow(TEST_NOW_MS + 300_999);
      expect((await later.request('/webhooks/acme', { method: 'POST', body, headers })).status).toBe(200);
    });
  });

  it('answers every authentication failure with the same bytes and stores nothing', async () => {
    const event = acmeEvent();
    const body = JSON.stringify(event);
    const good = await signedHeaders(body);
    const { signature } = await signAcme(body);
    const other = await signedHeaders(body, { secret: 'not-the-secret' });
    const without = (name: string) => Object.fromEntries(Object.entries(good).filter(([key]) => key !== name));

    const variants: Array<[string, string, Record<string, string>]> = [
      ['no signature header', body, without('x-acme-signature')],
      ['no timestamp header', body, without('x-acme-timestamp')],
      ['signed with another secret', body, other],
      ['tampered body', body.replace('"version":1', '"version":2'), good],
      ['signature not hex', body, { ...good, 'x-acme-signature': `${signature.slice(0, 62)}zz` }],
      ['signature too short', body, { ...good, 'x-acme-signature': signature.slice(0, 62) }],
      ['signature too long', body, { ...good, 'x-acme-signature': `${signature}00` }],
      ['signature with a prefix', body, { ...good, 'x-acme-signature': `sha256=${signature}` }],
      ['empty signature', body, { ...good, 'x-acme-signature': '' }],
      ['timestamp not a number', body, { ...good, 'x-acme-timestamp': 'yesterday' }],
      ['timestamp with a sign', body, { ...good, 'x-acme-timestamp': `+${good['x-acme-timestamp']}` }],
      ['timestamp in milliseconds', body, { ...good, 'x-acme-timestamp': `${good['x-acme-timestamp']}000` }],
      ['timestamp changed after signing', body, { ...good, 'x-acme-timestamp': String(TEST_NOW_SECONDS - 1) }],
      ['stale timestamp', body, await signedHeaders(body, { timestamp: TEST_NOW_SECONDS - 301 })],
      ['future timestamp', body, await signedHeaders(body, { timestamp: TEST_NOW_SECONDS + 301 })],
    ];

    const answers = new Set<string>();
    for (const [name, variantBody, headers] of variants) {
      const response = await post(variantBody, headers);
      expect(response.status, name).toBe(401);
      answers.add(`${response.headers.get('content-type')} ${await response.text()}`);
    }
    expect([...answers]).toEqual(['application/json {"error":"unauthorized"}']);
    expect(await countEvents(sql, event.id)).toBe(0);
    expect((await post(body, good)).status).toBe(200);
  });
});

describe('why a delivery was refused', () => {
  it('is logged for operators, never answered to the sender', async () => {
    const logged = await buildTestApp(db);
    const body = JSON.stringify(acmeEvent());
    const good = await signedHeaders(body);
    const cases: Array<[Record<string, string>, string]> = [
      [{ 'content-type': 'application/json' }, 'signature_malformed'],
      [{ ...good, 'x-acme-timestamp': String(TEST_NOW_SECONDS - 3600) }, 'timestamp_outside_tolerance'],
      [await signedHeaders(body, { secret: 'another-secret' }), 'signature_mismatch'],
    ];
    for (const [headers, reason] of cases) {
      const response = await logged.request('/webhooks/acme', { method: 'POST', body, headers });
      expect(await response.text()).toBe('{"error":"unauthorized"}');
      expect(JSON.parse(logged.logs.at(-1) ?? '{}')).toMatchObject({ outcome: 'unauthorized', reason });
    }
  });
});
