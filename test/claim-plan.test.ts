// A performance guard, read from the planner (EXPLAIN): a failure means claims get slower as the
// queue grows, not that they claim the wrong rows (other tests cover which rows are claimed).
// The claims of the inbox worker and the outbox relay are planned as a walk of their queue's partial
// index in order, even when the statistics still describe an empty queue (a burst arrived since the
// last ANALYZE). Otherwise the planner reads every waiting row and sorts them to claim one batch.
// And once the statistics know the table, the outbox claim still finds its rows by id, and the
// relay's `published` update, planned once for every batch, joins the batch's ids to the table.
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import type { Database, Executor } from '../src/db/client.ts';
import { claimInQueueOrder, takeLease } from '../src/db/lease.ts';
import { claimDueStatement as inboxClaim } from '../src/inbox/event-rows.ts';
import { markPublishedStatement, claimMessagesStatement as outboxClaim } from '../src/outbox/message-rows.ts';
import { useTestDatabase } from './helpers/database.ts';

const { sql: client, db } = await useTestDatabase();
const BURST = 5000;

// A burst the statistics have not seen: autovacuum (and so autoanalyze) is off for both queues.
await client`alter table webhook_events set (autovacuum_enabled = false)`;
await client`alter table outbox_messages set (autovacuum_enabled = false)`;
await client`
  insert into webhook_events (provider, event_id, event_type, status, payload, available_at)
  select 'acme', 'evt_burst_' || g, 'subscription.updated', 'received', '{}'::jsonb, now() - interval '1 minute'
  from generate_series(1, ${BURST}) g`;
await client`
  insert into outbox_messages (topic, deduplication_key, payload, available_at)
  select 'subscription.changed', 'burst:' || g, '{}'::jsonb, now() - interval '1 minute'
  from generate_series(1, ${BURST}) g`;

interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  Plans?: PlanNode[];
}

function nodesOf(plan: PlanNode): PlanNode[] {
  return [plan, ...(plan.Plans ?? []).flatMap(nodesOf)];
}

/** The statement with its parameters written in as literals (EXPLAIN plans one statement, unbound). */
function inlined(statement: { toSQL(): { sql: string; params: unknown[] } }): string {
  const { sql: text, params } = statement.toSQL();
  return text.replace(/\$(\d+)/g, (_, index: string) => {
    const value = params[Number(index) - 1];
    return typeof value === 'number' ? String(value) : `'${String(value).replaceAll("'", "''")}'`;
  });
}

async function planOf(tx: Executor, statement: Explainable): Promise<PlanNode[]> {
  const [row] = await tx.execute<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(
    sql.raw(`explain (format json) ${inlined(statement)}`),
  );
  const plan = row?.['QUERY PLAN'][0].Plan;
  if (plan === undefined) throw new Error('no plan');
  return nodesOf(plan);
}

/** The claim's plan as the worker or relay runs it, and as a plain transaction would plan it. */
type Explainable = { toSQL(): { sql: string; params: unknown[] } };

async function plans(database: Database, build: (tx: Executor) => Explainable) {
  const ordered = await claimInQueueOrder(database, (tx) => planOf(tx, build(tx)));
  const plain = await database.transaction((tx) => planOf(tx, build(tx)));
  return { ordered, plain };
}

const lease = takeLease('plan-check', Date.now(), 30_000);
const types = (nodes: PlanNode[]) => nodes.map((node) => node['Node Type']);

