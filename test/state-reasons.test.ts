// Every state says why (issue 35): a parked event keeps the rule that parked it and the value it met
// in its row (`last_error`), shown by the admin API and the CLI, written again by a replay that parks
// it again and cleared when it completes; a bulk job keeps its failed items with their reasons (the
// first JOB_FAILURES_KEPT), each linking to its row's page, and a job done with failures is reported
// as `done_with_failures`, never as a plain `done`.
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { JOB_FAILURES_KEPT } from '../src/db/schema.ts';
import { defaultHandlers } from '../src/domain/handlers.ts';
import { createLogger } from '../src/lib/logger.ts';
import { createBulkRunner } from '../src/ops/jobs/bulk-runner.ts';
import { acmeEvent, signedHeaders, TEST_NOW_MS, uniqueId } from './helpers/acme.ts';
import { buildTestApp } from './helpers/app.ts';
import { runCli } from './helpers/cli.ts';
import { useTestDatabase } from './helpers/database.ts';
import { insertEvent } from './helpers/events.ts';
import { eventRow } from './helpers/facts.ts';

const { sql, db, url } = await useTestDatabase();
const TOKEN = 'state-reasons-token-0123456789';
const test = await buildTestApp(db, { config: { ADMIN_TOKEN: TOKEN } });
const bearer = { authorization: `Bearer ${TOKEN}` };

const UNKNOWN = 'unknown api_version 2099-01-01 (known: 2024-06-01)';

async function api<T>(path: string, init: RequestInit = {}): Promise<{ status: number; body: T }> {
  const response = await test.request(path, { ...init, headers: { ...bearer, ...init.headers } });
  return { status: response.status, body: (await response.json()) as T };
}

const post = <T>(path: string, body: unknown) =>
  api<T>(path, { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });

const cli = (args: string[]) => runCli(args, { DATABASE_URL: url });

/** Delivers an acme event of an api_version this service does not know: it is parked. */
async function deliverUnknownVersion(): Promise<string> {
  const event = acmeEvent({ api_version: '2099-01-01', data: { id: uniqueId('sub'), status: 'active' } });
  const body = JSON.stringify(event);
  const response = await test.request('/webhooks/acme', { method: 'POST', body, headers: await signedHeaders(body) });
  expect(response.status).toBe(202);
  return event.id;
}

/** Sets a stored event's api_version, as a sender's other API version would have sent it. */
const setVersion = (eventId: string, version: string) =>
  sql`update webhook_events set payload = jsonb_set(payload, '{api_version}', ${sql.json(version)})
    where provider = 'acme' and event_id = ${eventId}`;

interface EventAnswer {
  status: string;
  attempts: number;
  last_error: string | null;
}

describe('a parked event says why', () => {
  it('keeps the rule that parked it and the value it met in its row, shown by the API list and page and the CLI', async () => {
    const eventId = await deliverUnknownVersion();
    expect(await eventRow(sql, eventId)).toMatchObject({ status: 'parked', last_error: UNKNOWN, attempt_count: 0 });

    const shown = await api<{ event: EventAnswer }>(`/admin/api/events/acme/${eventId}`);
    expect(shown.body.event).toMatchObject({ status: 'parked', last_error: UNKNOWN });
    const listed = await api<{ events: Array<EventAnswer & { event_id: string }> }>(
      `/admin/api/events?status=parked&id=${eventId}`,
    );
    expect(listed.body.events).toEqual([expect.objectContaining({ event_id: eventId, last_error: UNKNOWN })]);

    const show = await cli(['events', 'show', 'acme', eventId]);
    expect(show.code).toBe(0);
    expect(show.output.split('\n')).toContainEqual(
      expect.stringMatching(/^parked_because +unknown api_version 2099-01-01 \(known: 2024-06-01\)$/),
    );
    expect(show.output).toMatch(/^failed_attempts +0$/m);
    expect(show.output).not.toMatch(/^attempts /m);
    const list = await cli(['events', 'list', '--status', 'parked', '--id', eventId]);
    expect(list.output).toContain('failed_attempts');
    expect(list.output).toContain('unknown api_version');
  });

  it('a replay that parks it again writes the reason again; one that completes it clears it', async () => {
    // Parked before reasons were kept: no last_error yet.
    const { eventId } = await insertEvent(sql, { status: 'parked' });
    await setVersion(eventId, '2099-01-01');
    const again = await post<{ event: EventAnswer; reason: string }>(`/admin/api/events/acme/${eventId}/replay`, {
      operator: 'ops',
    });
    expect(again.body.event).toMatchObject({ status: 'parked', last_error: UNKNOWN });
    expect(await eventRow(sql, eventId)).toMatchObject({ status: 'parked', last_error: UNKNOWN });

    await setVersion(eventId, '2024-06-01');
    await post(`/admin/api/events/acme/${eventId}/replay`, { operator: 'ops' });
    expect(await eventRow(sql, eventId)).toMatchObject({ status: 'completed', last_error: null });
  });
});

interface JobAnswer {
  id: string;
  status: string;
  outcome: string;
  failed: number;
}
interface Failure {
  target_kind: string;
  target: string;
  reason: string;
  page: string;
}

/** A runner as one process of the service builds it. */
const runJobs = (jobId: string) =>
  createBulkRunner({
    db,
    handlers: defaultHandlers,
    clock: () => TEST_NOW_MS,
    logger: createLogger({ level: 'silent', now: () => new Date(TEST_NOW_MS), write: () => {} }),
    owner: `test-${randomUUID()}`,
    settings: { pauseMs: 0 },
  }).run({ budgetMs: 60_000, jobId });

