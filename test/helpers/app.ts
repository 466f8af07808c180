// The app as the tests drive it: real database, injected clock, captured logs, default handlers
// unless a test brings its own.
import { randomUUID } from 'node:crypto';
import type { Hono } from 'hono';
import { createApp } from '../../src/app.ts';
import type { Database, DatabaseEnv } from '../../src/db/client.ts';
import { expectedMigration } from '../../src/db/migrations.ts';
import type { AppDeps } from '../../src/deps.ts';
import { defaultHandlers } from '../../src/domain/handlers.ts';
import { createLogger } from '../../src/lib/logger.ts';
import { labelBounds, Metrics } from '../../src/lib/metrics.ts';
import { defaultGaugeSources } from '../../src/ops/routes/metrics.ts';
import { enableSenders } from '../../src/senders/registry.ts';
import { PREVIOUS_SECRET, TEST_NOW_MS, TEST_SECRET } from './acme.ts';
import { patience } from './patience.ts';

export interface TestApp {
  app: Hono<DatabaseEnv>;
  /** Log lines as written, for assertions that nothing secret leaks. */
  logs: string[];
  setNow(ms: number): void;
  request(path: string, init: RequestInit): Promise<Response>;
}

export async function buildTestApp(
  db: Database,
  overrides: Partial<Omit<AppDeps, 'config'>> & { config?: Partial<AppDeps['config']> } = {},
): Promise<TestApp> {
  let now = TEST_NOW_MS;
  const logs: string[] = [];
  const enabledSenders = overrides.enabledSenders ?? (await enableSenders({ acme: [TEST_SECRET, PREVIOUS_SECRET] }));
  const handlers = overrides.handlers ?? defaultHandlers;
  const app = createApp({
    db,
    enabledSenders,
    handlers,
    metrics: new Metrics(labelBounds(enabledSenders.keys(), handlers)),
    gaugeSources: defaultGaugeSources,
    clock: () => now,
    newId: () => randomUUID().replaceAll('-', ''),
    logger: createLogger({ level: 'debug', now: () => new Date(now), write: (line) => logs.push(line) }),
    expectedMigration,
    // As `npm start` runs it: deliveries share transactions (override with `groupCommit: undefined`).
    groupCommit: { maxBatch: 64, lanes: 4 },
    ...overrides,
    config: {
      // The service's default, scaled like every other limit of the suite: on a busy machine a delivery
      // of a test about something else must not run out of time and be answered 503. A test about the
      // deadline sets its own.
      HANDLER_DEADLINE_MS: patience(5000),
      MAX_BODY_BYTES: 262144,
      WEBHOOK_TOLERANCE_SECONDS: 300,
      METRICS_TOKEN: undefined,
      PROCESSING_MODE: 'sync',
      INBOX_MAX_BACKLOG: 10000,
      EVENT_RETENTION_DAYS: 30,
      ...overrides.config,
    },
  });
  return {
    app,
    logs,
    setNow: (ms) => {
      now = ms;
    },
    request: async (path, init) => app.request(path, init),
  };
}
