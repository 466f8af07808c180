// Every scheme through the HTTP route with the publisher's own signer as the oracle: accepted and
// stored under its authenticated id, refused (one 401, nothing stored) when anything signed is
// changed, missing or malformed, rotation, timestamp tolerance, and 404 when not enabled.
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { enableProviders } from '../src/providers/registry.ts';
import { TEST_NOW_MS, TEST_NOW_SECONDS, TEST_SECRET, TOLERANCE_EDGES } from './helpers/acme.ts';
import { buildTestApp } from './helpers/app.ts';
import { useTestDatabase } from './helpers/database.ts';
import { countEvents, eventRow, providerRows } from './helpers/facts.ts';
import { allSchemeSecrets, senders } from './helpers/senders.ts';

const { sql, db } = await useTestDatabase();
const test = await buildTestApp(db, { enabledProviders: await enableProviders(allSchemeSecrets()) });

const UNAUTHORIZED = 'application/json {"error":"unauthorized"}';
const answer = async (response: Response) => `${response.headers.get('content-type')} ${await response.text()}`;
const sha256Hex = (text: string) => createHash('sha256').update(text).digest('hex');

describe.each(senders)('$name', (sender) => {
  const post = (body: string, headers: Record<string, string>, app = test) =>
    app.request(`/webhooks/${sender.name}`, { method: 'POST', body, headers });
  const digestFor = (body: string) => (sender.name === 'github' || sender.name === 'shopify' ? sha256Hex(body) : null);

  it('accepts what the publisher signs, stores it once under its authenticated id', async () => {
    const delivery = sender.newEvent();
    const headers = await sender.headers(delivery);

    const first = await post(delivery.body, headers);
    expect(first.status).toBe(200);
    expect(await first.text()).toBe('{"received":true}');
    const row = await eventRow(sql, delivery.eventId, sender.name);
    expect(row).toMatchObject({ status: 'ignored', attempt_count: 0, content_digest: digestFor(delivery.body) });
    expect(row?.payload).toEqual(JSON.parse(delivery.body));

    const again = await post(delivery.body, headers);
    expect(await again.text()).toBe('{"received":true,"duplicate":true}');
    expect(await countEvents(sql, delivery.eventId)).toBe(1);
  });

  it('accepts the previous secret during a rotation and refuses one that is not configured', async () => {
    const rotated = sender.newEvent();
    expect((await post(rotated.body, await sender.headers(rotated, { secret: sender.secrets[1] }))).status).toBe(200);
    expect((await eventRow(sql, rotated.eventId, sender.name))?.status).toBe('ignored');

    const stranger = sender.newEvent();
    const refused = await post(stranger.body, await sender.headers(stranger, { secret: sender.strangerSecret }));
    expect(await answer(refused)).toBe(UNAUTHORIZED);
    expect(await countEvents(sql, stranger.eventId)).toBe(0);
  });

  it('refuses a body changed after signing, even by one space', async () => {
    const delivery = sender.newEvent();
    const headers = await sender.headers(delivery);
    const response = await post(delivery.body.replace('{', '{ '), headers);
    expect(response.status).toBe(401);
    expect(await answer(response)).toBe(UNAUTHORIZED);
    expect(await countEvents(sql, delivery.eventId)).toBe(0);
  });

  it('answers missing or malformed signature headers with the one 401 and stores nothing', async () => {
    const delivery = sender.newEvent();
    const good = await sender.headers(delivery);
    const before = (await providerRows(sql, sender.name)).length;
    const answers = new Map<string, string>();
    for (const [name, headers] of Object.entries(sender.brokenHeaders(good, delivery))) {
      answers.set(name, await answer(await post(delivery.body, headers)));
    }
    expect(Object.fromEntries(answers)).toEqual(Object.fromEntries([...answers.keys()].map((k) => [k, UNAUTHORIZED])));
    expect((await providerRows(sql, sender.name)).length).toBe(before);
    // The same delivery with its headers intact goes through: the variants failed for their defect.
    expect((await post(delivery.body, good)).status).toBe(200);
  });

  if (sender.signsTimestamp) {
    it('keeps the timestamp tolerance, past and future (300 s)', async () => {
      const cases = [...TOLERANCE_EDGES, [-86_400, 401] as const];
      for (const [offset, status] of cases) {
        const delivery = sender.newEvent();
        const response = await post(
          delivery.body,
          await sender.headers(delivery, { timestamp: TEST_NOW_SECONDS + offset }),
        );
        expect(response.status, `offset ${offset}`).toBe(status);
        expect(await countEvents(sql, delivery.eventId)).toBe(status === 200 ? 1 : 0);
      }
    });
  } else {
    it('has no timestamp to check: a day-old signature still verifies', async () => {
      const delivery = sender.newEvent();
      const headers = await sender.headers(delivery);
      const later = await buildTestApp(db, { enabledProviders: await enableProviders(allSchemeSecrets()) });
      later.setNow(TEST_NOW_MS + 86_400_000);
      expect((await post(delivery.body, headers, later)).status).toBe(200);
      expect(await countEvents(sql, delivery.eventId)).toBe(1);
    });
  }

  it('is 404 while its secret is unset', async () => {
    const acmeOnly = await buildTestApp(db, { enabledProviders: await enableProviders({ acme: [TEST_SECRET] }) });
    const delivery = sender.newEvent();
    const response = await post(delivery.body, await sender.headers(delivery), acmeOnly);
    expect(response.status).toBe(404);
    expect(await response.text()).toBe('{"error":"not_found"}');
    expect(await countEvents(sql, delivery.eventId)).toBe(0);
  });
});
