// The row statements of src/inbox/event-rows.ts that the flows through the app reach only in their
// common case: a failure recorded on one row leaves every other failed row alone and answers the
// count it wrote; a failure recorded under a lease another worker took over changes nothing; the
// sweeper passes over a row whose worker is still inside its apply transaction instead of waiting.
// The traceparent an async row keeps for its worker: written by the intake's insert and by a
// redelivery that takes a failed row back, never by sync mode, and nulled by retention with the payload.
import { describe, expect, it } from 'vitest';
import {
  type Arrival,
  type InboxEvent,
  insertOrTakeBackAll,
  purgeStatements,
  recordApplyFailure,
  recordDeliveryFailure,
  sweepExpiredBatch,
} from '../src/inbox/event-rows.ts';
import { uniqueId } from './helpers/acme.ts';
import { useTestDatabase } from './helpers/database.ts';
import { deferred, eventRow } from './helpers/facts.ts';

const { sql, db } = await useTestDatabase();

const lockedBy = async (eventId: string) =>
  (await sql`select locked_by from webhook_events where event_id = ${eventId}`)[0]?.locked_by as string | null;

const inboxEvent = (): InboxEvent => ({
  provider: 'acme',
  eventId: uniqueId('evt'),
  eventType: 'subscription.updated',
  occurredAt: null,
  payload: {},
  payloadText: '{}',
  unknownSchemaVersion: false,
});

describe('recordDeliveryFailure', () => {
  it('counts a second failure on its own row only, and answers the failures recorded', async () => {
    const [event, bystander] = [inboxEvent(), inboxEvent()];
    expect(await recordDeliveryFailure(db, bystander, 'bystander failed')).toBe(1);
    expect(await recordDeliveryFailure(db, event, 'first')).toBe(1);
    expect(await recordDeliveryFailure(db, event, 'second')).toBe(2);
    expect(await eventRow(sql, event.eventId)).toMatchObject({
      status: 'failed',
      attempt_count: 2,
      last_error: 'second',
    });
    expect(await eventRow(sql, bystander.eventId)).toMatchObject({
      status: 'failed',
      attempt_count: 1,
      last_error: 'bystander failed',
    });
  });

  it('records nothing, and answers 0, once another delivery completed the row', async () => {
    const event = inboxEvent();
    await sql`insert into webhook_events (provider, event_id, event_type, status, payload)
      values ('acme', ${event.eventId}, ${event.eventType}, 'completed', '{}'::jsonb)`;
    expect(await recordDeliveryFailure(db, event, 'too late')).toBe(0);
    expect(await eventRow(sql, event.eventId)).toMatchObject({
      status: 'completed',
      attempt_count: 0,
      last_error: null,
    });
  });
});

describe('recordApplyFailure', () => {
  it('changes nothing under a lease another worker has taken over', async () => {
    const event = inboxEvent();
    await sql`insert into webhook_events (provider, event_id, event_type, status, payload, locked_by, locked_until)
      values ('acme', ${event.eventId}, ${event.eventType}, 'processing', '{}'::jsonb, 'worker-b', now() + interval '1 minute')`;
    const recorded = await recordApplyFailure(
      db,
      { provider: 'acme', eventId: event.eventId },
      { from: ['processing'], leaseOwner: 'worker-a' },
      { retryAt: new Date(), maxAttempts: 5 },
      new Error('worker-a failed'),
    );
    expect(recorded).toBeNull();
    expect(await eventRow(sql, event.eventId)).toMatchObject({
      status: 'processing',
      attempt_count: 0,
      last_error: null,
    });
    expect(await lockedBy(event.eventId)).toBe('worker-b');
  });
});

