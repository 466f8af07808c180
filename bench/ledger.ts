// `npm run bench:ledger`: the per-delivery cost ledger (docs/benchmarks.md): for each step a delivery
// goes through, the service's CPU and PostgreSQL's CPU per delivery, measured, in sync and async mode.
//
// - Service CPU: the service (`npm start`'s script) under a load of signed, unique acme events
//   (subscription.updated, 1,000 subscriptions, rising versions: every event changes its subscription
//   and writes an outbox message). Its threads' run time per delivery comes from /proc (schedstat:
//   nanoseconds) in ROUNDS runs; the event loop's is split by step in the proportions of a V8 CPU
//   profile taken in one more run (bench/lib/ledger-steps.ts says which code is which step);
//   proportions hold up under machine load where absolute times do not. The libuv pool's time (Web
//   Crypto's HMAC) is verification's; V8's helper threads (GC, compiler) go to the rest.
// - PostgreSQL CPU: the same runs' backends (pg_stat_activity on the bench database) give the total
//   per delivery; each step's own statements are then replayed on one backend, in batches of the size
//   the run produced (the mean intake batch; the worker's batch; the delivery log's rows per flush),
//   and that backend's run time read. Five layers alternate batch by batch (the claim, uncounted and
//   counted; + the domain write, counted; + the outbox, uncounted and counted: counter triggers off
//   on a second backend, session_replication_role replica), so a step's cost is a difference of layers (splitLayers). The
//   delivery log is its flush of a run's worth of records; the gates' cost is one query per TTL per
//   process, divided by the deliveries of that time. What the replays do not explain (connection
//   chatter, background schedules, noise) is the rest.
//
// Environment: EVENTS (4000 per measured run), ROUNDS (3 load runs), REPLAY_ROUNDS (7; 3 x ROUNDS
// when fewer), CONCURRENCY (32), MODES (sync,async), BENCH_DATABASE_URL (a local server to make a
// throw-away database on; else embedded PostgreSQL). EVENTS=200 ROUNDS=1 is a smoke run of a few
// seconds per mode. Writes bench/results/ledger-<time>.json.
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'drizzle-orm';
import postgres from 'postgres';
import { Pool } from 'undici';
import { connectDatabase, type Database, type Executor } from '../src/db/client.ts';
import { takeLease } from '../src/db/lease.ts';
import { executePrepared } from '../src/db/prepared.ts';
import { limitStatements } from '../src/db/timeouts.ts';
import { applySubscriptionChange, type SubscriptionChange, subscriptionChanged } from '../src/domain/subscriptions.ts';
import { backlogGate } from '../src/inbox/accept.ts';
import { DELIVERY_LOG_CAP, type DeliveryRecord, writeDeliveries } from '../src/inbox/delivery-log.ts';
import {
  type Arrival,
  type InboxEvent,
  insertOrTakeBackAll,
  lockDueBatch,
  markApplied,
} from '../src/inbox/event-rows.ts';
import { senderPauseGate } from '../src/inbox/pause-gate.ts';
import { DEFAULT_WORKER_BATCH_SIZE } from '../src/inbox/worker.ts';
import { signedAcmeEvent } from './lib/acme.ts';
import { attributeCpuProfile, type SampleWindow } from './lib/cpuprofile.ts';
import { type BenchDatabase, freshDatabase } from './lib/database.ts';
import { intFromEnv } from './lib/env.ts';
import { ledgerClassifier, STEPS, type Step } from './lib/ledger-steps.ts';
import { type PreparedRequest, runLoad } from './lib/load.ts';
import { runNsByThreadName, runNsOf } from './lib/proc.ts';
import { runContext, writeResult } from './lib/results.ts';
import { intakeServiceEnv, REPO_ROOT, startService } from './lib/service.ts';
import { round } from './lib/stats.ts';

type Mode = 'sync' | 'async';

const SUBSCRIPTIONS = 1000;
/** The service's DELIVERY_LOG_FLUSH_MS default: how many deliveries one flush carries. */
const DELIVERY_LOG_FLUSH_MS = 250;
/** The gates' TTL (PAUSE_CHECK_TTL_MS, BACKLOG_CHECK_TTL_MS): one query per second per process. */
const GATE_TTL_MS = 1000;

