// The relay against real PostgreSQL and a real HTTP sink: what a drain claims, publishes and records
// for each class of answer; backoff, Retry-After and dead letters on an injected clock; leases,
// budgets and two relays draining at once. One test is a performance guard, read from
// pg_prepared_statements: the claim and outcome statements are prepared once per connection.
import { sql as statement } from 'drizzle-orm';
import { afterEach, describe, expect, it } from 'vitest';
import { connectDatabase } from '../src/db/client.ts';
import { fetchPost, httpPublisher, type Publisher } from '../src/outbox/publishers/publisher.ts';
import {
  DEFAULT_BATCH_SIZE,
  DEFAULT_BATCHES_IN_FLIGHT,
  DEFAULT_BUDGET_MS,
  DEFAULT_CONCURRENCY,
  OUTAGE_PROBE_MAX_MS,
  relaySettings,
} from '../src/outbox/relay.ts';
import { undiciPost } from '../src/outbox/undici-post.ts';
import { uniqueId } from './helpers/acme.ts';
import { cuttableLink } from './helpers/brokers.ts';
import { useTestDatabase } from './helpers/database.ts';
import { barrier, deferred } from './helpers/facts.ts';
import {
  buildTestRelay,
  documentedTransportKey,
  hostileKeys,
  insertMessages,
  outboxRow,
  outboxRows,
} from './helpers/outbox.ts';
import { refusingUrl, type SinkAnswer, startSink } from './helpers/sink.ts';
import { OUTAGE_PROBES, publishAcrossOutage } from './shared/broker-outages.ts';

const database = await useTestDatabase();
const { db, sql } = database;
const sink = await startSink();

afterEach(async () => {
  // Tests share this file's database: no message may wait around to be claimed by the next test,
  // and no circuit an outage opened may hold the next test's relay back.
  await sql`delete from outbox_messages`;
  await sql`delete from outbox_destinations`;
  sink.requests.length = 0;
  sink.overlaps.length = 0;
  sink.respond(() => ({ status: 200, body: '{}' }));
});

const ms = (date: Date | null | undefined) => date?.getTime();
type PublishOutcomeUnavailable = { outcome: 'unavailable'; error: string };

