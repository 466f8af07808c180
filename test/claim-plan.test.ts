// A performance guard, read from the planner (EXPLAIN): a failure means claims get slower as the
// queue grows, not that they claim the wrong rows (other tests cover which rows are claimed).
// The claims of the inbox worker and the outbox relay are planned as a walk of their queue's partial
// index in order, even when the statistics still describe an empty queue (a burst arrived since the
// last ANALYZE). Otherwise the planner reads every waiting row and sorts them to claim one batch.
// And once the statistics know the table, the outbox claim still finds its rows by id.
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import type { Database, Executor } from '../src/db/client.ts';
import { claimInQueueOrder, takeLease } from '../src/db/lease.ts';
import { claimDueStatement as inboxClaim } from '../src/inbox/event-rows.ts';
import { claimMessagesStatement as outboxClaim } from '../src/outbox/message-rows.ts';
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