const rounds = intFromEnv('ROUNDS', 3, 1);
const settings = {
  events: intFromEnv('EVENTS', 4000, 20),
  rounds,
  /** Rounds of each replay: cheap beside a load run, and the medians need them on a busy machine. */
  replayRounds: intFromEnv('REPLAY_ROUNDS', Math.min(7, 3 * rounds), 1),
  concurrency: intFromEnv('CONCURRENCY', 32, 1),
  modes: (process.env.MODES || 'sync,async').split(',').map((mode): Mode => {
    if (mode !== 'sync' && mode !== 'async') throw new Error(`MODES: sync and/or async, got "${mode}"`);
    return mode;
  }),
};

const secret = randomBytes(16).toString('hex');
const runId = randomBytes(4).toString('hex');
/** Every event of the run has its own index: ids stay unique and versions keep rising. */
let nextIndex = 0;

/** `tag` names the batch: its ids are `evt_<run><tag>_<index>`, so its events can be counted apart. */
function acmeEvents(count: number, tag: string): PreparedRequest[] {
  const nowSeconds = Math.floor(Date.now() / 1000);
  return Array.from({ length: count }, () => {
    const index = nextIndex++;
    return signedAcmeEvent({
      secret,
      runId: `${runId}${tag}`,
      index,
      nowSeconds,
      subscription: `sub_${runId}_${index % SUBSCRIPTIONS}`,
      version: index + 1,
    });
  });
}

const median = (values: readonly number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length === 0 ? Number.NaN : (sorted[Math.floor(sorted.length / 2)] as number);
};
const sum = (values: Iterable<number>) => [...values].reduce((total, value) => total + value, 0);

interface LoadFigures {
  deliveries: number;
  acceptedPerSecond: number;
  appliedPerSecond: number;
  /** Nanoseconds per delivery, by thread name. */
  serviceNsByThread: Record<string, number>;
  /** The measured load's span, to take the profile's samples from. */
  window: SampleWindow;
  postgresNs: number;
  meanIntakeBatch: number;
}

/** The service's backends on the bench database (its pools share one application_name). */
async function serviceBackends(admin: postgres.Sql, database: string): Promise<number[]> {
  const rows = await admin<{ pid: number }[]>`
    select pid from pg_stat_activity where datname = ${database} and application_name = 'webhook-inbox'`;
  return rows.map((row) => row.pid);
}

async function completedSince(admin: postgres.Sql, prefix: string): Promise<number> {
  const [row] = await admin<{ n: number }[]>`
    select count(*)::int as n from webhook_events where status = 'completed' and event_id like ${`${prefix}%`}`;
  return row?.n ?? 0;
}

/** The mean of the service's intake batch-size histogram (sum / count) from /metrics. */
async function meanIntakeBatch(origin: string): Promise<number> {
  const text = await (await fetch(`${origin}/metrics`)).text();
  const value = (name: string) => Number(new RegExp(`^${name}(?:\\{\\})? (\\S+)$`, 'm').exec(text)?.[1] ?? Number.NaN);
  return value('webhook_intake_batch_size_sum') / value('webhook_intake_batch_size_count');
}