describe('a drain', () => {
  it('publishes due messages oldest first, records published_at and leaves attempts at 0', async () => {
    const ids = await insertMessages(sql, 3);
    const test = buildTestRelay(db, { target: sink.url, settings: { concurrency: 1 } });

    const summary = await test.relay.drain();

    expect(summary).toMatchObject({ claimed: 3, published: 3, retried: 0, dead: 0, released: 0, stoppedBy: 'drained' });
    expect(sink.requests.map((request) => request.messageId)).toEqual(ids);
    for (const row of await outboxRows(sql, ids)) {
      expect(row).toMatchObject({ status: 'published', attempts: 0, last_error: null, locked_by: null });
      expect(ms(row.published_at)).toBe(test.now());
      expect(row.locked_until).toBeNull();
    }
    expect((await test.relay.drain()).claimed).toBe(0);
    expect(sink.requests).toHaveLength(3);
  });

  it('publishes oldest first whatever order the rows were written in', async () => {
    const written = Date.now();
    const [newer] = await insertMessages(sql, 1, { createdAt: new Date(written - 30_000) });
    const [older] = await insertMessages(sql, 1, { createdAt: new Date(written - 60_000) });
    const test = buildTestRelay(db, { target: sink.url, settings: { concurrency: 1 } });

    expect(await test.relay.drain()).toMatchObject({ claimed: 2, published: 2 });
    expect(sink.requests.map((request) => request.messageId)).toEqual([older, newer]);
  });

  it('leaves messages that are not due yet', async () => {
    const [later] = await insertMessages(sql, 1, { availableAt: new Date(Date.now() + 60_000) });
    const test = buildTestRelay(db, { target: sink.url });
    expect((await test.relay.drain()).claimed).toBe(0);
    test.advance(60_000);
    expect((await test.relay.drain()).published).toBe(1);
    expect((await outboxRow(sql, later as string))?.status).toBe('published');
  });

  it('loops while batches come back full', async () => {
    await insertMessages(sql, 7);
    const test = buildTestRelay(db, { target: sink.url, settings: { batchSize: 3 } });
    expect(await test.relay.drain()).toMatchObject({ claimed: 7, published: 7, batches: 3, stoppedBy: 'drained' });
  });

  it('stops at its time budget and leaves the rest for the next pass', async () => {
    await insertMessages(sql, 5);
    const test = buildTestRelay(db, {
      settings: { batchSize: 1, budgetMs: 1500 },
      publisher: {
        kind: 'slow',
        publish: async () => {
          test.advance(1000);
          return { outcome: 'published' };
        },
      },
    });
    expect(await test.relay.drain()).toMatchObject({ claimed: 2, published: 2, batches: 2, stoppedBy: 'budget' });
    const rows = await outboxRows(sql);
    expect(rows.filter((row) => row.status === 'pending')).toHaveLength(3);
    expect(rows.every((row) => row.locked_by === null)).toBe(true);
  });

  it('gives back, uncounted, a claimed message its lease would no longer cover', async () => {
    const ids = await insertMessages(sql, 3);
    const test = buildTestRelay(db, {
      settings: { leaseMs: 1000, timeoutMs: 700, concurrency: 1 },
      publisher: {
        kind: 'slow',
        publish: async () => {
          test.advance(400);
          return { outcome: 'published' };
        },
      },
    });
    // 0 + 700 < 1000: the first starts; at 400, 400 + 700 passes the lease: the others go back.
    expect(await test.relay.drain()).toMatchObject({ claimed: 3, published: 1, released: 2 });
    const [first, ...others] = await outboxRows(sql, ids);
    expect(first?.status).toBe('published');
    for (const row of others) {
      expect(row).toMatchObject({ status: 'pending', attempts: 0, locked_by: null, locked_until: null });
      expect(ms(row.available_at)).toBeLessThan(test.now());
    }
  });

  it('stops starting publishes once its signal aborts (shutdown), giving the rest back', async () => {
    await insertMessages(sql, 3);
    const stop = new AbortController();
    const test = buildTestRelay(db, {
      settings: { concurrency: 1 },
      publisher: {
        kind: 'stopping',
        publish: async () => {
          stop.abort();
          return { outcome: 'published' };
        },
      },
    });
    expect(await test.relay.drain({ signal: stop.signal })).toMatchObject({ claimed: 3, published: 1, released: 2 });
    const rows = await outboxRows(sql);
    expect(rows.filter((row) => row.status === 'pending' && row.attempts === 0 && row.locked_by === null)).toHaveLength(
      2,
    );
  });

  it('claims the next batch while the one before is publishing, at most batchesInFlight at once', async () => {
    const ids = await insertMessages(sql, 8);
    let publishing = 0;
    let most = 0;
    // The first four publishes wait for one another: the first batch is still publishing when the
    // second is claimed, however long a claim takes on a busy machine. Later ones go straight through.
    const firstFour = barrier(4);
    let started = 0;
    const test = buildTestRelay(db, {
      settings: { batchSize: 2, batchesInFlight: 2 },
      publisher: {
        kind: 'slow',
        pipelined: true,
        publish: async () => {
          started += 1;
          publishing += 1;
          most = Math.max(most, publishing);
          if (started <= 4) await firstFour();
          publishing -= 1;
          return { outcome: 'published' };
        },
      },
    });
    // Four full batches, then one that finds nothing.
    expect(await test.relay.drain()).toMatchObject({ claimed: 8, published: 8, batches: 5, stoppedBy: 'drained' });
    // Two batches of two, each published whole.
    expect(most).toBe(4);
    const rows = await outboxRows(sql, ids);
    expect(rows.every((row) => row.status === 'published' && row.locked_by === null)).toBe(true);
  });

  it('holds a publisher that does not pipeline to `concurrency` calls across the batches in flight', async () => {
    await insertMessages(sql, 12);
    let calls = 0;
    let most = 0;
    const test = buildTestRelay(db, {
      settings: { batchSize: 4, batchesInFlight: 3, concurrency: 2 },
      publisher: {
        kind: 'one-at-a-time',
        publish: async () => {
          calls += 1;
          most = Math.max(most, calls);
          await new Promise((resolve) => setTimeout(resolve, 5));
          calls -= 1;
          return { outcome: 'published' };
        },
      },
    });
    expect(await test.relay.drain()).toMatchObject({ claimed: 12, published: 12 });
    expect(most).toBe(2);
  });

  it('stops at a failed outcome write, after the batches already in flight are done', async () => {
    await insertMessages(sql, 6);
    const failing = connectDatabase({ url: database.url, maxConnections: 2, statementTimeoutMs: 10_000 });
    let published = 0;
    const test = buildTestRelay(failing.db, {
      settings: { batchSize: 2, batchesInFlight: 2 },
      publisher: {
        kind: 'then-the-database-goes',
        pipelined: true,
        publish: async () => {
          published += 1;
          // The database goes away while the first batch publishes: its outcomes cannot be written.
          if (published === 1) await failing.close();
          return { outcome: 'published' };
        },
      },
    });
    await expect(test.relay.drain()).rejects.toThrow();
    // Nothing recorded: every row is still pending under the lease, to be published again once it expires.
    const rows = await outboxRows(sql);
    expect(rows.filter((row) => row.status === 'published')).toEqual([]);
  });

  it('prepares its claim and its outcome statements once per connection, whatever the batch', async () => {
    await insertMessages(sql, 7);
    const single = connectDatabase({ url: database.url, maxConnections: 1, statementTimeoutMs: 10_000 });
    try {
      let calls = 0;
      const test = buildTestRelay(single.db, {
        settings: { batchSize: 3 },
        publisher: {
          kind: 'one-refusal',
          publish: async () => {
            calls += 1;
            return calls === 2 ? { outcome: 'retry', error: 'http 503' } : { outcome: 'published' };
          },
        },
      });
      expect(await test.relay.drain()).toMatchObject({ claimed: 7, published: 6, retried: 1, batches: 3 });
      const prepared = await single.db.execute<{ statement: string }>(
        statement`select statement from pg_prepared_statements where statement like 'update "outbox_messages"%'`,
      );
      // The claim, the published ids, the other outcomes: three statements for three batches.
      expect(prepared).toHaveLength(3);
    } finally {
      await single.close();
    }
  });

  it('publishes with the log publisher when no target is set, without logging the payload', async () => {
    const [id] = await insertMessages(sql, 1, { payload: { email: 'someone@example.com' } });
    const test = buildTestRelay(db);
    expect((await test.relay.drain()).published).toBe(1);
    expect((await outboxRow(sql, id as string))?.status).toBe('published');
    const line = test.logs.map((text) => JSON.parse(text)).find((entry) => entry.message_id === id);
    expect(line).toMatchObject({ level: 'info', topic: 'subscription.changed' });
    expect(test.logs.join('\n')).not.toContain('someone@example.com');
  });
});

