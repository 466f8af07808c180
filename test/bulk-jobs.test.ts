// Bulk actions by filter, as jobs: created through the admin API and the CLI (count first, dry run,
// confirmation), worked through by the runner in batches that survive a crash and a restart (each
// item exactly once, with its audit row), cancelled, and refused with the field named.
import { randomUUID } from 'node:crypto';
import { sql as drizzleSql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defaultHandlers, defineHandler, type HandlerMap } from '../src/domain/handlers.ts';
import { IntakeLoad } from '../src/inbox/intake-load.ts';
import { createLogger } from '../src/lib/logger.ts';
import { type BulkRunnerSettings, createBulkRunner, MAX_BATCH_TIMEOUTS } from '../src/ops/jobs/bulk-runner.ts';
import { bulkJobs } from '../src/ops/maintenance/background-steps.ts';
import { TEST_NOW_MS, uniqueId } from './helpers/acme.ts';
import { buildTestApp } from './helpers/app.ts';
import { runCli } from './helpers/cli.ts';
import { useTestDatabase } from './helpers/database.ts';
import { insertEvent } from './helpers/events.ts';
import { eventRow, subscriptionRow } from './helpers/facts.ts';
import { insertMessages, outboxRows } from './helpers/outbox.ts';
import { patience } from './helpers/patience.ts';
import { cronParts } from './helpers/step-parts.ts';

const { sql, db, url } = await useTestDatabase();
const TOKEN = 'admin-token-for-tests-0123456789';
const test = await buildTestApp(db, { config: { ADMIN_TOKEN: TOKEN } });
const bearer = { authorization: `Bearer ${TOKEN}` };