async function loadRun(
  database: BenchDatabase,
  admin: postgres.Sql,
  mode: Mode,
  logDir: string,
  profileDir?: string,
): Promise<LoadFigures> {
  const service = await startService({
    env: intakeServiceEnv(database.url, secret, { PROCESSING_MODE: mode, LOG_LEVEL: 'warn' }),
    stdoutFile: join(logDir, 'service.stdout.log'),
    stderrFile: join(logDir, 'service.stderr.log'),
    ...(profileDir === undefined ? {} : { nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] }),
  });
  const pool = new Pool(service.origin, { connections: settings.concurrency, pipelining: 1 });
  const databaseName = new URL(database.url).pathname.slice(1);
  try {
    const send = async (requests: PreparedRequest[]) => {
      const load = await runLoad({
        pool,
        requests,
        concurrency: settings.concurrency,
        accept: (status) => status === 200 || status === 202,
      });
      if (load.rejections.length > 0) {
        throw new Error(`${load.rejections.length} deliveries not accepted: ${load.rejections[0]?.detail}`);
      }
      return load;
    };
    const tag = `${mode}${nextIndex}`;
    const warmup = Math.max(20, Math.floor(settings.events / 4));
    await send(acmeEvents(warmup, `${tag}w`));
    if (mode === 'async') await waitApplied(admin, `evt_${runId}${tag}w_`, warmup);
    const requests = acmeEvents(settings.events, `${tag}m`);
    const backendsBefore = await serviceBackends(admin, databaseName);
    const postgresBefore = runNsOf(backendsBefore);
    const serviceBefore = runNsByThreadName(service.pid);
    const started = performance.now();
    const fromUs = monotonicUs();
    const load = await send(requests);
    let appliedMs = load.elapsedMs;
    if (mode === 'async') {
      await waitApplied(admin, `evt_${runId}${tag}m_`, settings.events);
      appliedMs = performance.now() - started;
    }
    const window = { fromUs, toUs: monotonicUs() };
    const serviceAfter = runNsByThreadName(service.pid);
    const backendsAfter = await serviceBackends(admin, databaseName);
    const postgresAfter = runNsOf(new Set([...backendsBefore, ...backendsAfter]));
    const postgresNs = sum([...postgresAfter].map(([pid, ns]) => Math.max(0, ns - (postgresBefore.get(pid) ?? 0))));
    const serviceNsByThread: Record<string, number> = {};
    for (const [name, ns] of serviceAfter) {
      serviceNsByThread[name] = (ns - (serviceBefore.get(name) ?? 0)) / load.accepted;
    }
    return {
      window,
      deliveries: load.accepted,
      acceptedPerSecond: load.accepted / (load.elapsedMs / 1000),
      appliedPerSecond: load.accepted / (appliedMs / 1000),
      serviceNsByThread,
      postgresNs: postgresNs / load.accepted,
      meanIntakeBatch: await meanIntakeBatch(service.origin),
    };
  } finally {
    await pool.close();
    await service.stop();
  }
}

const monotonicUs = () => Number(process.hrtime.bigint() / 1000n);

/** Async mode: waits until `count` events whose ids start with `prefix` are completed by the worker. */
async function waitApplied(admin: postgres.Sql, prefix: string, count: number): Promise<void> {
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    if ((await completedSince(admin, prefix)) >= count) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error('the async worker did not apply the run within 120 s');
}

// ---- Replays: each step's statements on one backend ----

interface Probe {
  db: Database;
  pid: number;
  close(): Promise<void>;
}

async function openProbe(url: string): Promise<Probe> {
  const handle = connectDatabase({ url, maxConnections: 1, statementTimeoutMs: 60_000 });
  const [row] = await executePrepared<{ pid: number }>(handle.db, sql`select pg_backend_pid() as pid`);
  if (row === undefined) throw new Error('no backend pid');
  return { db: handle.db, pid: row.pid, close: handle.close };
}

interface ReplayEvent {
  provider: string;
  eventId: string;
  eventType: string;
  payloadText: string;
  payload: InboxEvent['payload'];
  change: SubscriptionChange;
}

function replayEvents(count: number): ReplayEvent[] {
  return Array.from({ length: count }, () => {
    const index = nextIndex++;
    const externalId = `sub_${runId}_${index % SUBSCRIPTIONS}`;
    const payload = {
      id: `evt_${runId}_${index}`,
      type: 'subscription.updated',
      version: index + 1,
      data: { id: externalId, status: 'active' },
    };
    return {
      provider: 'acme',
      eventId: payload.id,
      eventType: payload.type,
      payloadText: JSON.stringify(payload),
      payload,
      change: { externalId, status: 'active', providerVersion: index + 1, occurredAt: new Date() },
    };
  });
}

const arriving = (events: readonly ReplayEvent[], arrival: Arrival) =>
  events.map((event) => ({
    event: { ...event, occurredAt: event.change.occurredAt, unknownSchemaVersion: false },
    arrival,
  }));

