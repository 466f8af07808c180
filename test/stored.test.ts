// Applying stored events (the async worker's and the operator replay's path): only from the states
// asked for, once however many race, parked until the provider knows the schema, and failures moved
// on by the policy.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defaultHandlers, defineHandler, type HandlerMap } from '../src/domain/handlers.ts';
import { applyStoredEvent, type StoredContext } from '../src/inbox/stored.ts';
import { AppError, DomainRejection } from '../src/lib/errors.ts';
import { allSenders } from '../src/senders/registry.ts';
import { acmeEvent, signedHeaders, uniqueId } from './helpers/acme.ts';
import { buildTestApp } from './helpers/app.ts';
import { newCounter } from './helpers/counter.ts';
import { useTestDatabase } from './helpers/database.ts';
import { eventRow, subscriptionRow } from './helpers/facts.ts';
import { failingAfterDefault } from './helpers/handlers.ts';

const { sql, db } = await useTestDatabase();
const replayable = ['failed', 'parked', 'dead_letter'] as const;
const later = new Date(Date.UTC(2030, 0, 1));
const context = (handlers: HandlerMap = defaultHandlers): StoredContext => ({
  db,
  handlers,
  sendersByName: new Map(
    allSenders.filter((provider) => provider.name === 'acme').map((provider) => [provider.name, provider]),
  ),
});

async function storeWith(handlers: HandlerMap, event: object): Promise<void> {
  const test = await buildTestApp(db, { handlers });
  const body = JSON.stringify(event);
  await test.request('/webhooks/acme', { method: 'POST', body, headers: await signedHeaders(body) });
}

