// Property-based fuzzing of the HTTP surface and the verifier with fast-check: whatever arrives,
// the answer is never a 5xx, nothing is stored without a valid signature, and nothing throws.
// A failure prints fast-check's seed and path; replay it with FUZZ_SEED=<seed> npm test.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { allSenders } from '../src/senders/registry.ts';
import { acmeEvent, signedHeaders, TEST_NOW_SECONDS, TEST_SECRET } from './helpers/acme.ts';
import { buildTestApp } from './helpers/app.ts';
import { useTestDatabase } from './helpers/database.ts';
import { countEvents } from './helpers/facts.ts';

const { sql, db } = await useTestDatabase();
const test = await buildTestApp(db, { config: { MAX_BODY_BYTES: 16384 } });
const seed = process.env.FUZZ_SEED === undefined ? undefined : Number(process.env.FUZZ_SEED);
const runs = (numRuns: number) => ({ numRuns, seed, endOnFailure: true });

const post = (body: Uint8Array | string, headers: Record<string, string>) =>
  test.request('/webhooks/acme', { method: 'POST', body, headers });

const header = fc.oneof(
  fc.string({ maxLength: 80 }),
  fc.stringMatching(/^[0-9a-fA-F]{0,70}$/),
  fc.integer().map(String),
  fc.constant(''),
);

/** JSON text that stresses parsers: duplicate keys, prototype keys, huge numbers, deep nesting. */
const hostileJson = fc.oneof(
  fc.jsonValue({ maxDepth: 6 }).map((value) => JSON.stringify(value)),
  fc.constantFrom(
    '{"id":"evt_a","id":"evt_b","type":"x","api_version":"2024-06-01","created":1,"version":1,"data":{}}',
    '{"__proto__":{"admin":true},"id":"evt_p","type":"x","api_version":"2024-06-01","created":1,"version":1,"data":{}}',
    '{"constructor":{"prototype":{"x":1}},"id":"evt_c","type":"x","api_version":"2024-06-01","created":1,"version":1,"data":{}}',
    '{"id":"evt_n","type":"subscription.updated","api_version":"2024-06-01","created":1,"version":9007199254740993,"data":{"id":"s","status":"active"}}',
    '{"id":"evt_e","type":"x","api_version":"2024-06-01","created":1e400,"version":1,"data":{}}',
    `${'['.repeat(5000)}${']'.repeat(5000)}`,
    `{"id":"evt_d","type":"x","api_version":"2024-06-01","created":1,"version":1,"data":${'{"a":'.repeat(2000)}1${'}'.repeat(2000)}}`,
    '{"id":"evt_u","type":"x","api_version":"2024-06-01","created":1,"version":1,"data":{"s":"\\ud800"}}',
    '{"id":"evt_z","type":"x","api_version":"2024-06-01","created":1,"version":1,"data":{"s":"\\u0000"}}',
  ),
  fc
    .record({
      id: fc.string({ maxLength: 300 }),
      type: fc.constantFrom('subscription.updated', 'subscription.created', 'other.type'),
      api_version: fc.constantFrom('2024-06-01', '1999-01-01'),
      created: fc.oneof(fc.integer(), fc.double(), fc.string()),
      version: fc.oneof(fc.integer(), fc.double(), fc.bigInt().map(String)),
      data: fc.oneof(fc.object({ maxDepth: 3 }), fc.jsonValue({ maxDepth: 2 })),
    })
    .map((value) => JSON.stringify(value)),
);

describe('fuzzing the acme intake', () => {
  it('answers unsigned or wrongly signed noise with 4xx and stores nothing', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(fc.uint8Array({ maxLength: 2048 }), hostileJson),
        header,
        header,
        fc.constantFrom('application/json', 'text/plain', 'application/json; charset=utf-8', ''),
        async (body, timestamp, signature, contentType) => {
          const headers: Record<string, string> = { 'x-acme-timestamp': timestamp, 'x-acme-signature': signature };
          if (contentType !== '') headers['content-type'] = contentType;
          const response = await post(body, headers);
          expect([401, 413, 415]).toContain(response.status);
        },
      ),
      runs(300),
    );
    expect(await countEvents(sql)).toBe(0);
  });

  it('never answers a 5xx to hostile JSON under a valid signature, and stores only what it accepts', async () => {
    await fc.assert(
      fc.asyncProperty(hostileJson, async (body) => {
        const before = await countEvents(sql);
        const response = await post(body, await signedHeaders(body));
        expect(response.status).toBeLessThan(500);
        const stored = (await countEvents(sql)) - before;
        if (response.status === 400 || response.status === 413) expect(stored).toBe(0);
        if ((await response.clone().text()).includes('"duplicate":true')) expect(stored).toBe(0);
      }),
      runs(300),
    );
  });

  it('refuses every single-byte mutation of a signed delivery', async () => {
    const body = JSON.stringify(acmeEvent());
    const headers = await signedHeaders(body);
    const bytes = new TextEncoder().encode(body);
    await fc.assert(
      fc.asyncProperty(fc.nat({ max: bytes.length - 1 }), fc.integer({ min: 1, max: 255 }), async (index, flip) => {
        const mutated = bytes.slice();
        mutated[index] = (mutated[index] ?? 0) ^ flip;
        const response = await post(mutated, headers);
        expect(response.status).toBe(401);
      }),
      runs(200),
    );
    expect(await countEvents(sql, JSON.parse(body).id)).toBe(0);
  });

  it.each(allSenders.map((provider) => [provider.name, provider] as const))(
    'the %s verifier never throws and never authenticates noise, whatever the headers',
    async (_name, provider) => {
      const keys = await provider.importKeys([`whsec_${Buffer.from(TEST_SECRET).toString('base64')}`]);
      const headerNames = [
        'x-acme-timestamp',
        'x-acme-signature',
        'webhook-id',
        'webhook-timestamp',
        'webhook-signature',
        'stripe-signature',
        'x-hub-signature-256',
        'x-github-delivery',
        'x-github-event',
        'x-shopify-hmac-sha256',
        'x-shopify-webhook-id',
        'x-shopify-topic',
        'x-slack-request-timestamp',
        'x-slack-signature',
      ];
      await fc.assert(
        fc.asyncProperty(
          fc.uint8Array({ maxLength: 512 }),
          fc.array(fc.tuple(fc.constantFrom(...headerNames), header), { maxLength: 6 }),
          async (body, entries) => {
            const verification = await provider.verify(
              { body: new Uint8Array(body), headers: new Headers(entries) },
              keys,
              { nowSeconds: TEST_NOW_SECONDS, toleranceSeconds: 300 },
            );
            expect(verification.outcome).toBe('unauthorized');
          },
        ),
        runs(300),
      );
    },
  );
});