describe.each([
  { transport: 'fetch', post: fetchPost },
  { transport: 'undici', post: undiciPost },
])('answers and failures over $transport', ({ post }) => {
  it('POSTs the contract body with Idempotency-Key and the topic', async () => {
    const [id] = (await insertMessages(sql, 1, { payload: { external_id: 'sub_1' } })) as [string];
    await buildTestRelay(db, { target: sink.url, post }).relay.drain();
    const row = await outboxRow(sql, id);
    const [request] = sink.requests;
    expect(request?.method).toBe('POST');
    expect(request?.headers).toMatchObject({
      'content-type': 'application/json',
      'idempotency-key': row?.deduplication_key,
      'outbox-topic': 'subscription.changed',
    });
    expect(request?.body).toBe(
      JSON.stringify({
        id,
        topic: 'subscription.changed',
        deduplication_key: row?.deduplication_key,
        payload: { external_id: 'sub_1' },
        created_at: row?.created_at.toISOString(),
      }),
    );
  });

  it('publishes hostile event ids: Idempotency-Key in the documented form, the exact key in the body', async () => {
    const keys = hostileKeys(uniqueId('evt'));
    await insertMessages(sql, keys.length, { keys });
    expect(await buildTestRelay(db, { target: sink.url, post }).relay.drain()).toMatchObject({
      published: keys.length,
      retried: 0,
      dead: 0,
    });
    expect(sink.requests).toHaveLength(keys.length);
    for (const key of keys) {
      const request = sink.requests.find((candidate) => JSON.parse(candidate.body).deduplication_key === key);
      expect(request?.headers['idempotency-key'], key).toBe(documentedTransportKey(key));
    }
  });

  it('publishes on a 2xx whatever the size of the answer body', async () => {
    const ids = await insertMessages(sql, 3);
    sink.respond((_request, index) => ({
      status: [200, 201, 204][index] ?? 200,
      body: index === 0 ? 'x'.repeat(1 << 20) : '',
    }));
    const test = buildTestRelay(db, { target: sink.url, post, settings: { concurrency: 1 } });
    expect(await test.relay.drain()).toMatchObject({ published: 3 });
    for (const row of await outboxRows(sql, ids)) expect(row.status).toBe('published');
  });

  it('a failing target that recovers: attempts count failures, backoff grows with full jitter', async () => {
    const [id] = (await insertMessages(sql, 1)) as [string];
    const test = buildTestRelay(db, { target: sink.url, post });
    test.setRandom(0.5);
    sink.respond((_request, index) => (index < 2 ? { status: 503, body: 'down' } : { status: 200 }));

    await test.relay.drain();
    let row = await outboxRow(sql, id);
    expect(row).toMatchObject({ status: 'pending', attempts: 1, last_error: 'http 503: down', locked_by: null });
    // 0.5 of min(60 s, 1 s * 2^0)
    expect(ms(row?.available_at)).toBe(test.now() + 500);

    test.advance(499);
    expect((await test.relay.drain()).claimed).toBe(0);
    test.advance(1);
    await test.relay.drain();
    row = await outboxRow(sql, id);
    expect(row).toMatchObject({ status: 'pending', attempts: 2 });
    // 0.5 of 1 s * 2^1
    expect(ms(row?.available_at)).toBe(test.now() + 1000);

    test.advance(1000);
    expect((await test.relay.drain()).published).toBe(1);
    row = await outboxRow(sql, id);
    expect(row).toMatchObject({ status: 'published', attempts: 2 });
    expect(sink.requests.map((request) => request.headers['idempotency-key'])).toEqual(
      Array(3).fill(row?.deduplication_key),
    );
  });

  it('honours Retry-After in seconds and as an HTTP date, up to the cap', async () => {
    const test = buildTestRelay(db, { target: sink.url, post, settings: { backoff: { baseMs: 1000, maxMs: 60_000 } } });
    const date = new Date(test.now() + 45_000).toUTCString();
    const answers: Record<string, SinkAnswer> = {};
    const [inSeconds, asDate, tooLong] = (await insertMessages(sql, 3)) as [string, string, string];
    answers[inSeconds] = { status: 429, headers: { 'retry-after': '30' } };
    answers[asDate] = { status: 503, headers: { 'retry-after': date } };
    answers[tooLong] = { status: 503, headers: { 'retry-after': '86400' } };
    sink.respond((request) => answers[request.messageId ?? ''] ?? { status: 200 });

    expect(await test.relay.drain()).toMatchObject({ retried: 3 });
    expect(ms((await outboxRow(sql, inSeconds))?.available_at)).toBe(test.now() + 30_000);
    expect(ms((await outboxRow(sql, asDate))?.available_at)).toBe(Date.parse(date));
    expect(ms((await outboxRow(sql, tooLong))?.available_at)).toBe(test.now() + 60_000);
    expect((await outboxRow(sql, tooLong))?.last_error).toBe('http 503');
  });

  it('dead-letters a 4xx about the message at once, keeping what it said with its credential redacted', async () => {
    const statuses = [400, 410, 413, 415, 422];
    const ids = await insertMessages(sql, statuses.length);
    sink.respond((request) => ({
      status: statuses[ids.indexOf(request.messageId ?? '')] ?? 200,
      body: 'rejected: token=sk_live_secret',
    }));
    const test = buildTestRelay(db, { target: sink.url, post });

    expect(await test.relay.drain()).toMatchObject({ dead: statuses.length });
    const rows = await outboxRows(sql, ids);
    expect(rows.map((row) => [row.status, row.attempts, row.last_error])).toEqual(
      statuses.map((status) => ['dead', 1, `http ${status}: rejected: token=[redacted]`]),
    );
    expect(test.logs.join('\n')).not.toContain('sk_live_secret');

    test.advance(3_600_000);
    expect((await test.relay.drain()).claimed).toBe(0);
    expect(sink.requests).toHaveLength(statuses.length);
  });

  it('retries 408, 409 and 425 like a 5xx', async () => {
    const statuses = [408, 409, 425];
    const ids = await insertMessages(sql, statuses.length);
    sink.respond((request) => ({ status: statuses[ids.indexOf(request.messageId ?? '')] ?? 200 }));
    const test = buildTestRelay(db, { target: sink.url, post });
    expect(await test.relay.drain()).toMatchObject({ retried: statuses.length, dead: 0 });
    for (const row of await outboxRows(sql, ids)) expect(row).toMatchObject({ status: 'pending', attempts: 1 });
  });

  it('does not follow a redirect: a 3xx is a retryable failure', async () => {
    const [id] = (await insertMessages(sql, 1)) as [string];
    sink.respond((request) =>
      request.path === '/moved' ? { status: 200 } : { status: 307, headers: { location: '/moved' } },
    );
    const test = buildTestRelay(db, { target: sink.url, post });
    expect(await test.relay.drain()).toMatchObject({ retried: 1 });
    expect(sink.requests.map((request) => request.path)).toEqual(['/outbox']);
    expect(await outboxRow(sql, id)).toMatchObject({ status: 'pending', attempts: 1, last_error: 'http 307' });
  });

  it('gives up after OUTBOX_MAX_ATTEMPTS failed publishes', async () => {
    const [id] = (await insertMessages(sql, 1)) as [string];
    sink.respond(() => ({ status: 500 }));
    const test = buildTestRelay(db, { target: sink.url, post, settings: { maxAttempts: 3 } });
    for (let pass = 0; pass < 5; pass++) {
      await test.relay.drain();
      test.advance(60_000);
    }
    expect(await outboxRow(sql, id)).toMatchObject({ status: 'dead', attempts: 3, last_error: 'http 500' });
    expect(sink.requests).toHaveLength(3);
    const dead = test.logs.map((line) => JSON.parse(line)).find((line) => line.msg === 'outbox message dead');
    expect(dead).toMatchObject({ level: 'error', alert: true, message_id: id, attempts: 3 });
  });

  it('records a timeout when the target does not answer within OUTBOX_TIMEOUT_MS', async () => {
    const [id] = (await insertMessages(sql, 1)) as [string];
    const release = sink.hold();
    const test = buildTestRelay(db, { target: sink.url, post, settings: { timeoutMs: 300 } });
    try {
      expect(await test.relay.drain()).toMatchObject({ retried: 1 });
      expect(await outboxRow(sql, id)).toMatchObject({ status: 'pending', attempts: 1, last_error: 'timeout' });
    } finally {
      release();
    }
  });

  it('records a refused connection by its code and address, and counts no attempt: the target is out of reach', async () => {
    const [id] = (await insertMessages(sql, 1)) as [string];
    const target = await refusingUrl();
    const test = buildTestRelay(db, { target, post });
    expect(await test.relay.drain()).toMatchObject({ unavailable: 1, retried: 0, stoppedBy: 'unavailable' });
    expect(await outboxRow(sql, id)).toMatchObject({
      status: 'pending',
      attempts: 0,
      last_error: `network ECONNREFUSED 127.0.0.1:${new URL(target).port}`,
    });
  });

  it('does not retry a message twice within one pass, even with a zero delay', async () => {
    const ids = await insertMessages(sql, 3);
    sink.respond(() => ({ status: 503, headers: { 'retry-after': '0' } }));
    const test = buildTestRelay(db, { target: sink.url, post, settings: { batchSize: 1, maxAttempts: 10 } });
    test.setRandom(0);
    expect(await test.relay.drain()).toMatchObject({ claimed: 3, retried: 3, stoppedBy: 'drained' });
    for (const row of await outboxRows(sql, ids)) expect(row.attempts).toBe(1);
  });

  it('treats a publisher that throws as a retryable failure named by class only: pending, never dead', async () => {
    const [id] = (await insertMessages(sql, 1)) as [string];
    const broken: Publisher = {
      kind: 'broken',
      publish: async () => {
        throw new RangeError('payload says card 4242');
      },
    };
    await buildTestRelay(db, { publisher: broken }).relay.drain();
    expect(await outboxRow(sql, id)).toMatchObject({
      status: 'pending',
      attempts: 1,
      last_error: 'publisher RangeError',
      published_at: null,
    });
  });
});

