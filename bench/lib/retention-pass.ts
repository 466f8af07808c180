// bench:scale's retention pass: the service's own purge (purgeByRetention, what the hourly schedule
// and `webhook-inbox purge` run) with a retention one day shorter than the oldest stored row, so it
// deletes about a day of rows, while the caller keeps intake load on. Meanwhile a sampler reads
// pg_stat_activity every few milliseconds for backends waiting on a heavyweight lock: a wait of one
// of the service's connections (the intake's claim) is what retention must never cause.
import { setTimeout as sleep } from 'node:timers/promises';
import postgres from 'postgres';
import { connectDatabase } from '../../src/db/client.ts';
import { type PurgeSummary, purgeByRetention } from '../../src/inbox/retention.ts';
import { round } from './stats.ts';

const DAY_MS = 86_400_000;
const SAMPLE_INTERVAL_MS = 10;

export interface RetentionPlan {
  /** EVENT_RETENTION_DAYS for the pass. */
  retentionDays: number;
  /** Rows past that retention when planned (deletable: finished, no content digest). */
  expectedRows: number;
}

/** The retention that leaves out about the oldest day of deletable rows. */
export async function planRetention(url: string, nowMs: number): Promise<RetentionPlan> {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    const deletable = sql`content_digest is null and status in ('completed', 'ignored', 'dead_letter')`;
    const [oldest] = await sql<{ at: Date | null }[]>`
      select min(coalesce(completed_at, received_at)) as at from webhook_events where ${deletable}`;
    const ageDays = oldest?.at ? (nowMs - oldest.at.getTime()) / DAY_MS : 0;
    const retentionDays = Math.max(1, Math.round(ageDays - 1));
    const cutoff = new Date(nowMs - retentionDays * DAY_MS);
    const [count] = await sql<{ n: number }[]>`
      select count(*)::int as n from webhook_events
      where ${deletable} and coalesce(completed_at, received_at) < ${cutoff}`;
    return { retentionDays, expectedRows: count?.n ?? 0 };
  } finally {
    await sql.end({ timeout: 5 });
  }
}

export interface LockWaits {
  samples: number;
  /** Samples in which one of the service's connections waited on a lock, and how many distinct ones. */
  serviceWaitSamples: number;
  serviceWaitingBackends: number;
  /**
   * Samples in which a service connection waited on a lock the purge held (the purge among
   * `pg_blocking_pids`): what the target forbids. The other waits are between the service's own
   * connections, e.g. two inserts extending the table at once, which happen without a purge too.
   */
  blockedByPurgeSamples: number;
  /** The longest run of consecutive samples one service backend was seen waiting, in ms (at sampling resolution). */
  longestServiceWaitMs: number;
  /** Samples in which the purge itself waited. */
  purgeWaitSamples: number;
  /** A few of the statements seen waiting, with what they waited for. */
  examples: string[];
}

export interface RetentionPassResult {
  summary: PurgeSummary;
  elapsedMs: number;
  locks: LockWaits;
}

/**
 * Runs the purge on `url` with `plan`'s retention (payloads after `payloadDays`), stopping after
 * `budgetMs` as the schedule's run does, and samples lock waits meanwhile. `serviceApplication` is
 * the application_name the service's connections carry.
 */
export async function retentionPass(
  url: string,
  plan: RetentionPlan,
  options: { payloadDays: number; budgetMs: number; serviceApplication: string },
): Promise<RetentionPassResult> {
  const handle = connectDatabase({ url, maxConnections: 1, statementTimeoutMs: 60_000 });
  const sampler = postgres(url, {
    max: 1,
    onnotice: () => {},
    connection: { application_name: 'bench-scale-sampler' },
  });
  const stop = new AbortController();
  const locks: LockWaits = {
    samples: 0,
    serviceWaitSamples: 0,
    blockedByPurgeSamples: 0,
    serviceWaitingBackends: 0,
    longestServiceWaitMs: 0,
    purgeWaitSamples: 0,
    examples: [],
  };
  try {
    const [self] = await handle.sql<{ pid: number }[]>`select pg_backend_pid() as pid`;
    const purgePid = self?.pid ?? -1;
    const waiting = new Set<number>();
    const runs = new Map<number, number>();
    const sample = async () => {
      while (!stop.signal.aborted) {
        const rows = await sampler<
          { pid: number; application_name: string; wait_event: string; query: string; blockers: number[] }[]
        >`select pid, application_name, wait_event, left(query, 100) as query, pg_blocking_pids(pid) as blockers
          from pg_stat_activity
          where datname = current_database() and wait_event_type = 'Lock' and pid <> pg_backend_pid()`;
        locks.samples++;
        const seen = new Set<number>();
        let blockedByPurge = false;
        for (const row of rows) {
          if (row.pid === purgePid) {
            locks.purgeWaitSamples++;
          } else if (row.application_name === options.serviceApplication) {
            seen.add(row.pid);
            waiting.add(row.pid);
            if (row.blockers.includes(purgePid)) blockedByPurge = true;
          }
          const example = `${row.pid === purgePid ? 'purge' : row.application_name} waited (${row.wait_event}, blocked by ${row.blockers.join(',')}): ${row.query}`;
          if (locks.examples.length < 5 && !locks.examples.includes(example)) locks.examples.push(example);
        }
        if (seen.size > 0) locks.serviceWaitSamples++;
        if (blockedByPurge) locks.blockedByPurgeSamples++;
        for (const pid of [...runs.keys()]) if (!seen.has(pid)) runs.delete(pid);
        for (const pid of seen) {
          const run = (runs.get(pid) ?? 0) + 1;
          runs.set(pid, run);
          locks.longestServiceWaitMs = Math.max(locks.longestServiceWaitMs, run * SAMPLE_INTERVAL_MS);
        }
        await sleep(SAMPLE_INTERVAL_MS);
      }
    };
    const sampling = sample();
    const started = performance.now();
    let summary: PurgeSummary;
    try {
      summary = await purgeByRetention(
        handle.db,
        { PAYLOAD_RETENTION_DAYS: options.payloadDays, EVENT_RETENTION_DAYS: plan.retentionDays },
        { nowMs: Date.now, budgetMs: options.budgetMs },
      );
    } finally {
      stop.abort();
      await sampling;
    }
    locks.serviceWaitingBackends = waiting.size;
    return { summary, elapsedMs: round(performance.now() - started, 1), locks };
  } finally {
    await sampler.end({ timeout: 5 });
    await handle.close();
  }
}
