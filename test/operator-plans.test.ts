// A performance guard, read from the planner (EXPLAIN), as test/claim-plan.test.ts is: at a realistic
// size (a month of events, analyzed), every operator read plans as a walk of an index that stops
// after its page, or reads the counters, never a scan of the events table. A failure here means an
// operator page gets slower as the table grows (docs/scaling.md), not that it answers wrongly.
import { PgDialect } from 'drizzle-orm/pg-core';
import { drizzle } from 'drizzle-orm/postgres-js';
import { beforeAll, describe, expect, it } from 'vitest';
import * as schema from '../src/db/schema.ts';
import { purgeStatements } from '../src/inbox/event-rows.ts';
import { messagesToSend } from '../src/ops/jobs/destination-copy.ts';
import { countEventsByStatus, listEvents, statusCounts } from '../src/ops/reads/events.ts';
import { inboxGauges } from '../src/ops/reads/gauges.ts';
import { countOutboxByStatus, listOutbox, messagesOfEvent } from '../src/ops/reads/outbox-view.ts';
import { readOverview, windowEndingAt } from '../src/ops/reads/overview.ts';
import { useTestDatabase } from './helpers/database.ts';
import { patience } from './helpers/patience.ts';

const { sql } = await useTestDatabase({ statementTimeoutMs: 120_000 });
const EVENTS = 400_000;
const DAY_MS = 86_400_000;

/** The statements a read sent, recorded by Drizzle's logger, to be planned again with their parameters. */
const sent: Array<{ query: string; params: unknown[] }> = [];
const recording = drizzle({
  client: sql,
  schema,
  casing: 'snake_case',
  logger: { logQuery: (query, params) => sent.push({ query, params }) },
});

interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  'Relation Name'?: string;
  'Index Cond'?: string;
  Plans?: PlanNode[];
}
const nodesOf = (plan: PlanNode): PlanNode[] => [plan, ...(plan.Plans ?? []).flatMap(nodesOf)];

/** Every node of every statement `read` sent, as the planner plans them with the same parameters. */
async function plannedNodes(read: () => Promise<unknown>): Promise<PlanNode[]> {
  sent.length = 0;
  await read();
  const statements = sent.splice(0);
  expect(statements.length).toBeGreaterThan(0);
  const nodes: PlanNode[] = [];
  for (const { query, params } of statements) {
    const [row] = await sql.unsafe(`explain (format json) ${query}`, params as never[]);
    const plan = (row?.['QUERY PLAN'] as [{ Plan: PlanNode }] | undefined)?.[0].Plan;
    if (plan === undefined) throw new Error('no plan');
    nodes.push(...nodesOf(plan));
  }
  return nodes;
}

const nodeTypesUnder = (node: PlanNode) => (node.Plans ?? []).flatMap(nodesOf).map((under) => under['Node Type']);
/** A page merged from index ranges, each read in its order: a Merge Append, and no Sort over an Append. */
const expectMergedRanges = (nodes: PlanNode[]) => {
  expect(nodes.map((node) => node['Node Type'])).toContain('Merge Append');
  expect(nodes.filter((node) => node['Node Type'] === 'Sort' && nodeTypesUnder(node).includes('Append'))).toEqual([]);
};
const indexesUsed = (nodes: PlanNode[]) => nodes.flatMap((node) => node['Index Name'] ?? []);
const scansOf = (nodes: PlanNode[], table: string) =>
  nodes.filter((node) => node['Node Type'] === 'Seq Scan' && node['Relation Name'] === table);

const nowMs = Date.now();
let aStripeObject = '';
let anEventId = '';