describe('relaySettings', () => {
  const config = {
    OUTBOX_MAX_ATTEMPTS: 9,
    OUTBOX_BACKOFF_BASE_MS: 2000,
    OUTBOX_BACKOFF_MAX_MS: 3_600_000,
    OUTBOX_LEASE_MS: 60_000,
    OUTBOX_TIMEOUT_MS: 5000,
  };

  it('takes attempts, backoff, lease and timeout from the configuration, the rest from the defaults', () => {
    expect(relaySettings(config)).toEqual({
      maxAttempts: 9,
      backoff: { baseMs: 2000, maxMs: 3_600_000 },
      leaseMs: 60_000,
      timeoutMs: 5000,
      batchSize: DEFAULT_BATCH_SIZE,
      concurrency: DEFAULT_CONCURRENCY,
      batchesInFlight: DEFAULT_BATCHES_IN_FLIGHT,
      budgetMs: DEFAULT_BUDGET_MS,
      // A message waits up to an hour; the relay probes an unreachable target far more often.
      outageBackoff: { baseMs: 2000, maxMs: OUTAGE_PROBE_MAX_MS },
    });
    expect(relaySettings(config, { concurrency: 1 })).toMatchObject({ concurrency: 1, maxAttempts: 9 });
  });

  it('probes no later than the backoff a message would wait, when that is the shorter', () => {
    expect(relaySettings({ ...config, OUTBOX_BACKOFF_MAX_MS: 10_000 }).outageBackoff).toEqual({
      baseMs: 2000,
      maxMs: 10_000,
    });
  });
});

