// The benchmarks' synthetic deliveries, built by the very code the benches use (bench/lib), go through
// the service's own checks and are accepted: a provider that starts validating something the bench
// does not send breaks this file, not a benchmark run an hour later. The verify bench's deliveries go
// through each provider's verify() (what bench:verify times); the intake benches' acme events and the
// batch senders' deliveries go through the app in-process, and their rows are read back.
import { and, sql as drizzleSql, eq, like } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { signedAcmeEvent } from '../bench/lib/acme.ts';
import { batchSenders, enabledBatchSenders } from '../bench/lib/batch-senders.ts';
import type { PreparedRequest } from '../bench/lib/load.ts';
import { verifyDelivery, verifySchemes } from '../bench/lib/verify-schemes.ts';
import { webhookEvents } from '../src/db/schema.ts';
import { allSenders, enableSenders } from '../src/senders/registry.ts';
import { TEST_NOW_SECONDS, uniqueId } from './helpers/acme.ts';
import { buildTestApp } from './helpers/app.ts';
import { useTestDatabase } from './helpers/database.ts';

const { db } = await useTestDatabase();

const post = (app: Awaited<ReturnType<typeof buildTestApp>>, request: PreparedRequest) =>
  app.request(request.path, { method: 'POST', headers: request.headers, body: new Uint8Array(request.body) });

/** The run's rows in webhook_events by status. */
async function statusesOf(provider: string, idPrefix: string): Promise<Record<string, number>> {
  const rows = await db
    .select({ status: webhookEvents.status, n: drizzleSql<number>`count(*)::int` })
    .from(webhookEvents)
    .where(and(eq(webhookEvents.provider, provider), like(webhookEvents.eventId, `${idPrefix}%`)))
    .groupBy(webhookEvents.status);
  return Object.fromEntries(rows.map((row) => [row.status, row.n]));
}

describe('bench:verify deliveries', () => {
  const schemes = verifySchemes(TEST_NOW_SECONDS);
  const measured = allSenders.filter((provider) => Object.hasOwn(schemes, provider.name));

  it('covers every scheme the bench names', () => {
    expect(measured.map((provider) => provider.name).sort()).toEqual(Object.keys(schemes).sort());
  });

  it.each(measured.map((provider) => [provider.name, provider] as const))('%s verifies', async (name, provider) => {
    const scheme = schemes[name];
    if (scheme === undefined) throw new Error(`no bench scheme for ${name}`);
    const keys = scheme.publicKey
      ? await provider.importKeys([], [scheme.secret])
      : await provider.importKeys([scheme.secret]);
    const outcome = await provider.verify(verifyDelivery(scheme), keys, {
      nowSeconds: TEST_NOW_SECONDS,
      toleranceSeconds: 300,
    });
    expect(['verified', 'verified_batch']).toContain(outcome.outcome);
  });
});

describe('the intake benches: signed acme events', () => {
  const secret = 'bench-inputs-acme-secret';

  it.each(['sync', 'async'] as const)('are accepted and stored in %s mode', async (mode) => {
    const app = await buildTestApp(db, {
      enabledSenders: await enableSenders({ acme: [secret] }),
      config: { PROCESSING_MODE: mode },
    });
    const runId = uniqueId(mode);
    for (let index = 0; index < 3; index++) {
      const response = await post(app, signedAcmeEvent({ secret, runId, index, nowSeconds: TEST_NOW_SECONDS }));
      // What intake.ts, floor.ts and intake-async.ts count as accepted.
      expect({ status: response.status, body: await response.text() }).toEqual(
        mode === 'sync' ? { status: 200, body: '{"received":true}' } : { status: 202, body: expect.any(String) },
      );
    }
    expect(await statusesOf('acme', `evt_${runId}_`)).toEqual(mode === 'sync' ? { completed: 3 } : { received: 3 });
  });

  it('answer a repeat as bench:storm expects: a duplicate, applied once', async () => {
    const app = await buildTestApp(db, { enabledSenders: await enableSenders({ acme: [secret] }) });
    const runId = uniqueId('storm');
    const request = signedAcmeEvent({ secret, runId, index: 0, nowSeconds: TEST_NOW_SECONDS });
    const answers = [];
    for (let attempt = 0; attempt < 3; attempt++) answers.push(await (await post(app, request)).text());
    expect(answers).toEqual([
      '{"received":true}',
      '{"received":true,"duplicate":true}',
      '{"received":true,"duplicate":true}',
    ]);
    expect(await statusesOf('acme', `evt_${runId}_`)).toEqual({ completed: 1 });
  });
});

// No handlers: bench:batches times the deliveries stored as `ignored` as well as handled.
const batchApp = await buildTestApp(db, { enabledSenders: await enabledBatchSenders(), handlers: {} });

describe('bench:batches deliveries', () => {
  it.each(batchSenders.map((sender) => [sender.name, sender] as const))(
    '%s: every event of a batch stored',
    async (name, sender) => {
      const before = await statusesOf(name, '');
      const body = sender.body(Array.from({ length: 3 }, () => JSON.stringify(sender.event(TEST_NOW_SECONDS))));
      const response = await batchApp.request(`/webhooks/${name}`, {
        method: 'POST',
        body,
        headers: { 'content-type': 'application/json', ...sender.headers(body, TEST_NOW_SECONDS) },
      });
      expect({ status: response.status, body: await response.text() }).toMatchObject({ status: 200 });
      const after = await statusesOf(name, '');
      const total = (counts: Record<string, number>) => Object.values(counts).reduce((sum, n) => sum + n, 0);
      expect(total(after) - total(before)).toBe(3);
    },
  );
});
