// Gauges read from the database when /metrics is scraped: the same figures from every replica (and
// every Workers isolate), unlike the in-process counters.
import { sql } from 'drizzle-orm';
import type { Executor } from '../db/client.ts';
import type { GaugeSample } from '../lib/metrics.ts';
import { outboxStats } from '../outbox/stats.ts';
import { oldestUnprocessedReceivedAt } from './events.ts';

/** Statuses that are not done: small sets worth counting on every scrape (terminal rows are not). */
const WATCHED_STATUSES = ['received', 'processing', 'failed', 'parked', 'dead_letter'] as const;

export async function inboxGauges(db: Executor): Promise<GaugeSample[]> {
  const [row] = await db.execute<Record<(typeof WATCHED_STATUSES)[number] | 'oldest_unprocessed_seconds', string>>(sql`
    select
      count(*) filter (where status = 'received') as received,
      count(*) filter (where status = 'processing') as processing,
      count(*) filter (where status = 'failed') as failed,
      count(*) filter (where status = 'parked') as parked,
      count(*) filter (where status = 'dead_letter') as dead_letter,
      coalesce(extract(epoch from now() - ${oldestUnprocessedReceivedAt}), 0) as oldest_unprocessed_seconds
    from webhook_events
    where status in ('received', 'processing', 'failed', 'parked', 'dead_letter')`);
  const samples: GaugeSample[] = WATCHED_STATUSES.map((status) => ({
    name: 'webhook_inbox_events',
    help: 'Inbox rows that are not done, by status.',
    labels: { status },
    value: Number(row?.[status] ?? 0),
  }));
  samples.push({
    name: 'webhook_inbox_oldest_unprocessed_age_seconds',
    help: 'Age of the oldest received, processing or failed event.',
    value: Number(row?.oldest_unprocessed_seconds ?? 0),
  });
  return samples;
}

export async function outboxGauges(db: Executor, nowMs: number): Promise<GaugeSample[]> {
  const stats = await outboxStats(db, nowMs);
  const help = 'Outbox messages waiting for the relay, or dead.';
  return [
    { name: 'webhook_outbox_messages', help, labels: { status: 'pending' }, value: stats.pending },
    { name: 'webhook_outbox_messages', help, labels: { status: 'dead' }, value: stats.dead },
    {
      name: 'webhook_outbox_oldest_pending_age_seconds',
      help: 'Age of the oldest unpublished outbox message.',
      value: stats.oldestPendingAgeSeconds,
    },
  ];
}
