// Gauges read from the database when /metrics is scraped: the same figures from every replica (and
// every Workers isolate), unlike the in-process counters.
import { sql } from 'drizzle-orm';
import type { Executor } from '../../db/client.ts';
import type { GaugeSample } from '../../lib/metrics.ts';
import { outboxStats } from '../../outbox/stats.ts';
import { countEventsFromCounters } from './event-counts.ts';
import { oldestUnprocessedReceivedAt } from './events.ts';

/** Statuses that are not done: the ones worth watching (terminal rows are not). */
const WATCHED_STATUSES = ['received', 'processing', 'failed', 'parked', 'dead_letter'] as const;

export async function inboxGauges(db: Executor): Promise<GaugeSample[]> {
  // From the event counters (all time, exact): failed and dead-lettered events are kept for as long
  // as retention allows, too many to count on every scrape.
  const [counts, [oldest]] = await Promise.all([
    countEventsFromCounters(db, {}),
    db.execute<{ seconds: string }>(
      sql`select coalesce(extract(epoch from now() - ${oldestUnprocessedReceivedAt}), 0) as seconds`,
    ),
  ]);
  const samples: GaugeSample[] = WATCHED_STATUSES.map((status) => ({
    name: 'webhook_inbox_events',
    help: 'Inbox rows that are not done, by status.',
    labels: { status },
    value: counts[status] ?? 0,
  }));
  samples.push({
    name: 'webhook_inbox_oldest_unprocessed_age_seconds',
    help: 'Age of the oldest received, processing or failed event.',
    value: Number(oldest?.seconds ?? 0),
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
