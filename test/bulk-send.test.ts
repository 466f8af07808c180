// A destination added later, given the history on request: a send_to_destination bulk job copies the
// outbox messages a filter matches to it (one row per message, its own key), only those its filters
// would have taken at enqueue, never again on a re-run and never re-sent to the first destination; the
// relay then publishes each copy to the new destination's HTTP sink once. Created through the admin
// API and the CLI, counted first, refused for an unknown destination as `outbox list` refuses one.
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../src/config.ts';
import { defaultHandlers, routedHandlers } from '../src/domain/handlers.ts';
import { createLogger } from '../src/lib/logger.ts';
import { bulkRunnerFor, relayFor } from '../src/ops/maintenance/drainers.ts';
import { parseDestinations } from '../src/outbox/destinations.ts';
import { nodeDestinationPublishers } from '../src/outbox/publishers/node.ts';
import { closePublishers } from '../src/outbox/relays.ts';
import { acmeEvent, signedHeaders, uniqueId } from './helpers/acme.ts';
import { buildTestApp } from './helpers/app.ts';
import { BROKER_TEST_TIMEOUT } from './helpers/brokers.ts';
import { runCli } from './helpers/cli.ts';
import { useTestDatabase } from './helpers/database.ts';
import { WAIT_MS } from './helpers/patience.ts';
import { startSink } from './helpers/sink.ts';

const { db, sql, url } = await useTestDatabase();
const sink = await startSink();
const TOKEN = 'admin-token-for-tests-0123456789';

/** Before: the shorthand alone. After: `late` added, taking acme's subscription.updated on subscription.* topics. */
const BEFORE = { OUTBOX_TARGET_URL: `${sink.url}/first` };
const LATE = [
  {
    name: 'late',
    url: `${sink.url}/late`,
    topics: ['subscription.*'],
    senders: ['acme'],
    types: ['subscription.updated'],
  },
];
const AFTER = { ...BEFORE, OUTBOX_DESTINATIONS: JSON.stringify(LATE) };

/** The services' log lines, parsed: a test waits for one (a job seen waiting) instead of sleeping. */
const logLines: Array<Record<string, unknown>> = [];
const logger = createLogger({
  level: 'info',
  now: () => new Date(),
  write: (line) => logLines.push(JSON.parse(line) as Record<string, unknown>),
});

/** The service under one configuration: its app (handlers routed, admin API), a relay and a job runner. */
async function serviceWith(variables: Record<string, string>) {
  const config = parseConfig({ ...variables, ADMIN_TOKEN: TOKEN });
  const routing = parseDestinations(config);
  const app = await buildTestApp(db, {
    handlers: routedHandlers(defaultHandlers, routing),
    outboxRouting: routing,
    config: { ADMIN_TOKEN: TOKEN },
  });
  const parts = { config, db, clock: Date.now, logger, newId: () => randomUUID(), random: () => 0.5 };
  const publishers = nodeDestinationPublishers(routing, { clock: Date.now, logger, ...BROKER_TEST_TIMEOUT });
  afterAll(() => closePublishers(publishers));
  return {
    relay: relayFor(parts, publishers),
    runner: bulkRunnerFor(parts, { settings: { pauseMs: 0, batchSize: 2 } }),
    deliver: async (event: object) => {
      const body = JSON.stringify(event);
      const response = await app.request('/webhooks/acme', {
        method: 'POST',
        body,
        headers: await signedHeaders(body),
      });
      expect(response.status).toBe(200);
    },
    dashboard: async (path: string) =>
      (await app.request(path, { headers: { authorization: `Bearer ${TOKEN}` } })).text(),
    createJob: async (body: Record<string, unknown>) => {
      const response = await app.request('/admin/api/jobs', {
        method: 'POST',
        body: JSON.stringify({ operator: 'dana', ...body }),
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      });
      return { status: response.status, body: (await response.json()) as Record<string, unknown> };
    },
  };
}

const before = await serviceWith(BEFORE);
const after = await serviceWith(AFTER);

interface Row {
  id: string;
  destination: string;
  deduplication_key: string;
  topic: string;
  payload: unknown;
  traceparent: string | null;
  status: string;
}
const rowsSince = (since: Date) => sql<Row[]>`
  select id::text as id, destination, deduplication_key, topic, payload, traceparent, status::text as status
  from outbox_messages where created_at >= ${since} order by deduplication_key`;
