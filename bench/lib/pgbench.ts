// The database's own ceiling for our workload: pgbench (PostgreSQL's binary) running the very SQL
// the service issues per synchronous event, at the same concurrency, with no application in between.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const exec = promisify(execFile);

/**
 * BEGIN, the inbox insert, the subscription upsert with the outbox message announcing it (one
 * statement), COMMIT: src/inbox/process.ts, src/domain/subscriptions.ts and src/outbox/enqueue.ts.
 */
const PER_EVENT_SQL = String.raw`\set n random(1, 2000000000)
BEGIN;
insert into webhook_events (provider, event_id, event_type, status, payload, content_digest, occurred_at, completed_at)
  values ('acme', 'pgb_' || :client_id::text || '_' || :n::text, 'subscription.updated', 'completed',
  '{"id":"evt_pgbench","type":"subscription.updated","api_version":"2024-06-01","created":1764460800,"version":1,"data":{"id":"sub_pgbench","status":"active"}}',
  null, now(), now())
  on conflict (provider, event_id) do update set status = excluded.status, completed_at = excluded.completed_at, last_error = null
  where webhook_events.status = 'failed' returning attempt_count, event_id;
with changed as (
  insert into subscriptions (external_id, status, provider_version, updated_at)
  values ('pgb_' || :client_id::text || '_' || :n::text, 'active', 1, now())
  on conflict (external_id) do update set status = excluded.status, provider_version = excluded.provider_version,
  updated_at = excluded.updated_at
  where subscriptions.provider_version < excluded.provider_version and subscriptions.status <> 'canceled'
  returning external_id),
announced as (
  insert into outbox_messages (topic, deduplication_key, payload)
  select 'subscription.changed', concat_ws(':', 'acme', 'pgb_' || :client_id::text || '_' || :n::text, 'subscription.changed'),
  '{"external_id":"sub_pgbench","status":"active","provider_version":1,"updated_at":"2025-11-30T00:00:00.000Z"}'::jsonb
  where exists (select 1 from changed)
  on conflict (deduplication_key) do nothing)
select exists (select 1 from changed) as changed;
END;
`;

// pgbench reads `:name` as a variable even inside string literals: the script keeps colons out of them.

export interface PgbenchResult {
  transactionsPerSecond: number;
  binary: string;
}

/** Runs pgbench for `seconds`; null when no pgbench binary is installed. */
export async function pgbenchCeiling(url: string, clients: number, seconds: number): Promise<PgbenchResult | null> {
  const binary = process.env.PGBENCH ?? 'pgbench';
  const folder = mkdtempSync(join(tmpdir(), 'webhook-inbox-pgbench-'));
  try {
    const script = join(folder, 'per-event.sql');
    writeFileSync(script, PER_EVENT_SQL);
    const threads = String(Math.min(clients, 2));
    const args = [
      '-n',
      '-M',
      'prepared',
      '-c',
      String(clients),
      '-j',
      threads,
      '-T',
      String(seconds),
      '-f',
      script,
      url,
    ];
    const { stdout } = await exec(binary, args, { maxBuffer: 1 << 20 });
    const match = /tps = ([0-9.]+) \(without initial connection time\)/.exec(stdout);
    if (match?.[1] === undefined) throw new Error(`pgbench printed no tps:\n${stdout}`);
    return { transactionsPerSecond: Number(match[1]), binary };
  } catch (error) {
    if ((error as { code?: string }).code === 'ENOENT') return null;
    throw error;
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
}