async function applyChanges(tx: Executor, events: readonly ReplayEvent[], announce: boolean): Promise<void> {
  await Promise.all(
    events.map((event) =>
      applySubscriptionChange(
        tx,
        event.change,
        announce ? { source: { ...event, traceparent: null }, message: subscriptionChanged(event.change) } : undefined,
      ),
    ),
  );
}

type Layer = {
  name: string;
  /** Whether the counter triggers fire (session_replication_role origin) or not (replica). */
  counters: boolean;
  /** Setup outside the measured backend (another connection), then the measured work. */
  prepare?: (admin: postgres.Sql, events: readonly ReplayEvent[]) => Promise<void>;
  run: (db: Database, events: readonly ReplayEvent[]) => Promise<void>;
};

/**
 * A second probe whose counter triggers never fire (session_replication_role replica: as a replica
 * applies changes, ordinary triggers do not run). Set once: changing it flushes the session's plan
 * cache, and DDL (DISABLE TRIGGER) would flush every session's, so uncounted layers run here and
 * counted ones on the first probe, each backend keeping its plans.
 */
async function openUncountedProbe(url: string): Promise<Probe> {
  const probe = await openProbe(url);
  await executePrepared(probe.db, sql`select set_config('session_replication_role', 'replica', false)`);
  return probe;
}

/**
 * Each layer's backend nanoseconds per delivery: layers alternate batch by batch, so drift in the
 * machine's load falls on all of them alike; the median of the rounds' means.
 */
async function replayLayers(
  admin: postgres.Sql,
  probes: { counted: Probe; uncounted: Probe },
  layers: readonly Layer[],
  batch: number,
  deliveries: number,
): Promise<Map<string, number>> {
  const batches = Math.max(2, Math.ceil(deliveries / batch));
  const samples = new Map<string, number[]>(layers.map((layer) => [layer.name, []]));
  const runLayer = async (layer: Layer) => {
    const events = replayEvents(batch);
    await layer.prepare?.(admin, events);
    const probe = layer.counters ? probes.counted : probes.uncounted;
    const before = runNsOf([probe.pid]).get(probe.pid) ?? 0;
    await layer.run(probe.db, events);
    return (runNsOf([probe.pid]).get(probe.pid) ?? 0) - before;
  };
  // Unmeasured: every statement prepared and planned.
  for (const layer of layers) await runLayer(layer);
  for (let r = 0; r < settings.replayRounds; r++) {
    const ns = layers.map(() => 0);
    for (let b = 0; b < batches; b++) {
      for (const [index, layer] of layers.entries()) ns[index] = (ns[index] ?? 0) + (await runLayer(layer));
    }
    for (const [index, layer] of layers.entries()) samples.get(layer.name)?.push((ns[index] ?? 0) / (batches * batch));
  }
  return new Map([...samples].map(([name, values]) => [name, median(values)]));
}

const COMPLETED: Arrival = { status: 'completed' };

/** The sync intake's transaction, layer by layer (committer.ts #commit). */
function syncLayers(): Layer[] {
  const transaction =
    (domain: 'none' | 'change' | 'announce') => async (db: Database, events: readonly ReplayEvent[]) => {
      await db.transaction(async (tx) => {
        await Promise.all([limitStatements(tx, 5000), insertOrTakeBackAll(tx, arriving(events, COMPLETED))]);
        if (domain !== 'none') await applyChanges(tx, events, domain === 'announce');
      });
    };
  return [
    { name: 'claim', counters: false, run: transaction('none') },
    { name: 'claim, counted', counters: true, run: transaction('none') },
    { name: 'claim, domain write, counted', counters: true, run: transaction('change') },
    { name: 'claim, domain write, outbox', counters: false, run: transaction('announce') },
    { name: 'claim, domain write, outbox, counted', counters: true, run: transaction('announce') },
  ];
}

/** Async intake: one autocommitted insert of `received` rows (committer.ts #storeAtOnce). */
function asyncIntakeLayers(): Layer[] {
  const store = async (db: Database, events: readonly ReplayEvent[]) => {
    await insertOrTakeBackAll(db, arriving(events, { status: 'received', availableAt: new Date() }));
  };
  return [
    { name: 'claim', counters: false, run: store },
    { name: 'claim, counted', counters: true, run: store },
  ];
}