beforeAll(async () => {
  // A month of traffic: five senders, three types, mostly completed, payloads for the last week only.
  await sql`
    insert into webhook_events (provider, event_id, event_type, status, payload, received_at, completed_at)
    select r.provider, 'evt_' || md5(g::text),
      case when g % 200 = 7 then 'payout.failed' else (array['invoice.paid', 'charge.succeeded', 'customer.updated'])[1 + g % 3] end,
      (case when g % 100 < 95 then 'completed' when g % 100 < 98 then 'ignored' when g % 100 = 98 then 'failed'
        else 'dead_letter' end)::webhook_event_status,
      case when g > ${EVENTS} * 23 / 30 then jsonb_build_object('id', 'evt_' || g,
        'data', jsonb_build_object('object', jsonb_build_object('id', 'sub_' || (g % 5000))),
        'repository', jsonb_build_object('full_name', 'org/repo' || (g % 300))) end,
      r.at, case when g % 100 <> 98 then r.at + interval '80 milliseconds' end
    from generate_series(1, ${EVENTS}) g
    cross join lateral (select case when g % 200 = 3 then 'paddle'
        else (array['stripe', 'github', 'shopify', 'acme', 'standard'])[1 + g % 5] end as provider,
      ${new Date(nowMs - 30 * DAY_MS).toISOString()}::timestamptz + (g::float8 / ${EVENTS}) * interval '30 days' as at) r`;
  // An async backlog of the last minutes: the queue, which the listing indexes leave out.
  await sql`
    insert into webhook_events (provider, event_id, event_type, status, payload, received_at)
    select (array['stripe', 'github', 'paddle'])[1 + g % 3], 'evt_queued_' || g, 'invoice.paid',
      (case when g % 10 = 0 then 'processing' else 'received' end)::webhook_event_status,
      jsonb_build_object('data', jsonb_build_object('object', jsonb_build_object('id', 'sub_' || (g % 5000)))),
      ${new Date(nowMs - 600_000).toISOString()}::timestamptz + g * interval '100 milliseconds'
    from generate_series(1, 2000) g`;
  await sql`
    insert into outbox_messages (topic, deduplication_key, payload, status, created_at, published_at)
    select case when g % 200 = 5 then 'payout.failed' else (array['subscription.changed', 'invoice.paid'])[1 + g % 2] end,
      'plan:' || g, '{}'::jsonb,
      (case when g % 50 = 0 then 'dead' else 'published' end)::outbox_status,
      ${new Date(nowMs - 30 * DAY_MS).toISOString()}::timestamptz + (g::float8 / ${EVENTS / 10}) * interval '30 days', now()
    from generate_series(1, ${EVENTS / 10}) g`;
  await sql`vacuum analyze webhook_events`;
  await sql`vacuum analyze outbox_messages`;
  await sql`analyze webhook_event_counts`;
  const [stripe] = await sql<{ id: string }[]>`select payload #>> '{data,object,id}' as id from webhook_events
    where provider = 'stripe' and payload is not null limit 1`;
  aStripeObject = stripe?.id ?? '';
  const [event] = await sql<
    { id: string }[]
  >`select event_id as id from webhook_events order by received_at desc limit 1`;
  anEventId = event?.id ?? '';
}, patience(300_000));