async function call(path: string, init: RequestInit = {}) {
  const response = await test.request(path, { ...init, headers: { ...bearer, ...init.headers } });
  expect(response.headers.get('content-type')).toMatch(/^application\/json/);
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

const post = (path: string, body: unknown) =>
  call(path, { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });

interface JobAnswer {
  id: string;
  status: string;
  total: number;
  processed: number;
  failed: number;
  filter: Record<string, string>;
}

/** A runner of its own (its owner, its clock), as one process of the service would build it. */
function runner(
  options: {
    owner?: string;
    nowMs?: number;
    clock?: () => number;
    handlers?: HandlerMap;
    settings?: Partial<BulkRunnerSettings>;
  } = {},
) {
  return createBulkRunner({
    db,
    handlers: options.handlers ?? defaultHandlers,
    clock: options.clock ?? (() => options.nowMs ?? TEST_NOW_MS),
    logger: createLogger({ level: 'silent', now: () => new Date(TEST_NOW_MS), write: () => {} }),
    owner: options.owner ?? `test-${randomUUID()}`,
    settings: { pauseMs: 0, ...options.settings },
  });
}

async function jobRow(id: string) {
  const [row] = await sql<
    Array<{ status: string; total: number; processed: number; failed: number; locked_by: string | null }>
  >`select status::text as status, total, processed, failed, locked_by from bulk_jobs where id = ${id}`;
  return row;
}

async function auditRows(jobId: string) {
  return sql<Array<{ action: string; target: string; before_status: string | null; after_status: string | null }>>`
    select action, target, before_status, after_status from operator_actions where job_id = ${jobId} order by at, target`;
}

const createJob = async (body: Record<string, unknown>) => {
  const created = await post('/admin/api/jobs', { operator: 'dana', ...body });
  expect(created.status).toBe(202);
  return created.body.job as JobAnswer;
};

describe('a bulk retry of 500 dead messages', () => {
  it('is interrupted by a crash mid-batch and a restart, and finishes once: each message retried once, audited once', async () => {
    const topic = uniqueId('outage');
    const ids = await insertMessages(sql, 500, { topic, status: 'dead', attempts: 10 });
    const job = await createJob({ kind: 'retry_outbox', filter: { topic } });
    expect(job).toMatchObject({ status: 'queued', total: 500, processed: 0, filter: { topic, status: 'dead' } });

    // The first runner's process dies inside its third batch, after the batch applied its 50 retries
    // and before it committed: the database drops the connection as it records the batch's progress.
    await sql`create sequence crash_once`;
    await sql.unsafe(`create function crash_third_batch() returns trigger language plpgsql as $$
      begin
        if new.processed > 100 and nextval('crash_once') = 1 then
          perform pg_terminate_backend(pg_backend_pid());
        end if;
        return new;
      end $$`);
    await sql`create trigger crash_third_batch before update on bulk_jobs
      for each row execute function crash_third_batch()`;
    try {
      const first = await runner({ owner: 'runner-first' }).run({ budgetMs: 60_000 });
      expect(first).toMatchObject({ batches: 2, items: 100, stoppedBy: 'error' });
    } finally {
      await sql`drop trigger crash_third_batch on bulk_jobs`;
    }
    expect(await jobRow(job.id)).toMatchObject({ status: 'running', processed: 100, locked_by: 'runner-first' });
    const afterCrash = await outboxRows(sql, ids);
    expect(afterCrash.filter((row) => row.status === 'pending')).toHaveLength(100);
    expect((await auditRows(job.id)).filter((row) => row.action === 'retry')).toHaveLength(100);

    // Restarted: while the dead runner's lease lasts nobody takes the job; once it lapses, one does.
    const tooEarly = await runner({ nowMs: TEST_NOW_MS + 1_000 }).run({ budgetMs: 60_000 });
    expect(tooEarly).toMatchObject({ jobs: 0, batches: 0, stoppedBy: 'idle' });
    const second = await runner({ owner: 'runner-second', nowMs: TEST_NOW_MS + 60_000 }).run({ budgetMs: 60_000 });
    expect(second).toMatchObject({ jobs: 1, finished: 1, items: 400, failed: 0, stoppedBy: 'idle' });

    const rows = await outboxRows(sql, ids);
    expect(rows).toHaveLength(500);
    expect(rows.every((row) => row.status === 'pending' && row.attempts === 0)).toBe(true);
    const audit = await auditRows(job.id);
    const items = audit.filter((row) => row.action === 'retry');
    expect(items).toHaveLength(500);
    expect(new Set(items.map((row) => row.target))).toEqual(new Set(ids));
    expect(items.every((row) => row.before_status === 'dead' && row.after_status === 'pending')).toBe(true);
    expect(audit.filter((row) => row.action !== 'retry')).toEqual([
      { action: 'bulk_retry', target: `job/${job.id}`, before_status: null, after_status: 'queued' },
    ]);
    expect(await jobRow(job.id)).toMatchObject({
      status: 'done',
      total: 500,
      processed: 500,
      failed: 0,
      locked_by: null,
    });
    const shown = await call(`/admin/api/jobs/${job.id}`);
    expect(shown.body.job).toMatchObject({ status: 'done', total: 500, processed: 500, failed: 0 });
    expect((shown.body.job as { finished_at: string | null }).finished_at).not.toBeNull();
  });
});

describe('a bulk replay of failed events after a fix', () => {
  it('applies each event once through the domain path, and counts the one that fails again', async () => {
    const prefix = uniqueId('evt_fix');
    const stored = await Promise.all(
      Array.from({ length: 7 }, (_, index) =>
        insertEvent(sql, { status: 'failed', lastError: 'ledger down', attempts: 2, eventId: `${prefix}_${index}` }),
      ),
    );
    const broken = stored[3];
    if (broken === undefined) throw new Error('no events stored');
    const real = defaultHandlers.acme?.['subscription.updated'];
    if (real === undefined) throw new Error('no acme handler');
    // The fix: every event applies again, but one still fails after its handler wrote its change,
    // which the batch must take back alone (its savepoint) while the others commit.
    const fixed: HandlerMap = {
      ...defaultHandlers,
      acme: {
        ...defaultHandlers.acme,
        'subscription.updated': defineHandler({
          schema: z.unknown(),
          async apply(context, payload) {
            await real.apply(context, payload);
            const data = (payload as { data: { id: string } }).data;
            if (data.id === broken.subscription) throw new Error('still broken');
          },
        }),
      },
    };
    // A completed event under the same prefix is not taken: the job replays failed events only.
    const done = await insertEvent(sql, { status: 'completed', eventId: `${prefix}_done` });

    const job = await createJob({ kind: 'replay_events', filter: { provider: 'acme', id: prefix } });
    expect(job).toMatchObject({ total: 7, filter: { provider: 'acme', id: prefix, status: 'failed' } });
    const summary = await runner({ handlers: fixed, settings: { batchSize: 3 } }).run({ budgetMs: 60_000 });
    expect(summary).toMatchObject({ finished: 1, batches: 3, items: 7, failed: 1 });

    for (const event of stored) {
      const row = await eventRow(sql, event.eventId);
      const subscription = await subscriptionRow(sql, event.subscription);
      if (event === broken) {
        expect(row).toMatchObject({ status: 'failed', attempt_count: 3 });
        expect(subscription).toBeUndefined();
      } else {
        expect(row).toMatchObject({ status: 'completed' });
        expect(subscription).toMatchObject({ status: 'past_due', provider_version: '4' });
      }
    }
    expect(await eventRow(sql, done.eventId)).toMatchObject({ status: 'completed' });
    const items = (await auditRows(job.id)).filter((row) => row.action === 'replay');
    expect(items.map((row) => row.target).sort()).toEqual(stored.map((event) => `acme/${event.eventId}`).sort());
    expect(items.filter((row) => row.after_status === 'failed')).toEqual([
      { action: 'replay', target: `acme/${broken.eventId}`, before_status: 'failed', after_status: 'failed' },
    ]);
    expect(await jobRow(job.id)).toMatchObject({ status: 'done', total: 7, processed: 7, failed: 1 });
  });
});

describe('what a job takes and counts', () => {
  it('never takes rows that arrived after it was created, even when its `until` is later', async () => {
    const topic = uniqueId('until');
    const provider = 'acme';
    const until = new Date(Date.now() + 3_600_000).toISOString();
    const early = await insertMessages(sql, 2, { topic, status: 'dead' });
    const prefix = uniqueId('evt_until');
    const earlyEvents = await Promise.all(
      [0, 1].map((index) => insertEvent(sql, { status: 'failed', eventId: `${prefix}_${index}` })),
    );
    const retry = await createJob({ kind: 'retry_outbox', filter: { topic, until } });
    const replay = await createJob({ kind: 'replay_events', filter: { provider, until, id: prefix } });
    // Arrived after both jobs, stamped before their `until`.
    const late = await insertMessages(sql, 2, { topic, status: 'dead', createdAt: new Date(Date.now() + 60_000) });
    const lateEvent = await insertEvent(sql, { status: 'failed', eventId: `${prefix}_late` });
    await sql`update webhook_events set received_at = now() + interval '1 minute' where event_id = ${lateEvent.eventId}`;

    await runner().run({ budgetMs: 60_000, jobId: retry.id });
    await runner().run({ budgetMs: 60_000, jobId: replay.id });
    expect(await jobRow(retry.id)).toMatchObject({ status: 'done', total: 2, processed: 2 });
    expect((await outboxRows(sql, early)).every((row) => row.status === 'pending')).toBe(true);
    expect((await outboxRows(sql, late)).every((row) => row.status === 'dead')).toBe(true);
    expect(await jobRow(replay.id)).toMatchObject({ status: 'done', total: 2, processed: 2 });
    for (const event of earlyEvents) expect(await eventRow(sql, event.eventId)).toMatchObject({ status: 'completed' });
    expect(await eventRow(sql, lateEvent.eventId)).toMatchObject({ status: 'failed' });
    expect((await auditRows(replay.id)).map((row) => row.target)).not.toContain(`acme/${lateEvent.eventId}`);
  });

  it('a run given a job id takes that job alone: an older queued job is left as it was', async () => {
    const olderTopic = uniqueId('older_job');
    const namedTopic = uniqueId('named_job');
    const olderDead = await insertMessages(sql, 2, { topic: olderTopic, status: 'dead' });
    const namedDead = await insertMessages(sql, 3, { topic: namedTopic, status: 'dead' });
    const older = await createJob({ kind: 'retry_outbox', filter: { topic: olderTopic } });
    const named = await createJob({ kind: 'retry_outbox', filter: { topic: namedTopic } });

    const summary = await runner().run({ budgetMs: 60_000, jobId: named.id });
    expect(summary).toMatchObject({ jobs: 1, batches: 1, items: 3, failed: 0, finished: 1, stoppedBy: 'idle' });
    expect(await jobRow(named.id)).toMatchObject({ status: 'done', total: 3, processed: 3 });
    expect(await jobRow(older.id)).toMatchObject({ status: 'queued', processed: 0, locked_by: null });
    expect((await outboxRows(sql, olderDead)).map((row) => row.status)).toEqual(['dead', 'dead']);
    expect((await outboxRows(sql, namedDead)).map((row) => row.status)).toEqual(['pending', 'pending', 'pending']);

    await runner().run({ budgetMs: 60_000, jobId: older.id });
    expect(await jobRow(older.id)).toMatchObject({ status: 'done', total: 2, processed: 2 });
  });

  it('waits for a transaction begun before it, even one that writes only after the job was created; a run whose budget ends first leaves the job to the next', async () => {
    const topic = uniqueId('older');
    const early = await insertMessages(sql, 2, { topic, status: 'dead' });
    const holder = await sql.reserve();
    try {
      // Begun before the job, but with no transaction id yet: it has written nothing.
      await holder`begin`;
      await holder`select now()`;
      const job = await createJob({ kind: 'retry_outbox', filter: { topic } });
      // Each look at the clock a second later: the run's budget ends while the job still waits.
      let nowMs = TEST_NOW_MS;
      const waited = await runner({ clock: () => (nowMs += 1000) }).run({ budgetMs: 5_000, jobId: job.id });
      expect(waited).toMatchObject({ jobs: 1, batches: 0, items: 0, stoppedBy: 'budget' });
      expect(await jobRow(job.id)).toMatchObject({ status: 'running', processed: 0, locked_by: null });
      expect((await outboxRows(sql, early)).every((row) => row.status === 'dead')).toBe(true);

      // Written after the job was created, stamped with the transaction's start: inside its selection.
      const [{ id: late } = { id: '' }] = await holder<Array<{ id: string }>>`insert into outbox_messages
        (topic, destination, deduplication_key, payload, status) values
        (${topic}, 'default', ${uniqueId('older-key')}, '{}', 'dead') returning id::text as id`;
      await holder`commit`;
      await runner().run({ budgetMs: 60_000, jobId: job.id });
      expect(await jobRow(job.id)).toMatchObject({ status: 'done', total: 3, processed: 3 });
      expect((await outboxRows(sql, [...early, late])).map((row) => row.status)).toEqual(Array(3).fill('pending'));
    } finally {
      await holder`rollback`.catch(() => undefined);
      holder.release();
    }
  });

  it('takes a row that comes into its selection ahead of its position after the first batch, and grows its total: processed never passes total', async () => {
    const topic = uniqueId('joins');
    const base = new Date(Date.now() - 120_000);
    const dead = await insertMessages(sql, 4, { topic, status: 'dead', createdAt: base });
    // Older than the dead ones: ahead of the position while the job walks them newest first.
    const [joins] = await insertMessages(sql, 1, {
      topic,
      status: 'pending',
      createdAt: new Date(base.getTime() - 10_000),
    });
    const job = await createJob({ kind: 'retry_outbox', filter: { topic } });
    expect(job.total).toBe(4);
    const settings = { batchSize: 2 };
    await runner({ settings }).run({ budgetMs: 60_000, jobId: job.id, maxBatches: 1 });
    expect(await jobRow(job.id)).toMatchObject({ status: 'running', total: 4, processed: 2 });
    await sql`update outbox_messages set status = 'dead' where id = ${joins ?? ''}`;
    await runner({ settings }).run({ budgetMs: 60_000, jobId: job.id });
    expect(await jobRow(job.id)).toMatchObject({ status: 'done', total: 5, processed: 5, failed: 0 });
    expect((await outboxRows(sql, [...dead, joins ?? ''])).map((row) => row.status)).toEqual(Array(5).fill('pending'));
  });

  it('a replay counts every event it did not apply: parked again as well as failed again', async () => {
    const prefix = uniqueId('evt_park');
    const parked = await Promise.all(
      [0, 1].map((index) => insertEvent(sql, { status: 'parked', eventId: `${prefix}_${index}` })),
    );
    const [stillParked, fixed] = parked;
    if (stillParked === undefined || fixed === undefined) throw new Error('no events stored');
    // An api_version the service does not know: the replay parks it again, and applies nothing.
    await sql`update webhook_events set payload = jsonb_set(payload, '{api_version}', '"1999-01-01"')
      where event_id = ${stillParked.eventId}`;
    const job = await createJob({ kind: 'replay_events', filter: { provider: 'acme', id: prefix, status: 'parked' } });
    await runner().run({ budgetMs: 60_000, jobId: job.id });
    expect(await eventRow(sql, stillParked.eventId)).toMatchObject({ status: 'parked' });
    expect(await eventRow(sql, fixed.eventId)).toMatchObject({ status: 'completed' });
    expect(await jobRow(job.id)).toMatchObject({ status: 'done', total: 2, processed: 2, failed: 1 });
  });
});

describe('a batch that fails for another reason than the database', () => {
  it('rolls the batch back and fails the job, with the reason; nothing of the batch is applied', async () => {
    const topic = uniqueId('broken');
    const ids = await insertMessages(sql, 8, { topic, status: 'dead' });
    const job = await createJob({ kind: 'retry_outbox', filter: { topic } });
    await sql.unsafe(`create function refuse_second_batch() returns trigger language plpgsql as $$
      begin
        if new.id = '${job.id}' and new.processed > 5 then raise exception 'refused by a test'; end if;
        return new;
      end $$`);
    await sql`create trigger refuse_second_batch before update on bulk_jobs
      for each row execute function refuse_second_batch()`;
    try {
      const summary = await runner({ settings: { batchSize: 5 } }).run({ budgetMs: 60_000, jobId: job.id });
      expect(summary).toMatchObject({ batches: 1, items: 5, stoppedBy: 'idle' });
    } finally {
      await sql`drop trigger refuse_second_batch on bulk_jobs`;
    }
    const [row] = await sql`select status::text as status, processed, last_error, locked_by from bulk_jobs
      where id = ${job.id}`;
    expect(row).toMatchObject({ status: 'failed', processed: 5, locked_by: null });
    expect(String(row?.last_error)).toMatch(/^PostgresError: P0001/);
    const rows = await outboxRows(sql, ids);
    expect(rows.filter((message) => message.status === 'pending')).toHaveLength(5);
    expect((await auditRows(job.id)).filter((audit) => audit.action === 'retry')).toHaveLength(5);
  });
});

describe('a batch that always meets the statement timeout', () => {
  it('is retried after its lease lapses, and fails the job after MAX_BATCH_TIMEOUTS times in a row', async () => {
    const prefix = uniqueId('evt_slow');
    await insertEvent(sql, { status: 'failed', lastError: 'slow ledger', attempts: 1, eventId: `${prefix}_0` });
    // A handler that always outlasts the transaction's statement timeout (a poison event).
    const slow: HandlerMap = {
      ...defaultHandlers,
      acme: {
        ...defaultHandlers.acme,
        'subscription.updated': defineHandler({
          schema: z.unknown(),
          async apply({ tx }) {
            await tx.execute(drizzleSql`set local statement_timeout = 50`);
            await tx.execute(drizzleSql`select pg_sleep(1)`);
          },
        }),
      },
    };
    const job = await createJob({ kind: 'replay_events', filter: { provider: 'acme', id: prefix } });
    let nowMs = TEST_NOW_MS;
    const slowRunner = createBulkRunner({
      db,
      handlers: slow,
      clock: () => nowMs,
      logger: createLogger({ level: 'silent', now: () => new Date(TEST_NOW_MS), write: () => {} }),
      owner: `test-${randomUUID()}`,
      settings: { pauseMs: 0 },
    });
    for (let run = 1; run < MAX_BATCH_TIMEOUTS; run++) {
      expect(await slowRunner.run({ budgetMs: 60_000, jobId: job.id })).toMatchObject({ stoppedBy: 'error' });
      expect(await jobRow(job.id)).toMatchObject({ status: 'running', processed: 0 });
      // The lease the failed batch left lapses; the next run takes the job again.
      nowMs += 60_000;
    }
    await slowRunner.run({ budgetMs: 60_000, jobId: job.id });
    const [row] = await sql`select status::text as status, processed, last_error from bulk_jobs where id = ${job.id}`;
    expect(row).toMatchObject({ status: 'failed', processed: 0 });
    expect(String(row?.last_error)).toMatch(/^a batch timed out 3 times in a row: .*57014/);
    expect(await eventRow(sql, `${prefix}_0`)).toMatchObject({ status: 'failed', attempt_count: 1 });
  });
});

describe('yielding to the intake', () => {
  it('holds each next batch back while the intake is saturated, up to its longest wait, then goes on', async () => {
    const topic = uniqueId('yield');
    const ids = await insertMessages(sql, 6, { topic, status: 'dead' });
    const job = await createJob({ kind: 'retry_outbox', filter: { topic } });
    // Always saturated: two deliveries in flight where one is the limit (the mean over the first
    // look includes the instant before they entered).
    const saturated = new IntakeLoad(1);
    saturated.enter();
    saturated.enter();
    const summary = await createBulkRunner({
      db,
      handlers: defaultHandlers,
      clock: () => TEST_NOW_MS,
      logger: createLogger({ level: 'silent', now: () => new Date(TEST_NOW_MS), write: () => {} }),
      owner: 'yielding',
      intakeLoad: saturated,
      settings: { batchSize: 2, pauseMs: 0, maxDeferMs: 40 },
    }).run({ budgetMs: 60_000, jobId: job.id });
    // Three batches, two waits between them, each the longest allowed.
    expect(summary).toMatchObject({ batches: 3, items: 6, finished: 1 });
    expect(summary.deferredMs).toBeGreaterThanOrEqual(80);
    expect((await outboxRows(sql, ids)).every((message) => message.status === 'pending')).toBe(true);
  });
});

describe('the cron step', () => {
  it('works through a job within its budget', async () => {
    const topic = uniqueId('cron');
    const ids = await insertMessages(sql, 3, { topic, status: 'dead' });
    const job = await createJob({ kind: 'retry_outbox', filter: { topic } });
    const lines: string[] = [];
    const run = bulkJobs.prepare(
      cronParts(db, {
        logger: createLogger({ level: 'info', now: () => new Date(), write: (line) => lines.push(line) }),
      }),
    );
    // The slice's budget: only ever spent by a machine too slow for the suite, so it scales with it.
    const outcome = await run({ budgetMs: patience(10_000) });
    expect(outcome).toMatchObject({ finished: 1, stopped_by: 'idle' });
    expect(await jobRow(job.id)).toMatchObject({ status: 'done', processed: 3 });
    expect((await outboxRows(sql, ids)).every((message) => message.status === 'pending')).toBe(true);
  });
});

describe('creating a job', () => {
  it('dry run: answers the exact count and changes nothing', async () => {
    const topic = uniqueId('dry');
    const ids = await insertMessages(sql, 12, { topic, status: 'dead' });
    await insertMessages(sql, 3, { topic, status: 'published' });
    const [before] = await sql<[{ jobs: number; actions: number }]>`select
      (select count(*)::int from bulk_jobs) as jobs, (select count(*)::int from operator_actions) as actions`;
    const counted = await post('/admin/api/jobs', {
      kind: 'retry_outbox',
      filter: { topic },
      operator: 'dana',
      dry_run: true,
    });
    expect(counted).toEqual({ status: 200, body: { count: 12, job: null, warnings: [] } });
    const [after] = await sql<[{ jobs: number; actions: number }]>`select
      (select count(*)::int from bulk_jobs) as jobs, (select count(*)::int from operator_actions) as actions`;
    expect(after).toEqual(before);
    expect((await outboxRows(sql, ids)).every((row) => row.status === 'dead')).toBe(true);
  });

  it('a filter that matches nothing: count 0, no job', async () => {
    const answer = await post('/admin/api/jobs', {
      kind: 'retry_outbox',
      filter: { topic: uniqueId('none') },
      operator: 'dana',
    });
    expect(answer).toEqual({ status: 200, body: { count: 0, job: null, warnings: [] } });
  });

  it('takes only rows that existed when it was created', async () => {
    const topic = uniqueId('later');
    const early = await insertMessages(sql, 5, { topic, status: 'dead' });
    const job = await createJob({ kind: 'retry_outbox', filter: { topic } });
    const late = await insertMessages(sql, 3, { topic, status: 'dead', createdAt: new Date(Date.now() + 60_000) });
    await runner().run({ budgetMs: 60_000, jobId: job.id });
    expect(await jobRow(job.id)).toMatchObject({ status: 'done', total: 5, processed: 5 });
    expect((await outboxRows(sql, early)).every((row) => row.status === 'pending')).toBe(true);
    expect((await outboxRows(sql, late)).every((row) => row.status === 'dead')).toBe(true);
  });

  it('refuses a bad filter with 400 naming the field, and creates nothing', async () => {
    const [before] = await sql<[{ n: number }]>`select count(*)::int as n from bulk_jobs`;
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ kind: 'retry_outbox', filter: { since: 'yesterday' }, operator: 'dana' }, 'filter.since'],
      [{ kind: 'replay_events', filter: { status: 'completed' }, operator: 'dana' }, 'filter.status'],
      [{ kind: 'replay_events', filter: { provider: 'nobody' }, operator: 'dana' }, 'filter.provider'],
      [{ kind: 'retry_outbox', filter: { status: 'pending' }, operator: 'dana' }, 'filter.status'],
      [{ kind: 'retry_outbox', filter: { cursor: 'abc' }, operator: 'dana' }, 'cursor'],
      [{ kind: 'purge_everything', filter: {}, operator: 'dana' }, 'kind'],
      [{ kind: 'retry_outbox', filter: {} }, 'operator'],
      [{ kind: 'retry_outbox', filter: {}, operator: 'da\u0000na' }, 'operator'],
    ];
    for (const [body, field] of cases) {
      const answer = await post('/admin/api/jobs', body);
      expect({ body, answer }).toEqual({ body, answer: { status: 400, body: { error: 'invalid_request', field } } });
    }
    const [after] = await sql<[{ n: number }]>`select count(*)::int as n from bulk_jobs`;
    expect(after).toEqual(before);
  });
});