/** The async worker's batch transaction (worker.ts takeBatch, stored.ts), on rows stored beforehand. */
function workerLayers(): Layer[] {
  const prepare = async (admin: postgres.Sql, events: readonly ReplayEvent[]) => {
    const rows = events.map((event) => ({
      provider: event.provider,
      event_id: event.eventId,
      event_type: event.eventType,
      payload: event.payloadText,
    }));
    await admin.unsafe(
      `insert into webhook_events (provider, event_id, event_type, status, payload, available_at)
      select provider, event_id, event_type, 'received', payload::jsonb, now() - interval '1 second'
      from json_to_recordset($1::text::json) as r(provider text, event_id text, event_type text, payload text)`,
      [JSON.stringify(rows)],
    );
  };
  const batch = (domain: 'none' | 'change' | 'announce') => async (db: Database, events: readonly ReplayEvent[]) => {
    await db.transaction(async (tx) => {
      const lease = takeLease('ledger', Date.now(), 60_000);
      const [rows] = await Promise.all([
        lockDueBatch(tx, lease, new Date(), events.length),
        executePrepared(tx, sql`savepoint batch`),
      ]);
      if (domain !== 'none') await applyChanges(tx, events, domain === 'announce');
      await markApplied(
        tx,
        rows.map((row) => ({ provider: row.provider, eventId: row.event_id, status: 'completed' as const })),
      );
    });
  };
  return [
    { name: 'claim', counters: false, prepare, run: batch('none') },
    { name: 'claim, counted', counters: true, prepare, run: batch('none') },
    { name: 'claim, domain write, counted', counters: true, prepare, run: batch('change') },
    { name: 'claim, domain write, outbox', counters: false, prepare, run: batch('announce') },
    { name: 'claim, domain write, outbox, counted', counters: true, prepare, run: batch('announce') },
  ];
}

/**
 * Each step's share of the layers' costs: the claim alone; the domain write as what it adds to a
 * counted claim; the outbox as what it adds beyond both, uncounted; the counters as what the triggers
 * add to the whole (absent layers read 0: the async intake has only the first two).
 */
function splitLayers(layers: ReadonlyMap<string, number>) {
  const at = (name: string) => layers.get(name) ?? 0;
  const claim = at('claim');
  if (!layers.has('claim, domain write, outbox'))
    return { claim, counters: at('claim, counted') - claim, domain: 0, outbox: 0 };
  const domain = at('claim, domain write, counted') - at('claim, counted');
  return {
    claim,
    domain,
    outbox: at('claim, domain write, outbox') - claim - domain,
    counters: at('claim, domain write, outbox, counted') - at('claim, domain write, outbox'),
  };
}

/** The delivery log's flush (delivery-log.ts writeDeliveries) of `perFlush` records of stored events. */
async function deliveryLogPerDelivery(probe: Probe, perFlush: number, deliveries: number): Promise<number> {
  const flushes = Math.max(2, Math.ceil(deliveries / perFlush));
  const samples: number[] = [];
  for (let r = 0; r < settings.replayRounds; r++) {
    const records = (count: number): DeliveryRecord[] =>
      replayEvents(count).map((event) => ({
        provider: event.provider,
        eventId: event.eventId,
        deliveredAt: new Date(),
        traceId: randomBytes(16).toString('hex'),
        statusCode: 200,
        outcome: 'completed',
        durationMs: 1.5,
        // As the intake marks them: every delivery of the load is its event's first store.
        firstStore: true,
      }));
    await writeDeliveries(probe.db, records(perFlush));
    let ns = 0;
    for (let f = 0; f < flushes; f++) {
      const batch = records(perFlush);
      const before = runNsOf([probe.pid]).get(probe.pid) ?? 0;
      await writeDeliveries(probe.db, batch);
      ns += (runNsOf([probe.pid]).get(probe.pid) ?? 0) - before;
    }
    samples.push(ns / (flushes * perFlush));
  }
  return median(samples);
}