describe('operator reads at a month of events', () => {
  const lastWeek = { since: new Date(nowMs - 8 * DAY_MS), until: new Date(nowMs - 7 * DAY_MS) };

  it.each([
    ['the newest page', {}, 'webhook_events_status_received_idx'],
    // A common sender's page is as quick from the newest rows; a rare one's needs its own index.
    ['a rare sender', { provider: 'paddle' }, 'webhook_events_listed_provider_received_idx'],
    ['a rare type', { type: 'payout.failed' }, 'webhook_events_listed_type_received_idx'],
    ['one status', { status: 'failed' as const }, 'webhook_events_status_received_idx'],
    ['a day last week', lastWeek, 'webhook_events_status_received_idx'],
    ['an id prefix', { id: 'evt_00' }, 'webhook_events_listed_event_id_prefix_idx'],
  ])('lists %s from its index', async (_, filter, index) => {
    const nodes = await plannedNodes(() => listEvents(recording, { ...filter, limit: 50 }));
    expect(indexesUsed(nodes)).toContain(index);
    expect(scansOf(nodes, 'webhook_events')).toEqual([]);
  });

  it.each([
    ['a common sender', { provider: 'stripe' }],
    ['a common type', { type: 'invoice.paid' }],
    ['a common sender’s failures', { provider: 'stripe', status: 'failed' as const }],
  ])('lists %s without reading the table through', async (_, filter) => {
    const nodes = await plannedNodes(() => listEvents(recording, { ...filter, limit: 50 }));
    expect(indexesUsed(nodes).length).toBeGreaterThan(0);
    expect(scansOf(nodes, 'webhook_events')).toEqual([]);
  });

  it('finds events by the sender’s own id from the subject index', async () => {
    expect(aStripeObject).toMatch(/^sub_/);
    const nodes = await plannedNodes(() => listEvents(recording, { subject: aStripeObject, limit: 50 }));
    expect(indexesUsed(nodes)).toContain('webhook_events_listed_subject_idx');
    expect(scansOf(nodes, 'webhook_events')).toEqual([]);
  });

  it('lists every status newest first by merging one range per status, each read only as far as the page', async () => {
    // No index of arrival time alone (each is an entry more on the intake's path): the page merges
    // the newest entries of each status's range of the (status, received_at) index.
    const nodes = await plannedNodes(() => listEvents(recording, { limit: 50 }));
    expectMergedRanges(nodes);
  });

  it('finds queued events by an id prefix too, though the prefix index leaves the queue out', async () => {
    const listed = await listEvents(recording, { id: 'evt_queued_10', limit: 50 });
    // evt_queued_10, evt_queued_100 … 109, evt_queued_1000 … 1099: 111 ids, the first page of them.
    expect(listed.rows).toHaveLength(50);
    expect(new Set(listed.rows.map((event) => event.status))).toEqual(new Set(['received', 'processing']));
    const nodes = await plannedNodes(() => listEvents(recording, { id: 'evt_queued_10', limit: 50 }));
    expect(scansOf(nodes, 'webhook_events')).toEqual([]);
  });

  it('pages deep into the list by cursor from the same index', async () => {
    let cursor: string | undefined;
    for (let page = 0; page < 3; page++) {
      const listed = await listEvents(recording, { cursor, limit: 50 });
      cursor = listed.nextCursor ?? undefined;
    }
    const nodes = await plannedNodes(() => listEvents(recording, { cursor, limit: 50 }));
    expect(indexesUsed(nodes)).toContain('webhook_events_status_received_idx');
    expect(scansOf(nodes, 'webhook_events')).toEqual([]);
  });

  it.each([
    ['all of them', {}],
    ['a sender over a day', { provider: 'github', ...lastWeek }],
    ['a type over an hour and a half', { type: 'invoice.paid', since: new Date(nowMs - 5_400_000) }],
    ['the last ten minutes', { since: new Date(nowMs - 600_000) }],
  ])('counts %s from the counters, reading only the ragged ends from the table', async (_, filter) => {
    const nodes = await plannedNodes(() => countEventsByStatus(recording, filter));
    expect(scansOf(nodes, 'webhook_events')).toEqual([]);
  });

  it('counts under an id prefix from the prefix index, and the stats from the counters', async () => {
    expect(anEventId).not.toBe('');
    const byPrefix = await plannedNodes(() => countEventsByStatus(recording, { id: anEventId.slice(0, 8) }));
    expect(indexesUsed(byPrefix)).toContain('webhook_events_listed_event_id_prefix_idx');
    const stats = await plannedNodes(() => statusCounts(recording));
    expect(scansOf(stats, 'webhook_events')).toEqual([]);
    expect(scansOf(stats, 'outbox_messages')).toEqual([]);
  });

  it.each([
    ['the hour', 60_000, 60],
    ['the day', 15 * 60_000, 96],
  ])(
    'draws the overview of %s from the counters and the index of events done minutes later',
    async (_, bucketMs, n) => {
      const window = windowEndingAt(nowMs, bucketMs, n);
      const nodes = await plannedNodes(() => readOverview(recording, window, nowMs));
      expect(indexesUsed(nodes)).toContain('webhook_events_done_minutes_later_idx');
      expect(scansOf(nodes, 'webhook_events')).toEqual([]);
    },
  );

  it('finds an event’s outbox messages by their key’s prefix', async () => {
    const nodes = await plannedNodes(() => messagesOfEvent(recording, { provider: 'stripe', eventId: 'evt_1' }));
    expect(indexesUsed(nodes)).toContain('outbox_messages_deduplication_key_idx');
    expect(scansOf(nodes, 'outbox_messages')).toEqual([]);
  });

  it('reads the /metrics gauges without scanning the events', async () => {
    const nodes = await plannedNodes(() => inboxGauges(recording));
    expect(scansOf(nodes, 'webhook_events')).toEqual([]);
  });

  it.each([
    ['the newest page', {}, 'outbox_messages_status_idx'],
    ['a destination', { destination: 'default' }, 'outbox_messages_status_idx'],
    ['a rare topic', { topic: 'payout.failed' }, 'outbox_messages_topic_created_idx'],
    ['dead ones', { status: 'dead' as const }, 'outbox_messages_status_idx'],
    ['an id prefix', { id: 'a1b2c3' }, 'outbox_messages_pkey'],
  ])('lists outbox messages, %s, from an index', async (_, filter, index) => {
    const nodes = await plannedNodes(() => listOutbox(recording, { ...filter, limit: 50 }));
    expect(indexesUsed(nodes)).toContain(index);
    expect(scansOf(nodes, 'outbox_messages')).toEqual([]);
    const counted = await plannedNodes(() => countOutboxByStatus(recording, filter));
    expect(scansOf(counted, 'outbox_messages')).toEqual([]);
  });

  it('lists every outbox message newest first by merging one range per status, each read only as far as the page', async () => {
    // No index of creation time alone (each is an entry more in every message's insert and relay
    // update): the page merges the newest entries of each status's range of (status, created_at).
    for (const filter of [{}, { destination: 'default' }, { until: new Date(nowMs - DAY_MS) }]) {
      const nodes = await plannedNodes(() => listOutbox(recording, { ...filter, limit: 50 }));
      expectMergedRanges(nodes);
      expect(scansOf(nodes, 'outbox_messages')).toEqual([]);
    }
    // A copy job's walk (ops/jobs/destination-copy.ts) pages the same way.
    const copies = await plannedNodes(() => messagesToSend(recording, { to: 'archive' }, undefined, 50));
    expectMergedRanges(copies);
  });

  it('walks retention’s one index oldest first, each walk only its own classes, instead of the rows already purged', async () => {
    const cutoff = new Date(nowMs - 7 * DAY_MS);
    const dialect = new PgDialect({ casing: 'snake_case' });
    for (const [statement, classes] of [
      [purgeStatements.deleteRows(cutoff, 1000), '{0,2}'],
      [purgeStatements.nullPayloads(cutoff, 1000), '{0,1}'],
    ] as const) {
      // Planned, not run: the purge would change the rows the other plans are read against.
      const nodes = await plannedNodes(async () => {
        const { sql: query, params } = dialect.sqlToQuery(statement);
        sent.push({ query, params });
      });
      const walk = nodes.find((node) => node['Index Name'] === 'webhook_events_retention_idx');
      // The classes bound the range itself: rows whose payload was nulled (or that are kept for their
      // digest) are outside it, not read and filtered out.
      expect(walk?.['Index Cond']).toContain(`= ANY ('${classes}'::integer[])`);
      expect(walk?.['Index Cond']).toContain('COALESCE(completed_at, received_at) <');
      expect(scansOf(nodes, 'webhook_events')).toEqual([]);
    }
  });
});
