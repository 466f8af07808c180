// The async inbox as the tests drive it: an app in async mode and workers on the same database, each
// with the clock, the jitter and the logs in the test's hands.
import { randomUUID } from 'node:crypto';
import type { Database } from '../../src/db/client.ts';
import { defaultHandlers, type HandlerMap } from '../../src/domain/handlers.ts';
import type { IntakeLoad } from '../../src/inbox/intake-load.ts';
import { createInboxWorker, type InboxWorker, type InboxWorkerSettings } from '../../src/inbox/worker.ts';
import { createLogger } from '../../src/lib/logger.ts';
import { labelBounds, Metrics } from '../../src/lib/metrics.ts';
import type { Tracer } from '../../src/lib/tracing.ts';
import { acmeEvent, signedHeaders, TEST_NOW_MS } from './acme.ts';
import type { TestApp } from './app.ts';

export const testInboxWorkerSettings: InboxWorkerSettings = {
  maxAttempts: 10,
  backoff: { baseMs: 1000, maxMs: 300_000 },
  leaseMs: 30_000,
  applyTimeoutMs: 5000,
  batchSize: 25,
  lanes: 4,
  maxDeferMs: 1000,
  budgetMs: 20_000,
};

export interface TestWorker {
  worker: InboxWorker;
  logs: Array<Record<string, unknown>>;
  metrics: Metrics;
  setNow(ms: number): void;
  now(): number;
}

export function buildTestWorker(
  db: Database,
  options: {
    handlers?: HandlerMap;
    settings?: Partial<InboxWorkerSettings>;
    random?: () => number;
    now?: number;
    /** A clock of the test's own instead of the settable one (e.g. the real one, for time budgets). */
    clock?: () => number;
    intakeLoad?: IntakeLoad;
    tracer?: Tracer;
  } = {},
): TestWorker {
  let now = options.now ?? TEST_NOW_MS;
  const logs: Array<Record<string, unknown>> = [];
  const handlers = options.handlers ?? defaultHandlers;
  const metrics = new Metrics(labelBounds(['acme'], handlers));
  const worker = createInboxWorker({
    db,
    handlers,
    clock: options.clock ?? (() => now),
    newId: () => `worker-${randomUUID()}`,
    random: options.random ?? (() => 0.5),
    logger: createLogger({
      level: 'debug',
      now: () => new Date(now),
      write: (line) => logs.push(JSON.parse(line) as Record<string, unknown>),
    }),
    metrics,
    ...(options.intakeLoad === undefined ? {} : { intakeLoad: options.intakeLoad }),
    tracer: options.tracer,
    settings: { ...testInboxWorkerSettings, ...options.settings },
  });
  return {
    worker,
    logs,
    metrics,
    setNow: (ms) => {
      now = ms;
    },
    now: () => now,
  };
}

/** Signs and posts one acme event (a fresh one unless given) to the app. */
export async function deliver(test: TestApp, event: object = acmeEvent()): Promise<Response> {
  const body = JSON.stringify(event);
  return test.request('/webhooks/acme', { method: 'POST', body, headers: await signedHeaders(body) });
}