describe('sweepExpiredBatch', () => {
  it('passes over an expired row whose worker still holds it in its apply transaction', async () => {
    const [held, free] = [inboxEvent(), inboxEvent()];
    await sql`insert into webhook_events (provider, event_id, event_type, status, payload, locked_by, locked_until)
      values ('acme', ${held.eventId}, 'subscription.updated', 'processing', '{}'::jsonb, 'slow', now() - interval '1 minute'),
        ('acme', ${free.eventId}, 'subscription.updated', 'processing', '{}'::jsonb, 'gone', now() - interval '1 minute')`;
    const locked = deferred();
    const release = deferred();
    const worker = sql.begin(async (tx) => {
      await tx`select 1 from webhook_events where event_id = ${held.eventId} for update`;
      locked.resolve();
      await release.promise;
    });
    await locked.promise;
    try {
      // Waiting for the row lock would last until the worker commits, which it does only after this.
      expect(await sweepExpiredBatch(db, new Date(), 10)).toBe(1);
    } finally {
      release.resolve();
      await worker;
    }
    expect(await eventRow(sql, free.eventId)).toMatchObject({ status: 'received' });
    expect(await lockedBy(free.eventId)).toBeNull();
    expect(await eventRow(sql, held.eventId)).toMatchObject({ status: 'processing' });
    expect(await lockedBy(held.eventId)).toBe('slow');
  });
});

describe('the traceparent a queued row keeps', () => {
  const traceparentOf = async (eventId: string) =>
    (await sql<{ traceparent: string | null }[]>`select traceparent from webhook_events where event_id = ${eventId}`)[0]
      ?.traceparent;
  const queued = (traceparent?: string): Arrival => ({ status: 'received', availableAt: new Date(), traceparent });
  const traceparent = (n: number) => `00-${String(n).repeat(32)}-${String(n).repeat(16)}-01`;

  it('is written by the async insert when the delivery has one, and never by sync mode', async () => {
    const [traced, untraced, applied] = [inboxEvent(), inboxEvent(), inboxEvent()];
    const written = await insertOrTakeBackAll(db, [
      { event: traced, arrival: queued(traceparent(1)) },
      { event: untraced, arrival: queued() },
      { event: applied, arrival: { status: 'completed' } },
    ]);
    expect(written.every((row) => row !== null)).toBe(true);
    expect(await traceparentOf(traced.eventId)).toBe(traceparent(1));
    expect(await traceparentOf(untraced.eventId)).toBeNull();
    expect(await traceparentOf(applied.eventId)).toBeNull();
  });

  it('is replaced by the redelivery that takes a failed row back, by id or by digest', async () => {
    const byId = inboxEvent();
    const byDigest = { ...inboxEvent(), contentDigest: uniqueId('digest') };
    await insertOrTakeBackAll(db, [
      { event: byId, arrival: queued(traceparent(1)) },
      { event: byDigest, arrival: queued(traceparent(1)) },
    ]);
    await sql`update webhook_events set status = 'failed', attempt_count = 1
      where event_id in (${byId.eventId}, ${byDigest.eventId})`;
    // Each alone: a batch of signed ids takes back in its insert (ON CONFLICT), a digest in an UPDATE.
    expect(await insertOrTakeBackAll(db, [{ event: byId, arrival: queued(traceparent(2)) }])).toEqual([
      { failures: 1, eventId: byId.eventId },
    ]);
    // The digest's redelivery arrives under another id: matched by the signed digest, not the id.
    const redelivered = { ...byDigest, eventId: uniqueId('evt') };
    expect(await insertOrTakeBackAll(db, [{ event: redelivered, arrival: queued(traceparent(3)) }])).toEqual([
      { failures: 1, eventId: byDigest.eventId },
    ]);
    expect(await traceparentOf(byId.eventId)).toBe(traceparent(2));
    expect(await traceparentOf(byDigest.eventId)).toBe(traceparent(3));
    expect(await eventRow(sql, byId.eventId)).toMatchObject({ status: 'received' });
  });

  it('is nulled by retention with the payload', async () => {
    const [old, recent] = [inboxEvent(), inboxEvent()];
    await sql`insert into webhook_events (provider, event_id, event_type, status, payload, traceparent, completed_at)
      values ('acme', ${old.eventId}, 'subscription.updated', 'completed', '{}'::jsonb, ${traceparent(4)}, now() - interval '10 days'),
        ('acme', ${recent.eventId}, 'subscription.updated', 'completed', '{}'::jsonb, ${traceparent(5)}, now())`;
    await db.execute(purgeStatements.nullPayloads(new Date(Date.now() - 86_400_000), 1000));
    expect(await eventRow(sql, old.eventId)).toMatchObject({ payload: null });
    expect(await traceparentOf(old.eventId)).toBeNull();
    expect(await traceparentOf(recent.eventId)).toBe(traceparent(5));
  });
});
