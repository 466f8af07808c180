// Group commit (src/inbox/committer.ts) through the app: deliveries that wait while a batch holds the
// intake's only lane go together in the next transaction, and every promise of the one-at-a-time path
// still holds per delivery. A blocking handler holds the lane open until the test has queued what it
// wants in one batch; `beforeStore` tells when each delivery has reached the committer.
import { createHash } from 'node:crypto';
import { describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import type { Transaction } from '../src/db/client.ts';
import { defaultHandlers, defineHandler, type HandlerMap } from '../src/domain/handlers.ts';
import { IntakeCommitter } from '../src/inbox/committer.ts';
import { Deadline } from '../src/inbox/deadline.ts';
import { enableSenders } from '../src/senders/registry.ts';
import { acmeEvent, PREVIOUS_SECRET, signedHeaders, TEST_SECRET, uniqueId } from './helpers/acme.ts';
import { buildTestApp, type TestApp } from './helpers/app.ts';
import { useTestDatabase } from './helpers/database.ts';
import { deferred, eventRow, subscriptionRow } from './helpers/facts.ts';
import { patience, WAIT_MS } from './helpers/patience.ts';
import { allSenderSecrets, githubSender } from './helpers/senders.ts';

const { sql, db } = await useTestDatabase();
const found = defaultHandlers.acme?.['subscription.updated'];
if (found === undefined) throw new Error('no acme subscription.updated handler');
const updated = found;

/** `subscription.created` blocks until released; `subscription.updated` is the real handler, with hooks. */
function lanesHeldBy(
  hold: Promise<void>,
  hooks: { beforeUpdate?: (subscription: string, tx: Parameters<typeof updated.apply>[0]['tx']) => Promise<void> } = {},
): HandlerMap {
  const schema = z.looseObject({ data: z.looseObject({ id: z.string() }) });
  return {
    acme: {
      'subscription.created': defineHandler({ schema, apply: () => hold }),
      'subscription.updated': defineHandler({
        schema: z.unknown(),
        async apply(context, payload) {
          await hooks.beforeUpdate?.(schema.parse(payload).data.id, context.tx);
          await updated?.apply(context, updated.schema.parse(payload));
        },
      }),
    },
  };
}

interface Harness {
  test: TestApp;
  batchSizes: number[];
  /** Resolves once `count` deliveries have reached the committer. */
  arrived(count: number): Promise<void>;
}

async function harness(
  handlers: HandlerMap,
  options: { deadlineMs?: number; enabledSenders?: Awaited<ReturnType<typeof enableSenders>> } = {},
): Promise<Harness> {
  const enabledSenders = options.enabledSenders ?? (await enableSenders({ acme: [TEST_SECRET, PREVIOUS_SECRET] }));
  const batchSizes: number[] = [];
  let count = 0;
  const waiters: Array<{ count: number; resolve: () => void }> = [];
  const test = await buildTestApp(db, {
    enabledSenders,
    handlers,
    groupCommit: { maxBatch: 64, lanes: 1, onBatch: (size) => batchSizes.push(size) },
    config: { HANDLER_DEADLINE_MS: options.deadlineMs ?? 10_000 },
    // Byte-identical copies must reach the committer here, not be answered from memory.
    answeredDeliveries: false,
    beforeStore: async () => {
      count += 1;
      for (const waiter of waiters) if (count >= waiter.count) waiter.resolve();
    },
  });
  // The test clock stays at TEST_NOW for signatures; deadlines run on real timers.
  const arrived = (target: number) =>
    new Promise<void>((resolve) => {
      if (count >= target) resolve();
      else waiters.push({ count: target, resolve });
    }).then(() => new Promise<void>((resolve) => setImmediate(resolve)));
  return { test, batchSizes, arrived };
}

async function send(test: TestApp, event: Record<string, unknown>): Promise<{ status: number; body: string }> {
  const body = JSON.stringify(event);
  const response = await test.request('/webhooks/acme', { method: 'POST', body, headers: await signedHeaders(body) });
  return { status: response.status, body: await response.text() };
}

const blocker = () => acmeEvent({ type: 'subscription.created', data: { id: uniqueId('sub'), status: 'active' } });
const transactionsOf = async (eventIds: string[]) =>
  Number(
    (await sql`select count(distinct xmin::text)::int as n from webhook_events where event_id = any(${eventIds})`)[0]
      ?.n,
  );
/** Resolves once some statement of this database waits for a lock. */
async function lockWaited(): Promise<void> {
  await expect
    .poll(
      async () =>
        Number(
          (
            await sql`select count(*)::int as n from pg_stat_activity
              where datname = current_database() and wait_event_type = 'Lock'`
          )[0]?.n,
        ),
      { timeout: WAIT_MS, interval: 10 },
    )
    .toBeGreaterThan(0);
}

const outboxFor = async (eventId: string) =>
  Number(
    (await sql`select count(*)::int as n from outbox_messages where deduplication_key like ${`acme:${eventId}:%`}`)[0]
      ?.n,
  );

describe('group commit', () => {
  it('applies what waited in one transaction, each delivery answered on its own', async () => {
    const hold = deferred();
    const h = await harness(lanesHeldBy(hold.promise));
    const first = send(h.test, blocker());
    await h.arrived(1);
    const events = Array.from({ length: 5 }, () => acmeEvent());
    const answers = events.map((event) => send(h.test, event));
    await h.arrived(6);
    hold.resolve();

    expect((await first).status).toBe(200);
    for (const answer of await Promise.all(answers)) expect(answer).toEqual({ status: 200, body: '{"received":true}' });
    expect(h.batchSizes).toEqual([1, 5]);
    expect(await transactionsOf(events.map((event) => event.id))).toBe(1);
    for (const event of events) {
      expect(await eventRow(sql, event.id)).toMatchObject({ status: 'completed', attempt_count: 0 });
      expect(await outboxFor(event.id)).toBe(1);
    }
  });

  it('answers a duplicate in a batch without applying it; the rest still commit together', async () => {
    const hold = deferred();
    const h = await harness(lanesHeldBy(hold.promise));
    const seen = acmeEvent();
    expect(await send(h.test, seen)).toEqual({ status: 200, body: '{"received":true}' });
    const first = send(h.test, blocker());
    await h.arrived(2);
    const events = Array.from({ length: 3 }, () => acmeEvent());
    const answers = [seen, ...events].map((event) => send(h.test, event));
    await h.arrived(6);
    hold.resolve();
    await first;

    const [again, ...fresh] = await Promise.all(answers);
    expect(again).toEqual({ status: 200, body: '{"received":true,"duplicate":true}' });
    for (const answer of fresh) expect(answer).toEqual({ status: 200, body: '{"received":true}' });
    expect(h.batchSizes).toEqual([1, 1, 4]);
    // The duplicate's handler never ran, so nothing rolled the batch back to one delivery at a time.
    expect(await transactionsOf(events.map((event) => event.id))).toBe(1);
    expect(await outboxFor(seen.id)).toBe(1);
  });

  it('fails only the delivery whose handler throws; the rest of its batch is applied once', async () => {
    const hold = deferred();
    const doomed = uniqueId('sub');
    const h = await harness(
      lanesHeldBy(hold.promise, {
        beforeUpdate: async (subscription) => {
          if (subscription === doomed) throw new Error('downstream refused');
        },
      }),
    );
    const first = send(h.test, blocker());
    await h.arrived(1);
    const events = [acmeEvent(), acmeEvent(), acmeEvent({ data: { id: doomed, status: 'active' } }), acmeEvent()];
    const answers = events.map((event) => send(h.test, event));
    await h.arrived(5);
    hold.resolve();
    await first;

    const statuses = (await Promise.all(answers)).map((answer) => answer.status);
    expect(statuses).toEqual([200, 200, 500, 200]);
    expect(h.batchSizes).toEqual([1, 4]);
    const [a, b, failed, d] = events as [
      (typeof events)[0],
      (typeof events)[0],
      (typeof events)[0],
      (typeof events)[0],
    ];
    expect(await eventRow(sql, failed.id)).toMatchObject({ status: 'failed', attempt_count: 1 });
    expect(await subscriptionRow(sql, doomed)).toBeUndefined();
    expect(await outboxFor(failed.id)).toBe(0);
    for (const event of [a, b, d]) {
      expect(await eventRow(sql, event.id)).toMatchObject({ status: 'completed', attempt_count: 0 });
      expect(await outboxFor(event.id)).toBe(1);
    }
  });

  it('sends a second delivery of one id to a later batch, answered as a duplicate once the first committed', async () => {
    const hold = deferred();
    const h = await harness(lanesHeldBy(hold.promise));
    const first = send(h.test, blocker());
    await h.arrived(1);
    const event = acmeEvent();
    const other = acmeEvent();
    const answers = [send(h.test, event), send(h.test, other), send(h.test, event)];
    await h.arrived(4);
    hold.resolve();
    await first;

    // Either copy of the event may reach the committer first (each signs its headers on its own).
    const [original, sibling, twin] = await Promise.all(answers);
    expect(sibling).toEqual({ status: 200, body: '{"received":true}' });
    expect([original, twin].map((answer) => answer?.body).sort()).toEqual([
      '{"received":true,"duplicate":true}',
      '{"received":true}',
    ]);
    expect(h.batchSizes).toEqual([1, 2, 1]);
    expect(await eventRow(sql, event.id)).toMatchObject({ status: 'completed' });
    expect(await outboxFor(event.id)).toBe(1);
  });

  it('applies one GitHub body once when it comes under two delivery ids: the second waits for the next batch', async () => {
    const hold = deferred();
    const counted = uniqueId('counter');
    await sql`insert into subscriptions (external_id, status, provider_version, updated_at) values (${counted}, 'active', 0, now())`;
    const bump = defineHandler({
      schema: z.unknown(),
      async apply({ tx }) {
        await tx.execute(
          `update subscriptions set provider_version = provider_version + 1 where external_id = '${counted}'`,
        );
      },
    });
    const enabledSenders = await enableSenders({ ...allSenderSecrets(), acme: [TEST_SECRET] });
    const h = await harness({ ...lanesHeldBy(hold.promise), github: { 'issues.opened': bump } }, { enabledSenders });
    const first = send(h.test, blocker());
    await h.arrived(1);
    const { body } = githubSender.newEvent();
    const deliver = async (id: string) => {
      const response = await h.test.request('/webhooks/github', {
        method: 'POST',
        body,
        headers: await githubSender.headers({ body, eventId: id }),
      });
      return { status: response.status, body: await response.text() };
    };
    const ids = [crypto.randomUUID(), crypto.randomUUID()];
    const answers = ids.map(deliver);
    await h.arrived(3);
    hold.resolve();
    await first;

    const texts = (await Promise.all(answers)).map((answer) => answer.body).sort();
    expect(texts).toEqual(['{"received":true,"duplicate":true}', '{"received":true}']);
    // The ids differ, the digest is one key: never two members of one batch.
    expect(h.batchSizes).toEqual([1, 1, 1]);
    const digest = createHash('sha256').update(body).digest('hex');
    expect(await sql`select event_id from webhook_events where content_digest = ${digest}`).toHaveLength(1);
    expect(Number((await subscriptionRow(sql, counted))?.provider_version)).toBe(1);
  });

  it('puts two different GitHub bodies in one batch: only a shared digest keeps deliveries apart', async () => {
    const hold = deferred();
    const enabledSenders = await enableSenders({ ...allSenderSecrets(), acme: [TEST_SECRET] });
    const h = await harness(lanesHeldBy(hold.promise), { enabledSenders });
    const first = send(h.test, blocker());
    await h.arrived(1);
    const bodies = [githubSender.newEvent().body, githubSender.newEvent().body];
    const answers = bodies.map(async (body) => {
      const headers = await githubSender.headers({ body, eventId: crypto.randomUUID() });
      const response = await h.test.request('/webhooks/github', { method: 'POST', body, headers });
      return { status: response.status, body: await response.text() };
    });
    await h.arrived(3);
    hold.resolve();
    await first;

    for (const answer of await Promise.all(answers)) expect(answer).toEqual({ status: 200, body: '{"received":true}' });
    expect(h.batchSizes).toEqual([1, 2]);
    for (const body of bodies) {
      const digest = createHash('sha256').update(body).digest('hex');
      expect(await sql`select 1 from webhook_events where content_digest = ${digest}`).toHaveLength(1);
    }
  });

  it('never commits a delivery already answered 503; the rest of its batch commits in the next one', async () => {
    const GAPPED_DEADLINE_MS = patience(6000);
    const hold = deferred();
    const late = acmeEvent();
    let lateAnswered: Promise<unknown> = Promise.resolve();
    let waited = false;
    const waiting = uniqueId('sub');
    const h = await harness(
      lanesHeldBy(hold.promise, {
        // The first time through, the batch is still open when the late delivery's deadline passes.
        beforeUpdate: async (subscription) => {
          if (subscription !== waiting || waited) return;
          waited = true;
          await lateAnswered;
        },
      }),
      { deadlineMs: GAPPED_DEADLINE_MS },
    );
    const first = send(h.test, blocker());
    await h.arrived(1);
    const lateAnswer = send(h.test, late);
    lateAnswered = lateAnswer;
    await h.arrived(2);
    // The pause is the subject: the others arrive half a deadline after the late one, so they still
    // have half a deadline (seconds, scaled with the suite's patience) for their own batch once it expired.
    await new Promise((resolve) => setTimeout(resolve, GAPPED_DEADLINE_MS / 2));
    const events = [acmeEvent({ data: { id: waiting, status: 'active' } }), acmeEvent()];
    const answers = events.map((event) => send(h.test, event));
    await h.arrived(4);
    hold.resolve();
    await first;

    expect(await lateAnswer).toEqual({ status: 503, body: '{"error":"unavailable"}' });
    for (const answer of await Promise.all(answers)) expect(answer.status).toBe(200);
    expect(await eventRow(sql, late.id)).toBeUndefined();
    expect(await outboxFor(late.id)).toBe(0);
    for (const event of events) {
      expect(await eventRow(sql, event.id)).toMatchObject({ status: 'completed' });
      expect(await outboxFor(event.id)).toBe(1);
    }
    expect(Number((await subscriptionRow(sql, waiting))?.provider_version)).toBe(1);
    // The other two went on together as a batch of their own, not one at a time.
    expect(h.batchSizes).toEqual([1, 3, 2]);
    expect(await transactionsOf(events.map((event) => event.id))).toBe(1);
  });

  it('answers 503 to every member of a batch whose connection is cut, stores nothing, then recovers', async () => {
    const hold = deferred();
    const inside = deferred();
    const gone = deferred();
    let backend = 0;
    const cut = uniqueId('sub');
    const h = await harness(
      lanesHeldBy(hold.promise, {
        beforeUpdate: async (subscription, tx) => {
          if (subscription !== cut || backend !== 0) return;
          const [row] = await tx.execute<{ pid: number }>('select pg_backend_pid() as pid');
          backend = Number(row?.pid);
          inside.resolve();
          // Goes on only once its backend has exited: the next statement meets the cut connection.
          await gone.promise;
        },
      }),
    );
    const first = send(h.test, blocker());
    await h.arrived(1);
    const events = [acmeEvent(), acmeEvent({ data: { id: cut, status: 'active' } }), acmeEvent()];
    const answers = events.map((event) => send(h.test, event));
    await h.arrived(4);
    hold.resolve();
    await first;
    await inside.promise;
    await sql`select pg_terminate_backend(${backend})`;
    await expect
      .poll(async () => (await sql`select 1 from pg_stat_activity where pid = ${backend}`).length, {
        timeout: WAIT_MS,
        interval: 10,
      })
      .toBe(0);
    gone.resolve();

    for (const answer of await Promise.all(answers))
      expect(answer).toEqual({ status: 503, body: '{"error":"unavailable"}' });
    for (const event of events) {
      expect(await eventRow(sql, event.id)).toBeUndefined();
      expect(await outboxFor(event.id)).toBe(0);
    }
    // The sender retries: the pool reconnects and the same deliveries are applied once.
    for (const answer of await Promise.all(events.map((event) => send(h.test, event)))) expect(answer.status).toBe(200);
    for (const event of events) expect(await eventRow(sql, event.id)).toMatchObject({ status: 'completed' });
  });
});

describe('group commit, nothing to apply', () => {
  it('stores a batch of `received` rows in one statement of its own, with no transaction block', async () => {
    const committer = new IntakeCommitter(db, { maxBatch: 64, lanes: 1 });
    const transaction = vi.spyOn(db, 'transaction');
    const payload = { data: { id: 'sub_x', status: 'active' } };
    const submissions = Array.from({ length: 6 }, () => ({
      items: [
        {
          event: {
            provider: 'acme',
            eventId: uniqueId('evt'),
            eventType: 'subscription.updated',
            occurredAt: null,
            payload,
            payloadText: JSON.stringify(payload),
            unknownSchemaVersion: false,
          },
          plan: { kind: 'apply' as const, handler: updated, payload },
          arrival: { status: 'received' as const, availableAt: new Date() },
        },
      ],
      deadline: new Deadline(10_000),
    }));
    try {
      // The first starts a batch at once; the five that wait for it go together in the next.
      const results = await Promise.all(submissions.map((submission) => committer.submit(submission)));
      expect(results).toEqual(submissions.map(() => [{ outcome: 'queued', attempt: 1 }]));
      expect(transaction).not.toHaveBeenCalled();
      const ids = submissions.map((submission) => submission.items[0]?.event.eventId ?? '');
      expect(await transactionsOf(ids.slice(1))).toBe(1);
      for (const id of ids) expect(await eventRow(sql, id)).toMatchObject({ status: 'received', attempt_count: 0 });
    } finally {
      transaction.mockRestore();
      for (const submission of submissions) submission.deadline.clear();
    }
  });
});

describe('group commit, async mode', () => {
  it('never stores a delivery answered 503 because its deadline passed while it waited for a batch', async () => {
    const test = await buildTestApp(db, {
      groupCommit: { maxBatch: 64, lanes: 1 },
      config: { PROCESSING_MODE: 'async', HANDLER_DEADLINE_MS: 1000 },
    });
    // A second connection holds an uncommitted row under the first delivery's id: that delivery's
    // insert waits for it, and with it the intake's only lane.
    const first = acmeEvent();
    const locked = deferred();
    const release = deferred();
    const holder = sql
      .begin(async (tx) => {
        await tx`insert into webhook_events (provider, event_id, event_type, status, payload)
          values ('acme', ${first.id}, ${first.type}, 'received', '{}'::jsonb)`;
        locked.resolve();
        await release.promise;
        throw new Error('rolled back on purpose');
      })
      .catch(() => undefined);
    await locked.promise;
    const firstAnswer = send(test, first);
    // The first delivery's insert waits on the held row (and with it the only lane).
    await lockWaited();

    const late = acmeEvent();
    expect(await send(test, late)).toEqual({ status: 503, body: '{"error":"unavailable"}' });
    release.resolve();
    await holder;
    expect((await firstAnswer).status).toBe(202);
    // Sent after the lane was freed, so answered only once whatever batch the late one could have joined is done.
    const after = acmeEvent();
    expect((await send(test, after)).status).toBe(202);

    expect(await eventRow(sql, late.id)).toBeUndefined();
    expect(await eventRow(sql, first.id)).toMatchObject({ status: 'received' });
    expect(await eventRow(sql, after.id)).toMatchObject({ status: 'received' });
  });
});

describe('group commit, lanes and batch bounds', () => {
  const payload = { data: { id: 'sub_lanes', status: 'active' } };
  /** One delivery of one acme event: held until `hold` resolves, else stored `ignored` (nothing to apply). */
  const submission = (hold?: Promise<void>) => ({
    items: [
      {
        event: {
          provider: 'acme',
          eventId: uniqueId('evt'),
          eventType: hold === undefined ? 'nothing.handles.this' : 'subscription.created',
          occurredAt: null,
          payload,
          payloadText: JSON.stringify(payload),
          unknownSchemaVersion: false,
        },
        plan:
          hold === undefined
            ? { kind: 'ignored' as const }
            : { kind: 'apply' as const, handler: defineHandler({ schema: z.unknown(), apply: () => hold }), payload },
        arrival: { status: hold === undefined ? ('ignored' as const) : ('completed' as const) },
      },
    ],
    deadline: new Deadline(10_000),
  });

  it('opens another lane only once a quarter of a batch waits, and never more lanes than allowed', async () => {
    const sizes: number[] = [];
    // maxBatch 8: a second lane opens when two deliveries wait; at most two lanes.
    const committer = new IntakeCommitter(db, { maxBatch: 8, lanes: 2, onBatch: (size) => sizes.push(size) });
    const hold = deferred();
    const submissions = [submission(hold.promise), ...Array.from({ length: 4 }, () => submission())];
    try {
      // A batch starts synchronously inside submit (onBatch is told before its first statement).
      const held = committer.submit(submissions[0] as ReturnType<typeof submission>);
      expect(sizes).toEqual([1]);
      const second = committer.submit(submissions[1] as ReturnType<typeof submission>);
      expect(sizes).toEqual([1]); // one waiting: less than a quarter of a batch, the busy lane will take it
      const third = committer.submit(submissions[2] as ReturnType<typeof submission>);
      expect(sizes).toEqual([1, 2]); // two waiting: the second lane takes both
      const rest = submissions.slice(3).map((s) => committer.submit(s));
      expect(sizes).toEqual([1, 2]); // both lanes busy: a third is never opened
      // The second lane commits while the first is still held.
      expect(await Promise.all([second, third])).toEqual([
        [{ outcome: 'ignored', attempt: 1 }],
        [{ outcome: 'ignored', attempt: 1 }],
      ]);
      await Promise.all(rest);
      hold.resolve();
      expect(await held).toEqual([{ outcome: 'completed', attempt: 1 }]);
      expect(sizes).toEqual([1, 2, 2]);
    } finally {
      hold.resolve();
      for (const s of submissions) s.deadline.clear();
    }
  });

  it('past two busy lanes, opens another only for a whole batch waiting', async () => {
    const sizes: number[] = [];
    // maxBatch 8 and four lanes allowed: the second lane opens for two waiting, a third only for eight.
    const committer = new IntakeCommitter(db, { maxBatch: 8, lanes: 4, onBatch: (size) => sizes.push(size) });
    const hold = deferred();
    const held = [submission(hold.promise), submission(hold.promise), submission(hold.promise)];
    const free = Array.from({ length: 8 }, () => submission());
    try {
      const answers = held.map((s) => committer.submit(s));
      expect(sizes).toEqual([1, 2]); // both lanes held by their handlers
      const early = free.slice(0, 7).map((s) => committer.submit(s));
      expect(sizes).toEqual([1, 2]); // seven waiting: not a whole batch, no third lane
      const last = committer.submit(free[7] as ReturnType<typeof submission>);
      expect(sizes).toEqual([1, 2, 8]); // a whole batch waiting: the third lane takes it
      await Promise.all([...early, last]);
      hold.resolve();
      expect(await Promise.all(answers)).toEqual(held.map(() => [{ outcome: 'completed', attempt: 1 }]));
    } finally {
      hold.resolve();
      for (const s of [...held, ...free]) s.deadline.clear();
    }
  });

  it('puts at most maxBatch deliveries in one batch', async () => {
    const sizes: number[] = [];
    const committer = new IntakeCommitter(db, { maxBatch: 2, lanes: 1, onBatch: (size) => sizes.push(size) });
    const hold = deferred();
    const submissions = [submission(hold.promise), ...Array.from({ length: 3 }, () => submission())];
    try {
      const answers = submissions.map((s) => committer.submit(s));
      hold.resolve();
      await Promise.all(answers);
      expect(sizes).toEqual([1, 2, 1]);
    } finally {
      hold.resolve();
      for (const s of submissions) s.deadline.clear();
    }
  });

  it('starts no empty batch when every delivery waiting for the lane was already answered 503', async () => {
    const sizes: number[] = [];
    const committer = new IntakeCommitter(db, { maxBatch: 8, lanes: 1, onBatch: (size) => sizes.push(size) });
    const hold = deferred();
    const held = submission(hold.promise);
    const late = { ...submission(), deadline: new Deadline(1) };
    const after = submission();
    try {
      const heldAnswer = committer.submit(held);
      // Waits behind the held batch until its deadline answers it 503: it is then dropped from the queue.
      await expect(committer.submit(late)).rejects.toMatchObject({ code: 'unavailable' });
      hold.resolve();
      await heldAnswer;
      expect(await committer.submit(after)).toEqual([{ outcome: 'ignored', attempt: 1 }]);
      expect(sizes).toEqual([1, 1]);
      expect(await eventRow(sql, late.items[0]?.event.eventId ?? '')).toBeUndefined();
    } finally {
      hold.resolve();
      for (const s of [held, late, after]) s.deadline.clear();
    }
  });

  it('queues, and never applies at the intake, an async event whose digest makes its batch a transaction', async () => {
    const committer = new IntakeCommitter(db, { maxBatch: 8, lanes: 1 });
    const applied: string[] = [];
    const recording = defineHandler({
      schema: z.unknown(),
      apply: async ({ event }) => void applied.push(event.eventId),
    });
    const base = submission();
    const item = base.items[0];
    if (item === undefined) throw new Error('no item');
    const queued = {
      ...base,
      items: [
        {
          event: {
            ...item.event,
            eventType: 'subscription.updated',
            contentDigest: createHash('sha256').update(item.event.eventId).digest('hex'),
          },
          plan: { kind: 'apply' as const, handler: recording, payload },
          arrival: { status: 'received' as const, availableAt: new Date() },
        },
      ],
    };
    // A digest row may be taken back in a second statement: both go in one transaction, so an outage
    // between them cannot leave the first committed under a 503.
    const transaction = vi.spyOn(db, 'transaction');
    try {
      expect(await committer.submit(queued)).toEqual([{ outcome: 'queued', attempt: 1 }]);
      expect(transaction).toHaveBeenCalledTimes(1);
      expect(applied).toEqual([]);
      expect(await eventRow(sql, item.event.eventId)).toMatchObject({ status: 'received', attempt_count: 0 });
    } finally {
      transaction.mockRestore();
      base.deadline.clear();
    }
  });

  it('retries a batch that lost a serialization race three times, then answers 503 and stores nothing', async () => {
    const committer = new IntakeCommitter(db, { maxBatch: 8, lanes: 1 });
    const conflict = Object.assign(new Error('could not serialize access'), { name: 'PostgresError', code: '40001' });
    const transaction = vi.spyOn(db, 'transaction').mockRejectedValue(conflict);
    const member = submission(Promise.resolve());
    try {
      // Every transaction loses the race: the batch is tried four times in all (not once, not forever),
      // then, the conflict being the database's trouble and not the delivery's, answered 503 (with the
      // conflict as its cause, for whoever reads the error).
      await expect(committer.submit(member)).rejects.toMatchObject({ code: 'unavailable', cause: conflict });
      expect(transaction).toHaveBeenCalledTimes(4);
      expect(await eventRow(sql, member.items[0]?.event.eventId ?? '')).toBeUndefined();
    } finally {
      transaction.mockRestore();
      member.deadline.clear();
    }
  });
});

describe('group commit, what a batch decides for each member', () => {
  const payload = { data: { id: 'sub_members', status: 'active' } };
  /**
   * One event of a delivery: applied now by `apply`, queued for the worker, or ignored (no handler).
   * A `gate` id: the commit gate below holds the COMMIT of a transaction that wrote its row.
   */
  const item = (
    kind: 'apply' | 'queue' | 'ignore',
    apply: (tx: Transaction) => Promise<unknown> = async () => {},
    prefix: 'evt' | 'gate' = 'evt',
  ) => ({
    event: {
      provider: 'acme',
      eventId: uniqueId(prefix),
      eventType: 'subscription.created',
      occurredAt: null,
      payload,
      payloadText: JSON.stringify(payload),
      unknownSchemaVersion: false,
    },
    plan:
      kind === 'ignore'
        ? { kind: 'ignored' as const }
        : {
            kind: 'apply' as const,
            handler: defineHandler({ schema: z.unknown(), apply: ({ tx }) => apply(tx).then(() => undefined) }),
            payload,
          },
    arrival:
      kind === 'queue'
        ? { status: 'received' as const, availableAt: new Date() }
        : { status: kind === 'ignore' ? ('ignored' as const) : ('completed' as const) },
  });
  const delivery = (items: ReturnType<typeof item>[], deadlineMs = 10_000) => ({
    items,
    deadline: new Deadline(deadlineMs),
  });
  const idsOf = (submission: ReturnType<typeof delivery>) => submission.items.map((one) => one.event.eventId);
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  /**
   * The commit gate: a deferred trigger makes the COMMIT of any transaction that inserted a `gate_` row
   * wait for an advisory lock, which a second connection holds until the test lets it go.
   */
  async function closeCommitGate(): Promise<{ waiting(): Promise<void>; open(): Promise<void> }> {
    await sql`create or replace function commit_gate() returns trigger language plpgsql as $$
      begin perform pg_advisory_xact_lock(7171); return null; end $$`;
    await sql`drop trigger if exists commit_gate on webhook_events`;
    await sql`create constraint trigger commit_gate after insert on webhook_events
      deferrable initially deferred for each row when (new.event_id like 'gate\\_%') execute function commit_gate()`;
    const taken = deferred();
    const released = deferred();
    const holder = sql.begin(async (tx) => {
      await tx`select pg_advisory_xact_lock(7171)`;
      taken.resolve();
      await released.promise;
    });
    await Promise.race([taken.promise, holder]);
    return {
      waiting: async () => {
        const waiters = async () =>
          Number(
            (await sql`select count(*)::int as n from pg_locks where locktype = 'advisory' and not granted`)[0]?.n,
          );
        while ((await waiters()) === 0) await sleep(10);
      },
      open: async () => {
        released.resolve();
        await holder;
        await sql`drop trigger if exists commit_gate on webhook_events`;
      },
    };
  }

  it('answers a member whose deadline passes while its batch commits with the commit, never 503', async () => {
    const committer = new IntakeCommitter(db, { maxBatch: 8, lanes: 1 });
    const hold = deferred();
    const held = delivery([item('apply', () => hold.promise)]);
    // Long enough for a busy machine to apply both and send COMMIT before it passes.
    const hurried = delivery([item('apply', undefined, 'gate')], patience(5000));
    const patient = delivery([item('apply')], 20_000);
    const gate = await closeCommitGate();
    try {
      const heldAnswer = committer.submit(held);
      const answers = Promise.allSettled([committer.submit(hurried), committer.submit(patient)]);
      hold.resolve();
      await heldAnswer;
      // Both were applied and the batch's COMMIT was sent; it waits at the gate past the hurried one's deadline.
      await gate.waiting();
      while (!hurried.deadline.expired) await sleep(20);
      await gate.open();
      expect(await answers).toEqual([
        { status: 'fulfilled', value: [{ outcome: 'completed', attempt: 1 }] },
        { status: 'fulfilled', value: [{ outcome: 'completed', attempt: 1 }] },
      ]);
      expect(await transactionsOf([...idsOf(hurried), ...idsOf(patient)])).toBe(1);
      for (const id of [...idsOf(hurried), ...idsOf(patient)]) {
        expect(await eventRow(sql, id)).toMatchObject({ status: 'completed', attempt_count: 0 });
      }
    } finally {
      hold.resolve();
      await gate.open();
      for (const s of [held, hurried, patient]) s.deadline.clear();
    }
  });

  it('answers a queued delivery whose deadline passes while its statement commits with the commit, never 503', async () => {
    const committer = new IntakeCommitter(db, { maxBatch: 8, lanes: 1 });
    const queued = delivery([item('queue', undefined, 'gate')], patience(3000));
    const gate = await closeCommitGate();
    try {
      const answer = committer.submit(queued).then(
        (value) => ({ value }),
        (error: unknown) => ({ error }),
      );
      await gate.waiting();
      while (!queued.deadline.expired) await sleep(20);
      await gate.open();
      expect(await answer).toEqual({ value: [{ outcome: 'queued', attempt: 1 }] });
      expect(await eventRow(sql, idsOf(queued)[0] ?? '')).toMatchObject({ status: 'received', attempt_count: 0 });
    } finally {
      await gate.open();
      queued.deadline.clear();
    }
  });

  it('bounds the statements of a batch by half of what its most patient member has left', async () => {
    const committer = new IntakeCommitter(db, { maxBatch: 8, lanes: 1 });
    const limits: number[] = [];
    const readLimit = async (tx: Transaction) => {
      const [row] = await tx.execute<{ ms: string }>(
        "select setting as ms from pg_settings where name = 'statement_timeout'",
      );
      limits.push(Number(row?.ms));
    };
    const hold = deferred();
    const held = delivery([item('apply', () => hold.promise)]);
    // Far apart, so that however long a busy machine takes to reach the batch, the limit tells them apart.
    const hurried = delivery([item('apply', readLimit)], 20_000);
    const patient = delivery([item('apply', readLimit)], 600_000);
    try {
      const answers = [held, hurried, patient].map((s) => committer.submit(s));
      hold.resolve();
      await Promise.all(answers);
      // One batch of the two, bounded by about 300 s: not the hurried member's 10 s, nor all the patient one has.
      expect(limits).toHaveLength(2);
      for (const limit of limits) {
        expect(limit).toBeGreaterThan(250_000);
        expect(limit).toBeLessThanOrEqual(300_000);
      }
    } finally {
      hold.resolve();
      for (const s of [held, hurried, patient]) s.deadline.clear();
    }
  });

  it('opens no transaction for a member already answered 503 when its failed batch goes one at a time', async () => {
    const committer = new IntakeCommitter(db, { maxBatch: 8, lanes: 1 });
    const transaction = vi.spyOn(db, 'transaction');
    const hold = deferred();
    const held = delivery([item('apply', () => hold.promise)]);
    const hurried = delivery([item('apply')], 1500);
    let hurriedAnswered: Promise<unknown> = Promise.resolve();
    // Fails once the hurried member's deadline has passed: the batch then runs its members one at a time.
    const failing = delivery([
      item('apply', async () => {
        await hurriedAnswered;
        throw new Error('downstream refused');
      }),
    ]);
    try {
      const heldAnswer = committer.submit(held);
      const hurriedAnswer = committer.submit(hurried);
      hurriedAnswered = hurriedAnswer.catch(() => undefined);
      const failingAnswer = committer.submit(failing);
      hold.resolve();
      await heldAnswer;
      await expect(hurriedAnswer).rejects.toMatchObject({ code: 'unavailable' });
      await expect(failingAnswer).rejects.toMatchObject({ code: 'processing_failed', attempt: 1 });
      // The held batch, the failed batch, and the failing member alone: the hurried one gets none.
      expect(transaction).toHaveBeenCalledTimes(3);
      expect(await eventRow(sql, idsOf(hurried)[0] ?? '')).toBeUndefined();
      expect(await eventRow(sql, idsOf(failing)[0] ?? '')).toMatchObject({ status: 'failed', attempt_count: 1 });
    } finally {
      transaction.mockRestore();
      hold.resolve();
      for (const s of [held, hurried, failing]) s.deadline.clear();
    }
  });

  it('runs a batch in a transaction when any event of any member has a handler to run now', async () => {
    const committer = new IntakeCommitter(db, { maxBatch: 8, lanes: 1 });
    const applied: string[] = [];
    const hold = deferred();
    const held = delivery([item('apply', () => hold.promise)]);
    // A member with nothing to apply, then a sender's batch whose first event is ignored and second applied.
    const ignoredOnly = delivery([item('ignore')]);
    const applying = item('apply', async () => void applied.push('applied'));
    const mixed = delivery([item('ignore'), applying]);
    try {
      const answers = [held, ignoredOnly, mixed].map((s) => committer.submit(s));
      hold.resolve();
      const [, first, second] = await Promise.all(answers);
      expect(first).toEqual([{ outcome: 'ignored', attempt: 1 }]);
      expect(second).toEqual([
        { outcome: 'ignored', attempt: 1 },
        { outcome: 'completed', attempt: 1 },
      ]);
      expect(applied).toEqual(['applied']);
      expect(await eventRow(sql, applying.event.eventId)).toMatchObject({ status: 'completed' });
    } finally {
      hold.resolve();
      for (const s of [held, ignoredOnly, mixed]) s.deadline.clear();
    }
  });
});