const databaseNow = async () => (await sql<Array<{ now: Date }>>`select now() as now`)[0]?.now ?? new Date(0);

/**
 * The history: through the intake under the first configuration, two acme subscription.updated events
 * (late wants them) and one subscription.created (its type refused); a globex message (its sender
 * refused), an acme message on another topic, and one whose event retention removed, as stored rows;
 * and one delivered after late was added (it has it already).
 */
async function history() {
  const since = await databaseNow();
  const wanted = [acmeEvent({ type: 'subscription.updated' }), acmeEvent({ type: 'subscription.updated' })];
  const created = acmeEvent({ type: 'subscription.created' });
  for (const event of [...wanted, created]) await before.deliver(event);
  const globex = uniqueId('evt');
  await sql`insert into webhook_events (provider, event_id, event_type, status, payload)
    values ('globex', ${globex}, 'subscription.updated', 'completed', '{}')`;
  const other = uniqueId('evt');
  await sql`insert into webhook_events (provider, event_id, event_type, status, payload)
    values ('acme', ${other}, 'subscription.updated', 'completed', '{}')`;
  const gone = uniqueId('evt');
  await sql`insert into outbox_messages (topic, destination, deduplication_key, payload, traceparent) values
    ('subscription.changed', 'default', ${`globex:${globex}:subscription.changed`}, '{"n":1}', null),
    ('invoice.paid', 'default', ${`acme:${other}:invoice.paid`}, '{"n":2}', null),
    ('subscription.changed', 'default', ${`acme:${gone}:subscription.changed`}, '{"n":3}', null)`;
  const already = acmeEvent({ type: 'subscription.updated' });
  await after.deliver(already);
  return { since, wanted, already };
}

const keyOf = (eventId: string) => `acme:${eventId}:subscription.changed`;