/** Parked events under one prefix: `unknown` of them still of an unknown version, `known` applicable. */
async function parkedEvents(prefix: string, unknown: number, known: number): Promise<string[]> {
  const stuck: string[] = [];
  for (let index = 0; index < unknown + known; index += 1) {
    const { eventId } = await insertEvent(sql, { status: 'parked', eventId: `${prefix}_${index}` });
    if (index < unknown) {
      await setVersion(eventId, '2099-01-01');
      stuck.push(eventId);
    }
  }
  return stuck;
}

async function replayJob(prefix: string): Promise<JobAnswer> {
  const created = await post<{ job: JobAnswer }>('/admin/api/jobs', {
    operator: 'dana',
    kind: 'replay_events',
    filter: { provider: 'acme', id: prefix, status: 'parked' },
  });
  expect(created.status).toBe(202);
  return created.body.job;
}

const failureRows = (jobId: string) =>
  sql<Array<{ target_kind: string; target: string; reason: string }>>`
    select target_kind::text as target_kind, target, reason from bulk_job_failures where job_id = ${jobId}
    order by target`;

describe('a bulk job with failures', () => {
  it('keeps each failed item with its reason, links it to its page, and is done_with_failures in the API and the CLI', async () => {
    const prefix = uniqueId('evt_why');
    const stuck = await parkedEvents(prefix, 2, 1);
    const job = await replayJob(prefix);
    await runJobs(job.id);

    const reason = `parked again: ${UNKNOWN}`;
    expect(await failureRows(job.id)).toEqual(
      stuck.map((eventId) => ({ target_kind: 'event', target: `acme/${eventId}`, reason })),
    );
    const [row] = await sql`select status::text as status, failed from bulk_jobs where id = ${job.id}`;
    expect(row).toEqual({ status: 'done', failed: 2 });

    const shown = await api<{ job: JobAnswer; failures: Failure[] }>(`/admin/api/jobs/${job.id}`);
    expect(shown.body.job).toMatchObject({ status: 'done', outcome: 'done_with_failures', failed: 2 });
    expect(shown.body.failures.map(({ target, reason: why, page }) => ({ target, why, page }))).toEqual(
      stuck.map((eventId) => ({ target: `acme/${eventId}`, why: reason, page: `/admin/events/acme/${eventId}` })),
    );
    const listed = await api<{ jobs: JobAnswer[] }>('/admin/api/jobs');
    expect(listed.body.jobs.find((listedJob) => listedJob.id === job.id)?.outcome).toBe('done_with_failures');

    const text = await cli(['jobs', 'show', job.id]);
    expect(text.code).toBe(0);
    expect(text.output).toMatch(/^status +done$/m);
    expect(text.output).toMatch(/^outcome +done_with_failures$/m);
    // One JSON object, not an escaped string of one.
    const filterLine = /^filter +(\{.*\})$/m.exec(text.output)?.[1];
    expect(JSON.parse(filterLine ?? 'null')).toEqual({ provider: 'acme', id: prefix, status: 'parked' });
    for (const eventId of stuck) expect(text.output).toMatch(new RegExp(`^acme/${eventId} +parked again: `, 'm'));
    const json = JSON.parse((await cli(['jobs', 'show', job.id, '--json'])).output) as JobAnswer & {
      failures: Failure[];
    };
    expect(json).toMatchObject({ outcome: 'done_with_failures', filter: { status: 'parked' } });
    expect(json.failures).toEqual(shown.body.failures);
    const list = await cli(['jobs', 'list']);
    expect(list.output).toMatch(new RegExp(`^${job.id} +replay_events +done_with_failures `, 'm'));
  });

  it('`jobs replay --wait` ends on the outcome, and says where the reasons are', async () => {
    const prefix = uniqueId('evt_wait');
    await parkedEvents(prefix, 1, 1);
    const ran = await cli(
      ['jobs', 'replay', '--provider', 'acme', '--id', prefix, '--status', 'parked'].concat([
        '--operator',
        'dana',
        '--yes',
        '--wait',
      ]),
    );
    expect(ran.code).toBe(0);
    const [job] = await sql<Array<{ id: string }>>`select id from bulk_jobs where filter->>'id' = ${prefix}`;
    expect(ran.output).toContain(
      `job ${job?.id} done_with_failures: 2 of 2 taken, 1 failed (why: jobs show ${job?.id})`,
    );
  });

  it('a job without failures is done; its failures are none', async () => {
    const prefix = uniqueId('evt_ok');
    await parkedEvents(prefix, 0, 2);
    const job = await replayJob(prefix);
    await runJobs(job.id);
    const shown = await api<{ job: JobAnswer; failures: Failure[] }>(`/admin/api/jobs/${job.id}`);
    expect(shown.body).toMatchObject({ job: { status: 'done', outcome: 'done', failed: 0 }, failures: [] });
    expect(await failureRows(job.id)).toEqual([]);
  });

  it(`keeps at most ${JOB_FAILURES_KEPT} failed items per job, and counts every one`, async () => {
    const prefix = uniqueId('evt_cap');
    await parkedEvents(prefix, 3, 0);
    const job = await replayJob(prefix);
    // As if earlier batches had kept all but one of the job's room already.
    await sql`update bulk_jobs set failed = ${JOB_FAILURES_KEPT - 1} where id = ${job.id}`;
    await runJobs(job.id);
    expect(await failureRows(job.id)).toHaveLength(1);
    const [row] = await sql`select failed from bulk_jobs where id = ${job.id}`;
    expect(row).toEqual({ failed: JOB_FAILURES_KEPT + 2 });
  });
});