describe('cancelling', () => {
  it('stops the job before its next batch, audited; a finished job is left as it is; unknown ids are 404', async () => {
    const topic = uniqueId('cancel');
    const ids = await insertMessages(sql, 10, { topic, status: 'dead' });
    const job = await createJob({ kind: 'retry_outbox', filter: { topic } });
    const first = await runner({ settings: { batchSize: 3 } }).run({ budgetMs: 60_000, maxBatches: 1, jobId: job.id });
    expect(first).toMatchObject({ batches: 1, items: 3, stoppedBy: 'batches' });

    const cancelled = await post(`/admin/api/jobs/${job.id}/cancel`, { operator: 'erin' });
    expect(cancelled.status).toBe(200);
    expect(cancelled.body).toMatchObject({
      cancelled: true,
      job: { status: 'cancelled', processed: 3, cancelled_by: 'erin' },
    });
    const later = await runner({ settings: { batchSize: 3 } }).run({ budgetMs: 60_000, jobId: job.id });
    expect(later).toMatchObject({ jobs: 0, batches: 0 });
    const rows = await outboxRows(sql, ids);
    expect(rows.filter((row) => row.status === 'pending')).toHaveLength(3);
    expect(rows.filter((row) => row.status === 'dead')).toHaveLength(7);
    expect((await auditRows(job.id)).filter((row) => row.action === 'bulk_cancel')).toEqual([
      { action: 'bulk_cancel', target: `job/${job.id}`, before_status: 'running', after_status: 'cancelled' },
    ]);

    const again = await post(`/admin/api/jobs/${job.id}/cancel`, { operator: 'erin' });
    expect(again).toMatchObject({ status: 200, body: { cancelled: false, job: { status: 'cancelled' } } });
    expect((await auditRows(job.id)).filter((row) => row.action === 'bulk_cancel')).toHaveLength(1);
    for (const id of [randomUUID(), 'not-a-job']) {
      expect((await post(`/admin/api/jobs/${id}/cancel`, { operator: 'erin' })).status).toBe(404);
      expect((await call(`/admin/api/jobs/${id}`)).status).toBe(404);
    }
  });
});