describe('claim plans with stale statistics', () => {
  it('the inbox worker walks webhook_events_claimable_idx in order', async () => {
    const { ordered, plain } = await plans(db, (tx) => inboxClaim(tx, lease, new Date(), 25));
    expect(ordered.filter((node) => node['Node Type'] === 'Index Scan').map((node) => node['Index Name'])).toContain(
      'webhook_events_claimable_idx',
    );
    expect(types(ordered)).not.toContain('Bitmap Heap Scan');
    expect(types(ordered)).not.toContain('Sort');
    // What the settings prevent: the whole backlog read and sorted to take 25 rows.
    expect(types(plain).some((type) => type === 'Bitmap Heap Scan' || type === 'Sort')).toBe(true);
  });

  it("the outbox relay walks its destination's part of outbox_messages_destination_pending_idx in order", async () => {
    const { ordered } = await plans(db, (tx) => outboxClaim(tx, 'default', lease, new Date(), 500));
    expect(ordered.filter((node) => node['Node Type'] === 'Index Scan').map((node) => node['Index Name'])).toContain(
      'outbox_messages_destination_pending_idx',
    );
    expect(types(ordered)).not.toContain('Bitmap Heap Scan');
    expect(types(ordered)).not.toContain('Sort');
  });

  it('the outbox relay finds the rows it claims by id, not by reading the whole table', async () => {
    // With statistics that know the table's size, `id in (…)` was planned as a hash join over a
    // sequential scan of every row, published ones included, on every claim.
    await client`analyze outbox_messages`;
    const { ordered } = await plans(db, (tx) => outboxClaim(tx, 'default', lease, new Date(), 500));
    expect(types(ordered)).not.toContain('Seq Scan');
    expect(ordered.filter((node) => node['Node Type'] === 'Index Scan').map((node) => node['Index Name'])).toContain(
      'outbox_messages_pkey',
    );
  });

  it('leaves the settings behind with the claim transaction', async () => {
    await claimInQueueOrder(db, async (tx) => tx.execute(sql`select 1`));
    const [row] = await db.execute<{ bitmap: string; sort: string }>(
      sql`select current_setting('enable_bitmapscan') as bitmap, current_setting('enable_sort') as sort`,
    );
    expect(row).toEqual({ bitmap: 'on', sort: 'on' });
  });
});

/** A literal for EXECUTE: what Drizzle binds (texts, numbers, nulls) written into the statement. */
const literal = (value: unknown) =>
  value === null ? 'null' : typeof value === 'number' ? String(value) : `'${String(value).replaceAll("'", "''")}'`;

/**
 * The plan a named prepared statement runs once PostgreSQL settles on its generic plan (after its
 * first executions, as the relay's hot statements do): planned for any parameters, a batch of any size.
 */
async function genericPlanOf(statement: Explainable): Promise<PlanNode[]> {
  const { sql: text, params } = statement.toSQL();
  return client.begin(async (tx) => {
    await tx.unsafe('set local plan_cache_mode = force_generic_plan');
    await tx.unsafe(`prepare generic_plan_check as ${text}`);
    const [row] = await tx.unsafe(
      `explain (format json) execute generic_plan_check(${params.map(literal).join(', ')})`,
    );
    await tx.unsafe('deallocate generic_plan_check');
    const plan = (row?.['QUERY PLAN'] as [{ Plan: PlanNode }] | undefined)?.[0].Plan;
    if (plan === undefined) throw new Error('no plan');
    return nodesOf(plan);
  });
}

describe("the relay's published update", () => {
  it('joins the batch to the table, never testing each pending message against the whole batch', async () => {
    // A batch leased from the burst: as a relay publishes it while thousands more wait.
    const leased = await client<{ id: string }[]>`
      update outbox_messages set locked_by = 'plan-check', locked_until = now() + interval '1 minute'
      where id in (select id from outbox_messages where status = 'pending' order by created_at limit 500)
      returning id::text as id`;
    const nodes = await genericPlanOf(
      markPublishedStatement(
        db,
        'plan-check',
        leased.map((row) => row.id),
        new Date(),
      ),
    );
    // Tested as `id = any(ids)` against every pending row: the backlog times the batch, 45-85 ms a
    // batch of 500 with 4,000 pending (docs/benchmarks.md).
    expect(JSON.stringify(nodes)).not.toContain('ANY');
    expect(types(nodes).some((type) => ['Hash Join', 'Nested Loop', 'Merge Join'].includes(type))).toBe(true);
  });
});
