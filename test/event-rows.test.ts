// The row statements of src/inbox/event-rows.ts that the flows through the app reach only in their
// common case: a failure recorded on one row leaves every other failed row alone and answers the
// count it wrote; a failure recorded under a lease another worker took over changes nothing; the
// sweeper passes over a row whose worker is still inside its apply transaction instead of waiting.
import { describe, expect, it } from 'vitest';
import {
  type InboxEvent,
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