describe('a drain as a whole', () => {
  const logged = (test: { logs: string[] }, message: string) =>
    test.logs.map((line) => JSON.parse(line) as Record<string, unknown>).filter((line) => line.msg === message);

  it('sums itself up in its summary and one `outbox drained` line, its time on the relay clock', async () => {
    await insertMessages(sql, 3);
    const test = buildTestRelay(db, {
      settings: { concurrency: 1 },
      publisher: {
        kind: 'slow',
        publish: async () => {
          test.advance(250);
          return { outcome: 'published' };
        },
      },
    });
    const summary = await test.relay.drain();
    expect(summary).toMatchObject({ claimed: 3, published: 3, batches: 1, stoppedBy: 'drained', elapsedMs: 750 });
    expect(logged(test, 'outbox drained')).toEqual([expect.objectContaining({ ...summary, relay: test.relay.id })]);

    // A drain that found nothing says nothing.
    expect(await test.relay.drain()).toMatchObject({ claimed: 0, batches: 1, elapsedMs: 0 });
    expect(logged(test, 'outbox drained')).toHaveLength(1);
  });

  it('starts no publish once its budget is spent, to the millisecond: the rest go back uncounted', async () => {
    const ids = await insertMessages(sql, 3);
    const test = buildTestRelay(db, {
      settings: { concurrency: 1, budgetMs: 1000 },
      publisher: {
        kind: 'slow',
        publish: async () => {
          test.advance(1000);
          return { outcome: 'published' };
        },
      },
    });
    expect(await test.relay.drain()).toMatchObject({ claimed: 3, published: 1, released: 2 });
    const [first, ...others] = await outboxRows(sql, ids);
    expect(first?.status).toBe('published');
    for (const row of others) expect(row).toMatchObject({ status: 'pending', attempts: 0, locked_by: null });
  });

  it('hands a pipelining publisher a whole batch at once, under one shared timeout, whatever `concurrency` says', async () => {
    await insertMessages(sql, 3);
    const signals: AbortSignal[] = [];
    let publishing = 0;
    let most = 0;
    const test = buildTestRelay(db, {
      settings: { concurrency: 1 },
      publisher: {
        kind: 'pipelining',
        pipelined: true,
        publish: async (_message, signal) => {
          signals.push(signal);
          publishing += 1;
          most = Math.max(most, publishing);
          await new Promise((resolve) => setImmediate(resolve));
          publishing -= 1;
          return { outcome: 'published' };
        },
      },
    });
    expect(await test.relay.drain()).toMatchObject({ claimed: 3, published: 3 });
    expect(most).toBe(3);
    expect(signals).toHaveLength(3);
    expect(new Set(signals).size).toBe(1);
  });
});

