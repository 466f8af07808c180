// The outbox's operational surface below the CLI: the metrics hook's three numbers, an operator
// retry followed by a drain that delivers, and the configuration rule that keeps the lease above
// the publish timeout.
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfig } from '../src/config.ts';
import { connectDatabase } from '../src/db/client.ts';
import { isMessageId, retryDeadMessages } from '../src/outbox/operator.ts';
import { outboxStats, outboxStatsOf } from '../src/outbox/stats.ts';
import { useTestDatabase } from './helpers/database.ts';
import { buildTestRelay, insertMessages, operatorActionRows, outboxRow } from './helpers/outbox.ts';
import { startSink } from './helpers/sink.ts';

const { db, sql } = await useTestDatabase();
const sink = await startSink();

describe('outboxStats', () => {
  it('is all zeros on an empty outbox', async () => {
    expect(await outboxStats(db, Date.now())).toEqual({ pending: 0, oldestPendingAgeSeconds: 0, dead: 0 });
  });

  it('counts pending and dead messages and ages the oldest pending one from its creation', async () => {
    const now = Date.now();
    await insertMessages(sql, 3, { createdAt: new Date(now - 120_000) });
    await insertMessages(sql, 2, { createdAt: new Date(now - 10_000) });
    await insertMessages(sql, 4, { status: 'dead', createdAt: new Date(now - 999_000) });
    await insertMessages(sql, 5, { status: 'published', createdAt: new Date(now - 999_000) });

    expect(await outboxStats(db, now)).toEqual({ pending: 5, oldestPendingAgeSeconds: 120, dead: 4 });
    await sql`delete from outbox_messages`;
  });

  it('reads no row (the overview without its outbox figures) as all zeros', () => {
    expect(outboxStatsOf(undefined, Date.now())).toEqual({ pending: 0, oldestPendingAgeSeconds: 0, dead: 0 });
  });
});

describe('operator retry, then the relay', () => {
  it('a retried dead message is delivered by the next drain', async () => {
    const [id] = (await insertMessages(sql, 1, { status: 'dead', attempts: 10 })) as [string];
    const relay = buildTestRelay(db, { target: sink.url });
    expect((await relay.relay.drain()).claimed).toBe(0);

    const result = await retryDeadMessages(db, {
      ids: [id.toUpperCase()],
      operator: 'ops',
      now: new Date(relay.now()),
    });
    expect(result).toEqual({ kind: 'retried', ids: [id], skipped: [] });
    expect(await operatorActionRows(sql, id)).toHaveLength(1);

    expect((await relay.relay.drain()).published).toBe(1);
    expect(await outboxRow(sql, id)).toMatchObject({ status: 'published', attempts: 0 });
    expect(sink.requests.map((request) => request.messageId)).toEqual([id]);
  });
});

describe('retryDeadMessages', () => {
  it('changes nothing and names the unknown ids when any id is unknown', async () => {
    const [dead] = (await insertMessages(sql, 1, { status: 'dead', attempts: 10 })) as [string];
    const unknown = randomUUID();
    expect(await retryDeadMessages(db, { ids: [dead, unknown], operator: 'ops', now: new Date() })).toEqual({
      kind: 'not_found',
      ids: [unknown],
    });
    expect(await outboxRow(sql, dead)).toMatchObject({ status: 'dead', attempts: 10 });
    expect(await operatorActionRows(sql, dead)).toEqual([]);
    // Beside a known message that is not dead too.
    const [pending] = (await insertMessages(sql, 1)) as [string];
    expect(await retryDeadMessages(db, { ids: [dead, pending, unknown], operator: 'ops', now: new Date() })).toEqual({
      kind: 'not_found',
      ids: [unknown],
    });
    expect(await outboxRow(sql, dead)).toMatchObject({ status: 'dead', attempts: 10 });
  });

  it('throws a failure of the database as it is', async () => {
    const unreachable = connectDatabase({
      url: 'postgres://nobody@127.0.0.1:1/none',
      maxConnections: 1,
      statementTimeoutMs: 1000,
    });
    try {
      await expect(
        retryDeadMessages(unreachable.db, { ids: [randomUUID()], operator: 'ops', now: new Date() }),
      ).rejects.toThrow();
    } finally {
      await unreachable.close();
    }
  });

  it('retries the dead ones, skips the others with their status, and audits each retry with its job', async () => {
    const [dead] = (await insertMessages(sql, 1, { status: 'dead', attempts: 10 })) as [string];
    const [pending] = (await insertMessages(sql, 1)) as [string];
    const job = randomUUID();
    const now = new Date();
    expect(
      await retryDeadMessages(db, { ids: [dead, pending, dead.toUpperCase()], operator: 'ops', now, jobId: job }),
    ).toEqual({
      kind: 'retried',
      ids: [dead],
      skipped: [{ id: pending, status: 'pending' }],
    });
    expect(await operatorActionRows(sql, dead)).toMatchObject([
      { operator: 'ops', action: 'retry', target_kind: 'outbox', before_status: 'dead', after_status: 'pending' },
    ]);
    expect(await sql`select job_id from operator_actions where target = ${dead}`).toEqual([{ job_id: job }]);
    expect(await operatorActionRows(sql, pending)).toEqual([]);

    // Without a job: none recorded. Nothing dead among the ids: no audit row, nothing written.
    await sql`update outbox_messages set status = 'dead' where id = ${dead}`;
    await retryDeadMessages(db, { ids: [dead], operator: 'ops', now });
    expect(await sql`select job_id from operator_actions where target = ${dead} order by job_id nulls last`).toEqual([
      { job_id: job },
      { job_id: null },
    ]);
    expect(await retryDeadMessages(db, { ids: [pending], operator: 'ops', now })).toEqual({
      kind: 'retried',
      ids: [],
      skipped: [{ id: pending, status: 'pending' }],
    });
  });

  it('takes a message id in any case, and nothing else', () => {
    const id = randomUUID();
    expect(isMessageId(id)).toBe(true);
    expect(isMessageId(id.toUpperCase())).toBe(true);
    expect(isMessageId(`${id}0`)).toBe(false);
    expect(isMessageId(`x${id}`)).toBe(false);
    expect(isMessageId('not-an-id')).toBe(false);
  });
});

describe('configuration', () => {
  it('refuses a publish timeout that the lease would not cover', () => {
    expect(() => parseConfig({ OUTBOX_TIMEOUT_MS: '30000', OUTBOX_LEASE_MS: '30000' })).toThrow(ConfigError);
    expect(() => parseConfig({ OUTBOX_TIMEOUT_MS: '30000' })).toThrow(
      /OUTBOX_TIMEOUT_MS: must be below OUTBOX_LEASE_MS/,
    );
    expect(parseConfig({ OUTBOX_TIMEOUT_MS: '29999' }).OUTBOX_TIMEOUT_MS).toBe(29999);
  });
});