describe('the admin API', () => {
  it('lists jobs newest first, and documents every job route', async () => {
    const topic = uniqueId('listed');
    await insertMessages(sql, 2, { topic, status: 'dead' });
    const job = await createJob({ kind: 'retry_outbox', filter: { topic } });
    const listed = await call('/admin/api/jobs?limit=5');
    expect(listed.status).toBe(200);
    expect((listed.body.jobs as JobAnswer[])[0]).toMatchObject({ id: job.id, total: 2 });
    expect((await call('/admin/api/jobs?limit=0')).body).toEqual({ error: 'invalid_request', field: 'limit' });
    const document = (await call('/admin/api/openapi.json')).body as { paths: Record<string, Record<string, unknown>> };
    expect(Object.keys(document.paths['/admin/api/jobs'] ?? {}).sort()).toEqual(['get', 'post']);
    expect(Object.keys(document.paths['/admin/api/jobs/{id}'] ?? {})).toEqual(['get']);
    expect(Object.keys(document.paths['/admin/api/jobs/{id}/cancel'] ?? {})).toEqual(['post']);
    await runner().run({ budgetMs: 60_000, jobId: job.id });
  });
});

describe('the CLI', () => {
  const env = { DATABASE_URL: url };

  it('counts first: --dry-run does nothing, no --yes off a terminal does nothing (exit 2), --yes --wait runs it', async () => {
    const topic = uniqueId('cli');
    const ids = await insertMessages(sql, 7, { topic, status: 'dead' });
    const jobsBefore = await sql`select id from bulk_jobs`;

    const dry = await runCli(['jobs', 'retry', '--topic', topic, '--operator', 'fay', '--dry-run'], env);
    expect(dry).toMatchObject({ code: 0 });
    expect(dry.output).toContain('7 message(s) match');
    const refused = await runCli(['jobs', 'retry', '--topic', topic, '--operator', 'fay'], env);
    expect(refused.code).toBe(2);
    expect(refused.output).toContain('--yes');
    expect(await sql`select id from bulk_jobs`).toHaveLength(jobsBefore.length);
    expect((await outboxRows(sql, ids)).every((row) => row.status === 'dead')).toBe(true);

    const noOperator = await runCli(['jobs', 'retry', '--topic', topic, '--yes'], env);
    expect(noOperator.code).toBe(2);
    const badTime = await runCli(['jobs', 'retry', '--since', 'yesterday', '--operator', 'fay'], env);
    expect(badTime.code).toBe(2);

    const ran = await runCli(
      ['jobs', 'retry', '--topic', topic, '--operator', 'fay', '--yes', '--wait', '--json'],
      env,
    );
    expect(ran.code).toBe(0);
    const answer = JSON.parse(ran.output.trim().split('\n').at(-1) ?? '{}') as { count: number; job: JobAnswer };
    expect(answer).toMatchObject({ count: 7, job: { status: 'done', processed: 7, failed: 0 } });
    expect((await outboxRows(sql, ids)).every((row) => row.status === 'pending')).toBe(true);
    const items = (await auditRows(answer.job.id)).filter((row) => row.action === 'retry');
    expect(new Set(items.map((row) => row.target))).toEqual(new Set(ids));

    const shown = await runCli(['jobs', 'show', answer.job.id, '--json'], env);
    expect(JSON.parse(shown.output)).toMatchObject({ id: answer.job.id, status: 'done', total: 7 });
    const listed = await runCli(['jobs', 'list'], env);
    expect(listed.output).toContain(answer.job.id);
    const cancelDone = await runCli(['jobs', 'cancel', answer.job.id, '--operator', 'fay'], env);
    expect(cancelDone).toMatchObject({ code: 0 });
    expect(cancelDone.output).toContain('already done');
    expect((await runCli(['jobs', 'show', randomUUID()], env)).code).toBe(3);
  });

  it('`jobs run` finishes a queued replay job; `jobs cancel` cancels a queued one', async () => {
    const prefix = uniqueId('evt_cli');
    const stored = await Promise.all(
      Array.from({ length: 4 }, (_, index) =>
        insertEvent(sql, { status: 'dead_letter', eventId: `${prefix}_${index}` }),
      ),
    );
    const created = await runCli(
      ['jobs', 'replay', '--status', 'dead_letter', '--id', prefix, '--operator', 'gus', '--yes', '--json'],
      env,
    );
    expect(created.code).toBe(0);
    const { job } = JSON.parse(created.output) as { job: JobAnswer };
    expect(job).toMatchObject({ status: 'queued', total: 4 });
    const ran = await runCli(['jobs', 'run', job.id, '--json'], env);
    expect(ran.code).toBe(0);
    expect(JSON.parse(ran.output)).toMatchObject({ finished: 1, items: 4, failed: 0 });
    for (const event of stored) expect(await eventRow(sql, event.eventId)).toMatchObject({ status: 'completed' });

    const other = await insertEvent(sql, { status: 'failed', eventId: `${prefix}_other` });
    const queued = await runCli(
      ['jobs', 'replay', '--id', `${prefix}_other`, '--operator', 'gus', '--yes', '--json'],
      env,
    );
    const second = (JSON.parse(queued.output) as { job: JobAnswer }).job;
    const cancelled = await runCli(['jobs', 'cancel', second.id, '--operator', 'gus'], env);
    expect(cancelled).toMatchObject({ code: 0 });
    expect(await jobRow(second.id)).toMatchObject({ status: 'cancelled', processed: 0 });
    expect(await eventRow(sql, other.eventId)).toMatchObject({ status: 'failed' });
  });
});