describe("an outage on the relay's clock", () => {
  it('holds every message to the probe time, probes with one, backs off per failed probe, then drains', async () => {
    const ids = await insertMessages(sql, 3);
    let reachable = false;
    const tried: string[] = [];
    const publisher: Publisher = {
      kind: 'switched',
      publish: async (message) => {
        tried.push(message.id);
        return reachable ? { outcome: 'published' } : { outcome: 'unavailable', error: 'network ECONNREFUSED' };
      },
    };
    // Jitter 0.5 of a ceiling that doubles from 1000 ms: 500 ms after the first failure, 1000 after the second.
    const test = buildTestRelay(db, {
      publisher,
      settings: { concurrency: 1, outageBackoff: { baseMs: 1000, maxMs: 8000 } },
    });
    const start = test.now();
    const availableAt = async () => (await outboxRows(sql, ids)).map((row) => [ms(row.available_at), row.attempts]);
    const logged = (message: string) =>
      test.logs.map((line) => JSON.parse(line) as Record<string, unknown>).filter((line) => line.msg === message);

    expect(await test.relay.drain()).toMatchObject({ claimed: 3, published: 0, stoppedBy: 'unavailable' });
    expect(tried).toHaveLength(1);
    expect(await availableAt()).toEqual(ids.map(() => [start + 500, 0]));

    test.setNow(start + 499);
    expect(await test.relay.drain()).toMatchObject({ claimed: 0, batches: 0, stoppedBy: 'unavailable' });
    expect(tried).toHaveLength(1);

    test.setNow(start + 500);
    expect(await test.relay.drain()).toMatchObject({ claimed: 1, stoppedBy: 'unavailable' });
    expect(tried).toHaveLength(2);
    expect((await availableAt()).filter(([at]) => at === start + 1500)).toEqual([[start + 1500, 0]]);
    expect(logged('outbox target unavailable, backing off').map((line) => [line.failed_probes, line.delay_ms])).toEqual(
      [
        [0, 500],
        [1, 1000],
      ],
    );

    test.setNow(start + 1500);
    reachable = true;
    expect(await test.relay.drain()).toMatchObject({ claimed: 3, published: 3, stoppedBy: 'drained' });
    for (const row of await outboxRows(sql, ids)) expect(row).toMatchObject({ status: 'published', attempts: 0 });
    expect(logged('outbox target reachable again').map((line) => line.outage_ms)).toEqual([1500]);
  });
});