/** One refresh of each gate the mode has (their TTL expired at every call): backend ns per refresh. */
async function gateRefreshNs(probe: Probe, mode: Mode, calls: number): Promise<number> {
  let now = 0;
  const clock = () => now;
  const pauses = senderPauseGate(clock);
  const backlog = mode === 'async' ? backlogGate(10_000, clock) : undefined;
  const refresh = async () => {
    now += GATE_TTL_MS;
    await pauses.check(probe.db, 'acme');
    await backlog?.check(probe.db);
  };
  await refresh();
  const before = runNsOf([probe.pid]).get(probe.pid) ?? 0;
  for (let i = 0; i < calls; i++) await refresh();
  return ((runNsOf([probe.pid]).get(probe.pid) ?? 0) - before) / calls;
}

// ---- The ledger ----

type Row = { step: Step; serviceUs: number; postgresUs: number };

function serviceRows(profileFile: string, window: SampleWindow, nsByThread: Record<string, number>): Map<Step, number> {
  const { classify, fallback } = ledgerClassifier(join(REPO_ROOT, 'dist/entry/node.mjs'));
  const { busyMs, byBucket } = attributeCpuProfile(profileFile, classify, fallback, window);
  // Node names its event loop's thread `node-MainThread` (older versions: the process's name).
  const mainNs = nsByThread['node-MainThread'] ?? nsByThread.node ?? 0;
  const libuvNs = nsByThread['libuv-worker'] ?? 0;
  const otherNs = sum(
    Object.entries(nsByThread).map(([name, ns]) =>
      name === 'node-MainThread' || name === 'node' || name === 'libuv-worker' ? 0 : ns,
    ),
  );
  const rows = new Map<Step, number>();
  for (const step of STEPS) rows.set(step, ((byBucket.get(step) ?? 0) / busyMs) * mainNs);
  rows.set('verification', (rows.get('verification') ?? 0) + libuvNs);
  rows.set('the rest (HTTP, hono, framework, GC)', (rows.get('the rest (HTTP, hono, framework, GC)') ?? 0) + otherNs);
  return rows;
}

