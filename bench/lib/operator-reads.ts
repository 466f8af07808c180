// The operator's reads that bench:scale times: every admin API list, filter, search and paging step,
// one event and one message, the counts, the dashboard's pages and /metrics, each sent one at a time
// (an operator's browser, not a load) after a warm-up, with its p50 and p99. Paging steps follow
// the service's own next_cursor; the values searched for (ids, prefixes, senders' own ids) are
// read from the database under test, so each search finds rows where there are rows to find.
import postgres from 'postgres';
import { Pool } from 'undici';
import { percentile, round } from './stats.ts';

export type ReadKind = 'api' | 'dashboard' | 'metrics';

export interface OperatorRead {
  label: string;
  kind: ReadKind;
  /** The path of the `i`-th request (one event read rotates over several events). */
  path: (i: number) => string;
}

export interface ReadTiming {
  label: string;
  kind: ReadKind;
  requests: number;
  p50Ms: number;
  p99Ms: number;
  /**
   * The slowest warm-up request: it holds what a connection pays the first times it runs a
   * statement (its catalog caches, the plan cache's generic plan at the sixth run), kept out of p99.
   */
  warmupMaxMs: number;
  /** Answers other than 200 by status, with the first one's body (truncated). */
  nonOk: Record<string, number>;
  firstNonOk?: string;
  /** A filter the service does not have yet: every answer a 400 naming it. */
  unsupported: boolean;
}

/** What the searches look for, read from the database itself. */
export interface ReadSamples {
  eventKeys: { provider: string; event_id: string }[];
  messageIds: string[];
  idPrefix: string;
  commonType: string;
  /** A sender's own id inside the payload, per sender (`stripe`, `github`, `shopify`). */
  subjects: Record<string, string>;
  /** A day last week, [since, until). */
  day: { since: string; until: string };
}

const DAY_MS = 86_400_000;

/** Samples from `url`'s database; senders' own ids absent there come from `fallback`. */
export async function readSamples(url: string, nowMs: number, fallback?: ReadSamples): Promise<ReadSamples> {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    // A few thousand rows' worth of pages, whatever the size: random events, not the hottest ones.
    const [{ n } = { n: 0 }] = await sql<{ n: number }[]>`
      select greatest(reltuples, 1)::float8 as n from pg_class where oid = 'webhook_events'::regclass`;
    const share = Math.min(100, (4000 / Math.max(n, 1)) * 100);
    const eventKeys = await sql<{ provider: string; event_id: string }[]>`
      select provider, event_id from webhook_events tablesample system (${share}) order by random() limit 40`;
    const messages = await sql<{ id: string }[]>`
      select id::text as id from outbox_messages tablesample system (${Math.min(100, share * 10)})
      order by random() limit 40`;
    const subjects: Record<string, string> = { ...fallback?.subjects };
    const recent = new Date(nowMs - 2 * DAY_MS);
    const paths: Record<string, string> = {
      stripe: '{data,object,id}',
      github: '{repository,full_name}',
      shopify: '{id}',
    };
    for (const [provider, path] of Object.entries(paths)) {
      const [row] = await sql<{ subject: string | null }[]>`
        select payload #>> ${path}::text[] as subject from webhook_events
        where provider = ${provider} and received_at >= ${recent} and payload is not null limit 1`;
      if (row?.subject) subjects[provider] = row.subject;
    }
    const stripeId = eventKeys.find((key) => key.provider === 'stripe')?.event_id;
    const anyId = stripeId ?? eventKeys[0]?.event_id ?? fallback?.idPrefix ?? 'evt_';
    const dayStart = Math.floor((nowMs - 7 * DAY_MS) / DAY_MS) * DAY_MS;
    return {
      eventKeys,
      messageIds: messages.map((row) => row.id),
      idPrefix: anyId.slice(0, 8),
      commonType: 'charge.succeeded',
      subjects,
      day: { since: new Date(dayStart).toISOString(), until: new Date(dayStart + DAY_MS).toISOString() },
    };
  } finally {
    await sql.end({ timeout: 5 });
  }
}