describe('an outage, further', () => {
  const logged = (test: { logs: string[] }, message: string) =>
    test.logs.map((line) => JSON.parse(line) as Record<string, unknown>).filter((line) => line.msg === message);
  const down: PublishOutcomeUnavailable = { outcome: 'unavailable', error: 'network ECONNREFUSED' };

  it('counts the publishes that failed together as one failed probe, and holds those still waiting for a lane', async () => {
    const ids = await insertMessages(sql, 3);
    // The first two are both in flight before either answers.
    const bothStarted = deferred();
    let started = 0;
    const test = buildTestRelay(db, {
      settings: { concurrency: 2, outageBackoff: { baseMs: 1000, maxMs: 8000 } },
      publisher: {
        kind: 'down',
        publish: async () => {
          started += 1;
          if (started === 2) bothStarted.resolve();
          await bothStarted.promise;
          return down;
        },
      },
    });
    const start = test.now();
    expect(await test.relay.drain()).toMatchObject({
      claimed: 3,
      unavailable: 3,
      published: 0,
      released: 0,
      stoppedBy: 'unavailable',
    });
    expect(started).toBe(2);
    // One failure of the outage: jitter 0.5 of the first ceiling (1000 ms), for all three.
    expect(
      logged(test, 'outbox target unavailable, backing off').map((line) => [line.failed_probes, line.delay_ms]),
    ).toEqual([[0, 500]]);
    for (const row of await outboxRows(sql, ids)) {
      expect(row).toMatchObject({ status: 'pending', attempts: 0, locked_by: null });
      expect(ms(row.available_at)).toBe(start + 500);
    }
  });

  it('caps its own backoff at OUTAGE_PROBE_MAX_MS when its settings give none, however patient a message is', async () => {
    const ids = await insertMessages(sql, 1);
    const test = buildTestRelay(db, {
      settings: { backoff: { baseMs: 40_000, maxMs: 3_600_000 } },
      publisher: { kind: 'down', publish: async () => down },
    });
    const start = test.now();
    expect(await test.relay.drain()).toMatchObject({ unavailable: 1, stoppedBy: 'unavailable' });
    // Jitter 0.5 of min(40 s, 30 s).
    expect(ms((await outboxRows(sql, ids))[0]?.available_at)).toBe(start + OUTAGE_PROBE_MAX_MS / 2);
  });

  it('holds a message past the cut-off of the pass even when the clock stepped back during it', async () => {
    const ids = await insertMessages(sql, 1);
    const test = buildTestRelay(db, {
      settings: { outageBackoff: { baseMs: 1000, maxMs: 8000 } },
      publisher: {
        kind: 'down',
        publish: async () => {
          test.advance(-10_000);
          return down;
        },
      },
    });
    const start = test.now();
    expect(await test.relay.drain()).toMatchObject({ unavailable: 1, stoppedBy: 'unavailable' });
    // The probe time (500 ms after a clock 10 s back) is before the pass began: not due again in it.
    expect(ms((await outboxRows(sql, ids))[0]?.available_at)).toBe(start + 1);
  });

  it('counts a failed probe as the batch of its drain, and claims nothing after it', async () => {
    await insertMessages(sql, 3);
    const test = buildTestRelay(db, {
      settings: { outageBackoff: { baseMs: 1000, maxMs: 8000 } },
      publisher: { kind: 'down', publish: async () => down },
    });
    const start = test.now();
    await test.relay.drain();
    test.setNow(start + 500);
    expect(await test.relay.drain()).toMatchObject({
      claimed: 1,
      unavailable: 1,
      batches: 1,
      stoppedBy: 'unavailable',
    });
  });

  it('counts an answered probe as a batch, then drains the rest within what is left of the budget', async () => {
    const ids = await insertMessages(sql, 3);
    let reachable = false;
    const test = buildTestRelay(db, {
      settings: { budgetMs: 1000, outageBackoff: { baseMs: 1000, maxMs: 8000 } },
      publisher: {
        kind: 'switched',
        publish: async () => (reachable ? { outcome: 'published' } : down),
      },
    });
    const start = test.now();
    await test.relay.drain();
    test.setNow(start + 500);
    reachable = true;
    // The probe, then the other two in one batch.
    expect(await test.relay.drain()).toMatchObject({ claimed: 3, published: 3, batches: 2, stoppedBy: 'drained' });
    for (const row of await outboxRows(sql, ids)) expect(row.status).toBe('published');
  });

  it("spends the probe's time from the drain's budget: a probe that took all of it ends the drain", async () => {
    const ids = await insertMessages(sql, 3);
    let reachable = false;
    const test = buildTestRelay(db, {
      settings: { budgetMs: 1000, outageBackoff: { baseMs: 1000, maxMs: 8000 } },
      publisher: {
        kind: 'slow-to-answer',
        publish: async () => {
          if (!reachable) return down;
          test.advance(1000);
          return { outcome: 'published' };
        },
      },
    });
    const start = test.now();
    await test.relay.drain();
    test.setNow(start + 500);
    reachable = true;
    expect(await test.relay.drain()).toMatchObject({ claimed: 1, published: 1, batches: 1, stoppedBy: 'budget' });
    const rows = await outboxRows(sql, ids);
    expect(rows.filter((row) => row.status === 'pending')).toHaveLength(2);
  });
});