describe('applyStoredEvent', () => {
  it('applies a failed event once its cause is fixed, with its outbox message', async () => {
    const subscription = uniqueId('sub');
    const event = acmeEvent({ version: 3, data: { id: subscription, status: 'past_due' } });
    await storeWith(failingAfterDefault('subscription.updated', 'ledger down'), event);
    expect((await eventRow(sql, event.id))?.status).toBe('failed');

    const result = await applyStoredEvent(
      context(),
      { provider: 'acme', eventId: event.id },
      {
        from: replayable,
        onFailure: { retryAt: later },
      },
    );
    expect(result).toEqual({ outcome: 'completed' });
    expect(await eventRow(sql, event.id)).toMatchObject({ status: 'completed', attempt_count: 1, last_error: null });
    expect(await subscriptionRow(sql, subscription)).toMatchObject({ status: 'past_due', provider_version: '3' });
    const messages =
      await sql`select 1 from outbox_messages where deduplication_key = ${`acme:${event.id}:subscription.changed`}`;
    expect(messages).toHaveLength(1);
  });

  it('leaves a completed event alone', async () => {
    const event = acmeEvent();
    await storeWith(defaultHandlers, event);
    const before = await eventRow(sql, event.id);
    const result = await applyStoredEvent(
      context(),
      { provider: 'acme', eventId: event.id },
      {
        from: replayable,
        onFailure: { retryAt: later },
      },
    );
    expect(result.outcome).toBe('skipped');
    expect(await eventRow(sql, event.id)).toEqual(before);
  });

  it('keeps a parked event parked until the provider knows its schema version', async () => {
    const subscription = uniqueId('sub');
    const event = acmeEvent({ api_version: '2031-01-01', data: { id: subscription, status: 'active' } });
    await storeWith(defaultHandlers, event);
    const key = { provider: 'acme', eventId: event.id };
    const options = { from: replayable, onFailure: { retryAt: later } };

    expect((await applyStoredEvent(context(), key, options)).outcome).toBe('parked');
    expect(await subscriptionRow(sql, subscription)).toBeUndefined();

    const upgraded: StoredContext = {
      ...context(),
      sendersByName: new Map([['acme', { parkReasonOf: () => undefined }]]),
    };
    expect((await applyStoredEvent(upgraded, key, options)).outcome).toBe('completed');
    expect((await subscriptionRow(sql, subscription))?.status).toBe('active');
  });

  it('retries a failure until the bound, then dead-letters; a permanent failure at once', async () => {
    const event = acmeEvent();
    await storeWith(failingAfterDefault('subscription.updated', 'first'), event);
    const broken = context({
      acme: {
        'subscription.updated': defineHandler({
          schema: z.unknown(),
          apply: async () => {
            throw new Error('still down');
          },
        }),
      },
    });
    const key = { provider: 'acme', eventId: event.id };
    const options = { from: replayable, onFailure: { retryAt: later, maxAttempts: 3 } };
    expect(await applyStoredEvent(broken, key, options)).toMatchObject({ outcome: 'failed', failures: 2 });
    expect((await eventRow(sql, event.id))?.status).toBe('failed');
    const [row] = await sql<
      { available_at: Date }[]
    >`select available_at from webhook_events where event_id = ${event.id}`;
    expect(row?.available_at.toISOString()).toBe(later.toISOString());
    expect(await applyStoredEvent(broken, key, options)).toMatchObject({ outcome: 'dead_letter', failures: 3 });

    const permanent = acmeEvent();
    await storeWith(failingAfterDefault('subscription.updated', 'first'), permanent);
    const rejecting = context(failingAfterDefault('subscription.updated', 'can never apply'));
    const result = await applyStoredEvent(rejecting, { provider: 'acme', eventId: permanent.id }, options);
    expect(result).toMatchObject({ outcome: 'dead_letter', failures: 2 });
    expect((await eventRow(sql, permanent.id))?.last_error).toContain('can never apply');
  });

  it('hands the handler the time the event occurred, and applies an event of a sender no longer enabled', async () => {
    const subscription = uniqueId('sub');
    const created = 1_767_000_000;
    const event = acmeEvent({ created, data: { id: subscription, status: 'past_due' } });
    await storeWith(failingAfterDefault('subscription.updated', 'ledger down'), event);
    const withoutAcme: StoredContext = { ...context(), sendersByName: new Map() };
    const key = { provider: 'acme', eventId: event.id };
    expect(await applyStoredEvent(withoutAcme, key, { from: replayable, onFailure: { retryAt: later } })).toEqual({
      outcome: 'completed',
    });
    expect((await subscriptionRow(sql, subscription))?.updated_at.toISOString()).toBe(
      new Date(created * 1000).toISOString(),
    );
  });

  it('dead-letters at once an event whose payload was purged, saying so', async () => {
    const event = acmeEvent();
    await storeWith(failingAfterDefault('subscription.updated', 'ledger down'), event);
    await sql`update webhook_events set payload = null where event_id = ${event.id}`;
    const key = { provider: 'acme', eventId: event.id };
    const options = { from: replayable, onFailure: { retryAt: later, maxAttempts: 5 } };
    expect(await applyStoredEvent(context(), key, options)).toMatchObject({
      outcome: 'dead_letter',
      lastError: expect.stringContaining('payload purged: nothing to apply'),
    });
  });

  it('writes alongside what became of the event, and a failed write alongside rolls everything back and is thrown as it was', async () => {
    const event = acmeEvent();
    await storeWith(failingAfterDefault('subscription.updated', 'ledger down'), event);
    const key = { provider: 'acme', eventId: event.id };
    const before = await eventRow(sql, event.id);
    const refusal = new Error('audit table unavailable');
    const seen: string[] = [];
    const failing = {
      from: replayable,
      onFailure: { retryAt: later },
      alongside: async (_tx: unknown, outcome: string) => {
        seen.push(outcome);
        throw refusal;
      },
    };
    await expect(applyStoredEvent(context(), key, failing)).rejects.toBe(refusal);
    expect(seen).toEqual(['completed']);
    expect(await eventRow(sql, event.id)).toEqual(before);

    // A handler's failure is recorded, with the write alongside in the same transaction; its failure too is thrown as it was.
    const broken = context(failingAfterDefault('subscription.updated', 'still down'));
    await expect(applyStoredEvent(broken, key, failing)).rejects.toBe(refusal);
    expect(seen).toEqual(['completed', 'failed']);
    expect(await eventRow(sql, event.id)).toEqual(before);
    const recorded: string[] = [];
    const audited = { ...failing, alongside: async (_tx: unknown, outcome: string) => void recorded.push(outcome) };
    expect((await applyStoredEvent(broken, key, audited)).outcome).toBe('failed');
    expect(recorded).toEqual(['failed']);
    expect((await applyStoredEvent(context(), key, audited)).outcome).toBe('completed');
    expect(recorded).toEqual(['failed', 'completed']);
    expect((await applyStoredEvent(context(), key, audited)).outcome).toBe('skipped');
    expect(recorded).toEqual(['failed', 'completed', 'skipped']);
  });

  it('dead-letters an event the schema of its handler no longer accepts, and applies one whose sender cannot tell a parked payload', async () => {
    const event = acmeEvent();
    await storeWith(failingAfterDefault('subscription.updated', 'ledger down'), event);
    const key = { provider: 'acme', eventId: event.id };
    const options = { from: replayable, onFailure: { retryAt: later, maxAttempts: 5 } };
    const stricter = context({
      acme: {
        'subscription.updated': defineHandler({ schema: z.object({ never: z.string() }), apply: async () => {} }),
      },
    });
    expect(await applyStoredEvent(stricter, key, options)).toMatchObject({
      outcome: 'dead_letter',
      lastError: expect.stringContaining('payload no longer matches its handler schema'),
    });

    const other = acmeEvent();
    await storeWith(failingAfterDefault('subscription.updated', 'ledger down'), other);
    const noParking: StoredContext = { ...context(), sendersByName: new Map([['acme', {}]]) };
    expect(await applyStoredEvent(noParking, { provider: 'acme', eventId: other.id }, options)).toEqual({
      outcome: 'completed',
    });
  });

  it('throws, recording nothing, a failure that is not the fault of the event: a 503 or a database connection lost', async () => {
    const event = acmeEvent();
    await storeWith(failingAfterDefault('subscription.updated', 'ledger down'), event);
    const before = await eventRow(sql, event.id);
    const key = { provider: 'acme', eventId: event.id };
    const options = { from: replayable, onFailure: { retryAt: later, maxAttempts: 5 } };
    const unavailable = new AppError('unavailable');
    const lost = Object.assign(new Error('connection lost'), { code: 'CONNECTION_CLOSED' });
    for (const failure of [unavailable, lost]) {
      const throwing = context({
        acme: {
          'subscription.updated': defineHandler({
            schema: z.unknown(),
            apply: async () => {
              throw failure;
            },
          }),
        },
      });
      await expect(applyStoredEvent(throwing, key, options)).rejects.toBe(failure);
      expect(await eventRow(sql, event.id)).toEqual(before);
    }
  });

  it('applies once when ten replays race for one failed event', async () => {
    const counter = await newCounter(sql);
    const event = acmeEvent({ type: 'counter.bump' });
    await storeWith(
      {
        acme: {
          'counter.bump': defineHandler({
            schema: z.unknown(),
            apply: async () => {
              throw new DomainRejection('not yet');
            },
          }),
        },
      },
      event,
    );
    const handlers: HandlerMap = { acme: { 'counter.bump': counter.handler } };
    const results = await Promise.all(
      Array.from({ length: 10 }, () =>
        applyStoredEvent(
          context(handlers),
          { provider: 'acme', eventId: event.id },
          {
            from: replayable,
            onFailure: { retryAt: later },
          },
        ),
      ),
    );
    expect(results.filter((r) => r.outcome === 'completed')).toHaveLength(1);
    expect(results.filter((r) => r.outcome === 'skipped')).toHaveLength(9);
    expect(await counter.value()).toBe(1);
  });
});