export class ReadClient {
  private readonly pool: Pool;
  constructor(
    origin: string,
    private readonly adminToken: string,
    private readonly metricsToken: string,
  ) {
    this.pool = new Pool(origin, { connections: 1, pipelining: 1 });
  }

  async get(path: string): Promise<{ status: number; body: string; ms: number }> {
    const token = path.startsWith('/metrics') ? this.metricsToken : this.adminToken;
    const started = performance.now();
    const response = await this.pool.request({
      method: 'GET',
      path,
      headers: { authorization: `Bearer ${token}`, accept: 'application/json, text/html' },
    });
    const body = await response.body.text();
    return { status: response.statusCode, body, ms: performance.now() - started };
  }

  /** The next_cursor of `path`'s answer, or undefined at the last page (or on a refusal). */
  async nextCursor(path: string): Promise<string | undefined> {
    const answer = await this.get(path);
    if (answer.status !== 200) return undefined;
    const cursor = (JSON.parse(answer.body) as { next_cursor?: string | null }).next_cursor;
    return cursor ?? undefined;
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}

const withQuery = (path: string, query: Record<string, string>) => `${path}?${new URLSearchParams(query).toString()}`;

/** The reads to time, with paging cursors taken from the service's own answers. */
export async function operatorReads(
  client: ReadClient,
  samples: ReadSamples,
  deepPage: number,
): Promise<OperatorRead[]> {
  const events = '/admin/api/events';
  const secondPage = await client.nextCursor(events);
  let deepCursor: string | undefined;
  let cursor: string | undefined;
  for (let page = 1; page < deepPage; page++) {
    cursor = await client.nextCursor(cursor === undefined ? events : withQuery(events, { cursor }));
    if (cursor === undefined) break;
    deepCursor = cursor;
  }
  const outboxSecond = await client.nextCursor('/admin/api/outbox');
  const fixed = (path: string) => () => path;
  const rotating = <T>(items: readonly T[], path: (item: T) => string) => {
    if (items.length === 0) return undefined;
    return (i: number) => path(items[i % items.length] as T);
  };
  const eventPath = (prefix: string) => (key: { provider: string; event_id: string }) =>
    `${prefix}/${encodeURIComponent(key.provider)}/${encodeURIComponent(key.event_id)}`;
  const reads: (OperatorRead | undefined)[] = [
    { label: 'GET /admin/api/events', kind: 'api', path: fixed(events) },
    secondPage === undefined
      ? undefined
      : { label: '  second page (next_cursor)', kind: 'api', path: fixed(withQuery(events, { cursor: secondPage })) },
    deepCursor === undefined
      ? undefined
      : { label: `  page ${deepPage}`, kind: 'api', path: fixed(withQuery(events, { cursor: deepCursor })) },
    { label: '  ?provider=stripe', kind: 'api', path: fixed(withQuery(events, { provider: 'stripe' })) },
    {
      label: `  ?type=${samples.commonType}`,
      kind: 'api',
      path: fixed(withQuery(events, { type: samples.commonType })),
    },
    { label: '  ?status=failed', kind: 'api', path: fixed(withQuery(events, { status: 'failed' })) },
    { label: '  ?since&until (a day last week)', kind: 'api', path: fixed(withQuery(events, samples.day)) },
    {
      label: "  ?id=<an id's first 8 characters>",
      kind: 'api',
      path: fixed(withQuery(events, { id: samples.idPrefix })),
    },
    ...Object.entries(samples.subjects).map(([provider, subject]) => ({
      label: `  ?subject= (${provider}'s own id)`,
      kind: 'api' as const,
      path: fixed(withQuery(events, { subject })),
    })),
    (() => {
      const path = rotating(samples.eventKeys, eventPath(events));
      return path && { label: 'GET /admin/api/events/:provider/:id', kind: 'api' as const, path };
    })(),
    { label: 'GET /admin/api/outbox', kind: 'api', path: fixed('/admin/api/outbox') },
    { label: '  ?status=dead', kind: 'api', path: fixed('/admin/api/outbox?status=dead') },
    outboxSecond === undefined
      ? undefined
      : {
          label: '  outbox second page (next_cursor)',
          kind: 'api',
          path: fixed(withQuery('/admin/api/outbox', { cursor: outboxSecond })),
        },
    (() => {
      const path = rotating(samples.messageIds, (id) => `/admin/api/outbox/${id}`);
      return path && { label: 'GET /admin/api/outbox/:id', kind: 'api' as const, path };
    })(),
    { label: 'GET /admin/api/stats', kind: 'api', path: fixed('/admin/api/stats') },
    { label: 'dashboard /admin?range=hour', kind: 'dashboard', path: fixed('/admin?range=hour') },
    { label: 'dashboard /admin?range=day', kind: 'dashboard', path: fixed('/admin?range=day') },
    { label: 'dashboard /admin/events', kind: 'dashboard', path: fixed('/admin/events') },
    (() => {
      const path = rotating(samples.eventKeys, eventPath('/admin/events'));
      return path && { label: 'dashboard /admin/events/:provider/:id', kind: 'dashboard' as const, path };
    })(),
    { label: 'dashboard /admin/outbox', kind: 'dashboard', path: fixed('/admin/outbox') },
    { label: 'GET /metrics', kind: 'metrics', path: fixed('/metrics') },
  ];
  return reads.filter((read): read is OperatorRead => read !== undefined);
}

export interface TimingOptions {
  warmup: number;
  requests: number;
  /** A read stops early (after at least `minRequests`) once it has taken this long. */
  budgetMs: number;
  minRequests: number;
}

/** Times each read in turn: `warmup` untimed requests, then `requests` timed ones (or fewer, see budgetMs). */
export async function timeReads(
  client: ReadClient,
  reads: readonly OperatorRead[],
  options: TimingOptions,
  log: (line: string) => void,
): Promise<ReadTiming[]> {
  const timings: ReadTiming[] = [];
  for (const read of reads) {
    let warmupMaxMs = 0;
    const warming = performance.now();
    for (let i = 0; i < options.warmup && performance.now() - warming < options.budgetMs; i++) {
      warmupMaxMs = Math.max(warmupMaxMs, (await client.get(read.path(i))).ms);
    }
    const latencies: number[] = [];
    const nonOk: Record<string, number> = {};
    let firstNonOk: string | undefined;
    const started = performance.now();
    for (let i = 0; i < options.requests; i++) {
      if (i >= options.minRequests && performance.now() - started > options.budgetMs) break;
      const answer = await client.get(read.path(options.warmup + i));
      latencies.push(answer.ms);
      if (answer.status !== 200) {
        nonOk[answer.status] = (nonOk[answer.status] ?? 0) + 1;
        firstNonOk ??= answer.body.slice(0, 200);
      }
    }
    const samples = Float64Array.from(latencies);
    const timing: ReadTiming = {
      label: read.label,
      kind: read.kind,
      requests: latencies.length,
      p50Ms: round(percentile(samples, 50)),
      p99Ms: round(percentile(samples, 99)),
      warmupMaxMs: round(warmupMaxMs),
      nonOk,
      ...(firstNonOk === undefined ? {} : { firstNonOk }),
      unsupported: nonOk[400] === latencies.length && /invalid_request/.test(firstNonOk ?? ''),
    };
    timings.push(timing);
    log(
      `  ${read.label.trim()}: p50 ${timing.p50Ms} ms, p99 ${timing.p99Ms} ms over ${timing.requests}, ` +
        `slowest of ${options.warmup} warm-up ${timing.warmupMaxMs} ms` +
        (Object.keys(nonOk).length > 0 ? ` (non-200: ${JSON.stringify(nonOk)})` : ''),
    );
  }
  return timings;
}