describe('a send_to_destination job', () => {
  it('copies exactly the messages the new destination wants, each once with its own key; a re-run copies nothing; the relay sends each copy once', async () => {
    const { since, wanted, already } = await history();
    const stored = await rowsSince(since);
    // Eight rows for seven messages: `already` went to both destinations at enqueue.
    expect(stored.map((row) => row.destination).sort()).toEqual([...Array(7).fill('default'), 'late']);
    expect(stored.filter((row) => row.destination === 'late').map((row) => row.deduplication_key)).toEqual([
      `${keyOf(already.id)}@late`,
    ]);
    const filter = { to: 'late', since: since.toISOString() };

    // Counted first: the seven messages (late's own row is not read, its message is counted through default's).
    const counted = await after.createJob({ kind: 'send_to_destination', filter, dry_run: true });
    expect(counted).toEqual({ status: 200, body: { count: 7, job: null, warnings: [] } });
    expect(await sql`select 1 from bulk_jobs`).toHaveLength(0);

    const created = await after.createJob({ kind: 'send_to_destination', filter });
    expect(created.status).toBe(202);
    const job = created.body.job as { id: string; total: number; filter: Record<string, string> };
    expect(job).toMatchObject({ total: 7, filter });
    // Batches of two: four batches, the job resumed from its position each time.
    expect(await after.runner.run({ budgetMs: 60_000 })).toMatchObject({ jobs: 1, batches: 4, items: 7, failed: 5 });
    const [done] =
      await sql`select status::text as status, total, processed, failed from bulk_jobs where id = ${job.id}`;
    expect(done).toEqual({ status: 'done', total: 7, processed: 7, failed: 5 });

    const rows = await rowsSince(since);
    const late = rows.filter((row) => row.destination === 'late');
    expect(late.map((row) => row.deduplication_key).sort()).toEqual(
      [already.id, ...wanted.map((event) => event.id)].map((id) => `${keyOf(id)}@late`).sort(),
    );
    // Nothing new for the first destination; each copy carries its message's topic, payload and traceparent.
    expect(rows.filter((row) => row.destination === 'default')).toEqual(
      stored.filter((row) => row.destination === 'default'),
    );
    for (const event of wanted) {
      const original = rows.find((row) => row.deduplication_key === keyOf(event.id));
      const copy = rows.find((row) => row.deduplication_key === `${keyOf(event.id)}@late`);
      expect(copy).toMatchObject({
        topic: original?.topic,
        payload: original?.payload,
        traceparent: original?.traceparent,
        status: 'pending',
      });
    }

    // Audited: the job's row and one `send` per copy, naming the new row and the one it came from.
    const audit = await sql<Array<{ action: string; target: string; after_status: string | null; detail: unknown }>>`
      select action, target, after_status, detail from operator_actions where job_id = ${job.id} order by action`;
    expect(audit.map((row) => row.action)).toEqual(['bulk_send', 'send', 'send']);
    expect(audit[0]).toMatchObject({ target: `job/${job.id}`, after_status: 'queued', detail: filter });
    const copies = late.filter((row) => row.deduplication_key !== `${keyOf(already.id)}@late`);
    // Made by the service, time-ordered like every other outbox id (decision 0017).
    for (const copy of copies) expect(copy.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab]/);
    expect(new Set(audit.slice(1).map((row) => row.target))).toEqual(new Set(copies.map((row) => row.id)));
    for (const item of audit.slice(1))
      expect(item).toMatchObject({ after_status: 'pending', detail: { destination: 'late' } });

    // A re-run takes the same seven and copies none.
    const again = await after.createJob({ kind: 'send_to_destination', filter });
    const rerun = again.body.job as { id: string };
    expect(await after.runner.run({ budgetMs: 60_000 })).toMatchObject({ items: 7, failed: 7 });
    const [rerunRow] =
      await sql`select status::text as status, processed, failed from bulk_jobs where id = ${rerun.id}`;
    expect(rerunRow).toEqual({ status: 'done', processed: 7, failed: 7 });
    expect(await rowsSince(since)).toEqual(rows);
    expect(await sql`select 1 from operator_actions where job_id = ${rerun.id} and action = 'send'`).toHaveLength(0);

    // The dashboard's Jobs page names the kind and calls the not-copied count skipped.
    const page = await after.dashboard('/admin/jobs');
    expect(page).toContain('send to destination');
    expect(page).toContain('to=late');
    expect(page).toContain('7 skipped');

    // The relay publishes every pending row: the copies reach late's sink once each, the first sink nothing again.
    sink.requests.length = 0;
    // Seven first rows and three late ones (two copies, one enqueued there), once: a second drain finds nothing.
    expect(await after.relay.drain()).toMatchObject({ published: 10, retried: 0, dead: 0 });
    expect(await after.relay.drain()).toMatchObject({ claimed: 0 });
    const keysAt = (path: string) =>
      sink.requests
        .filter((request) => request.path.endsWith(path))
        .map((request) => String(request.headers['idempotency-key']))
        .sort();
    expect(keysAt('/late')).toEqual(
      [...new Set([...copies.map((row) => row.deduplication_key), `${keyOf(already.id)}@late`])].sort(),
    );
    expect(keysAt('/first')).toEqual(
      rows
        .filter((row) => row.destination === 'default')
        .map((row) => row.deduplication_key)
        .sort(),
    );
    const published = await sql`select 1 from outbox_messages where destination = 'late' and status = 'published'
      and created_at >= ${since}`;
    expect(published).toHaveLength(3);
  });

  it('refuses a destination the configuration does not have, in the API and the CLI, as `outbox list` does', async () => {
    const jobsBefore = await sql`select 1 from bulk_jobs`;
    const refused = await after.createJob({ kind: 'send_to_destination', filter: { to: 'nowhere' } });
    expect(refused.status).toBe(400);
    expect(JSON.stringify(refused.body)).toContain('filter.to');
    const missing = await after.createJob({ kind: 'send_to_destination', filter: {} });
    expect(missing.status).toBe(400);

    const env = { DATABASE_URL: url, ...AFTER };
    const cli = await runCli(['jobs', 'send', '--to', 'nowhere', '--operator', 'dana', '--yes'], env);
    const list = await runCli(['outbox', 'list', '--destination', 'nowhere'], env);
    expect(list.code).toBe(2);
    expect(cli.code).toBe(list.code);
    expect(cli.output).toContain('--to: not a configured destination (configured: default, late)');
    expect(await sql`select 1 from bulk_jobs`).toHaveLength(jobsBefore.length);
  });

  it('fails, saying why, when the runner is configured without the destination', async () => {
    const since = await databaseNow();
    await before.deliver(acmeEvent({ type: 'subscription.updated' }));
    const created = await after.createJob({
      kind: 'send_to_destination',
      filter: { to: 'late', since: since.toISOString() },
    });
    const job = created.body.job as { id: string };
    await before.runner.run({ budgetMs: 60_000, jobId: job.id });
    const [row] = await sql`select status::text as status, processed, last_error from bulk_jobs where id = ${job.id}`;
    expect(row).toEqual({
      status: 'failed',
      processed: 0,
      last_error: 'destination "late" is not configured in this process',
    });
    expect(await sql`select 1 from outbox_messages where destination = 'late' and created_at >= ${since}`).toHaveLength(
      0,
    );
  });

  it('counts on the CLI with --dry-run and runs with --yes --wait', async () => {
    const since = await databaseNow();
    const event = acmeEvent({ type: 'subscription.updated' });
    await before.deliver(event);
    const env = { DATABASE_URL: url, ...AFTER };
    const args = ['jobs', 'send', '--to', 'late', '--since', since.toISOString(), '--operator', 'dana'];
    const dry = await runCli([...args, '--dry-run'], env);
    expect(dry).toMatchObject({ code: 0 });
    expect(dry.output).toContain('1 message(s) match');
    expect(
      await sql`select 1 from outbox_messages where deduplication_key = ${`${keyOf(event.id)}@late`}`,
    ).toHaveLength(0);

    const ran = await runCli([...args, '--yes', '--wait', '--json'], env);
    expect(ran.code).toBe(0);
    const answer = JSON.parse(ran.output.trim().split('\n').at(-1) ?? '{}') as { job: Record<string, unknown> };
    expect(answer.job).toMatchObject({
      kind: 'send_to_destination',
      status: 'done',
      total: 1,
      processed: 1,
      failed: 0,
    });
    const [copy] = await sql`select destination, status::text as status from outbox_messages
      where deduplication_key = ${`${keyOf(event.id)}@late`}`;
    expect(copy).toEqual({ destination: 'late', status: 'pending' });
  });

  it('waits for a transaction older than the job: rows it commits behind the walk are sent, none hidden, processed never past total', async () => {
    const early = [0, 1, 2].map(() => acmeEvent({ type: 'subscription.updated' }));
    const since = await databaseNow();
    for (const event of early) await before.deliver(event);
    const [hidden] = early;
    if (hidden === undefined) throw new Error('no events');
    // Another writer's transaction, begun before the job and committed after it: like another job's
    // batch it writes a copy of an old message for a destination of its own ('side'), newer than the
    // message's first row, so that copy stands for the message once it commits; like the intake it
    // writes a new message. Both are stamped with the transaction's start, inside the job's selection.
    const fresh = uniqueId('evt');
    const holder = await sql.reserve();
    try {
      await holder`begin`;
      await holder`insert into webhook_events (provider, event_id, event_type, status, payload)
        values ('acme', ${fresh}, 'subscription.updated', 'completed', '{}')`;
      await holder`insert into outbox_messages (topic, destination, deduplication_key, payload, traceparent) values
        ('subscription.changed', 'default', ${keyOf(fresh)}, '{"n":1}', null),
        ('subscription.changed', 'side', ${`${keyOf(hidden.id)}@side`}, '{"n":2}', null)`;

      const created = await after.createJob({
        kind: 'send_to_destination',
        filter: { to: 'late', since: since.toISOString() },
      });
      const job = created.body.job as { id: string };
      const first = after.runner.run({ budgetMs: WAIT_MS, jobId: job.id, maxBatches: 1 });
      // Released once the job is seen waiting for the transaction, or (were it not to wait) past its first batch.
      const waiting = () =>
        logLines.some(
          (line) => line.msg === 'bulk job waiting for transactions older than it' && line.job_id === job.id,
        );
      const progressed = async () =>
        (await sql`select 1 from bulk_jobs where id = ${job.id} and processed > 0`).length > 0;
      await expect.poll(async () => waiting() || (await progressed()), { timeout: WAIT_MS }).toBe(true);
      await holder`commit`;
      await first;
      await after.runner.run({ budgetMs: WAIT_MS, jobId: job.id });

      const [done] = await sql<Array<{ status: string; total: number; processed: number; failed: number }>>`
        select status::text as status, total, processed, failed from bulk_jobs where id = ${job.id}`;
      expect(done).toEqual({ status: 'done', total: 4, processed: 4, failed: 0 });
      const copied = await sql<Array<{ key: string }>>`select deduplication_key as key from outbox_messages
        where destination = 'late' and created_at >= ${since} order by deduplication_key`;
      expect(copied.map((row) => row.key).sort()).toEqual(
        [...early.map((event) => event.id), fresh].map((id) => `${keyOf(id)}@late`).sort(),
      );
    } finally {
      await holder`rollback`.catch(() => undefined);
      holder.release();
    }
  });
});