async function ledgerFor(database: BenchDatabase, admin: postgres.Sql, mode: Mode, logDir: string) {
  const runs: LoadFigures[] = [];
  for (let r = 0; r < settings.rounds; r++) runs.push(await loadRun(database, admin, mode, logDir));
  const profileDir = join(logDir, `profile-${mode}`);
  const profiled = await loadRun(database, admin, mode, logDir, profileDir);
  const profileFile = readdirSync(profileDir).find((file) => file.endsWith('.cpuprofile'));
  if (profileFile === undefined) throw new Error(`no CPU profile in ${profileDir}`);

  const threadNames = [...new Set(runs.flatMap((run) => Object.keys(run.serviceNsByThread)))];
  const nsByThread = Object.fromEntries(
    threadNames.map((name) => [name, median(runs.map((run) => run.serviceNsByThread[name] ?? 0))]),
  );
  const acceptedPerSecond = median(runs.map((run) => run.acceptedPerSecond));
  const intakeBatch = Math.max(1, Math.round(median(runs.map((run) => run.meanIntakeBatch))));
  const perFlush = Math.max(1, Math.round((acceptedPerSecond * DELIVERY_LOG_FLUSH_MS) / 1000));
  const postgresTotal = median(runs.map((run) => run.postgresNs));

  const probe = await openProbe(database.url);
  const uncounted = await openUncountedProbe(database.url);
  const probes = { counted: probe, uncounted };
  const postgres = new Map<Step, number>();
  const replayed: Record<string, number> = {};
  try {
    const intake = await replayLayers(
      admin,
      probes,
      mode === 'sync' ? syncLayers() : asyncIntakeLayers(),
      intakeBatch,
      settings.events,
    );
    for (const [name, ns] of intake) replayed[`intake ${name}`] = ns;
    // The async replays' `received` rows: no worker applies them, and the worker's replay and the
    // backlog gate's count must meet the few a running service has, not these.
    await admin`delete from webhook_events where status = 'received'`;
    await admin.unsafe('vacuum webhook_events');
    const intakeSplit = splitLayers(intake);
    postgres.set('claim (inbox insert, group commit)', intakeSplit.claim);
    let counters = intakeSplit.counters;
    if (mode === 'sync') {
      postgres.set('domain write', intakeSplit.domain);
      postgres.set('outbox', intakeSplit.outbox);
    } else {
      const workerBatch = Math.min(DEFAULT_WORKER_BATCH_SIZE, settings.events);
      const worker = await replayLayers(admin, probes, workerLayers(), workerBatch, settings.events);
      for (const [name, ns] of worker) replayed[`worker ${name}`] = ns;
      const workerSplit = splitLayers(worker);
      postgres.set('async worker (lock, complete)', workerSplit.claim);
      postgres.set('domain write', workerSplit.domain);
      postgres.set('outbox', workerSplit.outbox);
      counters += workerSplit.counters;
    }
    postgres.set('event and outbox counters (triggers)', counters);
    postgres.set('delivery log', await deliveryLogPerDelivery(probe, perFlush, settings.events));
    // The worker's replays left dead index entries where their rows were `received`: the count would
    // skip them all once, a second's worth at a time in a running service.
    if (mode === 'async') await admin.unsafe('vacuum webhook_events');
    const gateNs = await gateRefreshNs(probe, mode, Math.max(20, Math.min(500, settings.events / 10)));
    replayed['gate refresh (per query set)'] = gateNs;
    postgres.set('pause and backlog gates', (gateNs * 1000) / GATE_TTL_MS / acceptedPerSecond);
  } finally {
    await probe.close();
    await uncounted.close();
  }
  const explained = sum(postgres.values());
  postgres.set('the rest (HTTP, hono, framework, GC)', postgresTotal - explained);

  const service = serviceRows(join(profileDir, profileFile), profiled.window, nsByThread);
  const rows: Row[] = STEPS.filter((step) => mode === 'async' || step !== 'async worker (lock, complete)').map(
    (step) => ({
      step,
      serviceUs: round((service.get(step) ?? 0) / 1000, 1),
      postgresUs: round((postgres.get(step) ?? 0) / 1000, 1),
    }),
  );
  return {
    mode,
    rows,
    totals: {
      serviceUs: round(sum(Object.values(nsByThread)) / 1000, 1),
      postgresUs: round(postgresTotal / 1000, 1),
    },
    acceptedPerSecond: round(acceptedPerSecond, 0),
    appliedPerSecond: round(median(runs.map((run) => run.appliedPerSecond)), 0),
    serviceUsByThread: Object.fromEntries(Object.entries(nsByThread).map(([name, ns]) => [name, round(ns / 1000, 1)])),
    intakeBatch,
    deliveryLogRowsPerFlush: perFlush,
    deliveryLogCap: DELIVERY_LOG_CAP,
    replayedUsPerDelivery: Object.fromEntries(
      Object.entries(replayed).map(([name, ns]) => [name, round(ns / 1000, 2)]),
    ),
    runs,
  };
}

function printLedger(ledger: Awaited<ReturnType<typeof ledgerFor>>): void {
  console.log(
    `\n${ledger.mode}: ${ledger.acceptedPerSecond} deliveries/s accepted, ${ledger.appliedPerSecond} applied`,
  );
  console.log('| step | service CPU µs | PostgreSQL CPU µs |');
  console.log('| --- | ---: | ---: |');
  for (const row of ledger.rows) console.log(`| ${row.step} | ${row.serviceUs} | ${row.postgresUs} |`);
  console.log(`| **total** | **${ledger.totals.serviceUs}** | **${ledger.totals.postgresUs}** |`);
}

async function main(): Promise<void> {
  const startedAt = new Date();
  const tmp = mkdtempSync(join(tmpdir(), 'webhook-inbox-ledger-'));
  chmodSync(tmp, 0o755);
  const database = await freshDatabase(tmp);
  const admin = postgres(database.url, { max: 1, onnotice: () => {} });
  try {
    const ledgers = [];
    for (const mode of settings.modes) {
      const ledger = await ledgerFor(database, admin, mode, tmp);
      printLedger(ledger);
      ledgers.push(ledger);
    }
    const file = writeResult('ledger', startedAt, { context: runContext(), settings, ledgers });
    console.log(`\nresult: ${file}`);
  } finally {
    await admin.end({ timeout: 5 });
    await database.dispose();
    rmSync(tmp, { recursive: true, force: true });
  }
}

await main();