describe('an HTTP target out of reach far longer than the backoff (through a proxy the test cuts)', () => {
  it('costs no message an attempt, and the sink gets every one once when it is back', async () => {
    const link = await cuttableLink(Number(new URL(sink.url).port));
    const { probes } = await publishAcrossOutage(database, {
      publisher: httpPublisher({ url: `http://127.0.0.1:${link.port}/outbox`, clock: Date.now, post: undiciPost }),
      outage: link,
      consume: async () => sink.requests.map((request) => String(request.headers['idempotency-key'])),
      lastError: /^network (ECONNREFUSED|ECONNRESET)( 127\.0\.0\.1:\d+)?$/,
    });
    expect(probes).toBeGreaterThanOrEqual(OUTAGE_PROBES);
  });
});

describe('two relays draining at once', () => {
  it('never hold one message together, and the sink gets every message exactly once', async () => {
    const count = 400;
    const ids = await insertMessages(sql, count);
    // Separate pools: the relays meet only in the database, as two processes would.
    const other = connectDatabase({ url: database.url, maxConnections: 4, statementTimeoutMs: 10_000 });
    try {
      sink.respond(async () => {
        await new Promise((resolve) => setTimeout(resolve, Math.random() * 3));
        return { status: 200 };
      });
      const settings = { batchSize: 25, concurrency: 8 };
      const first = buildTestRelay(db, { target: sink.url, settings, id: 'relay-a' });
      const second = buildTestRelay(other.db, { target: sink.url, settings, id: 'relay-b' });
      const [a, b] = await Promise.all([first.relay.drain(), second.relay.drain()]);

      expect(a.claimed + b.claimed).toBe(count);
      // Both took part: the split is the database's doing, not one relay finishing before the other began.
      expect(Math.min(a.claimed, b.claimed)).toBeGreaterThan(0);
      expect(a.published + b.published).toBe(count);
      expect(sink.requests).toHaveLength(count);
      expect(new Set(sink.requests.map((request) => request.messageId)).size).toBe(count);
      expect(sink.overlaps).toEqual([]);
      const rows = await outboxRows(sql, ids);
      expect(rows.every((row) => row.status === 'published' && row.attempts === 0 && row.locked_by === null)).toBe(
        true,
      );
    } finally {
      await other.close();
    }
  });
});
