// What the portable app needs from its runtime, passed in by the entry points (and by tests).
import type { Config } from './config.ts';
import type { Database, Executor } from './db/client.ts';
import type { HandlerMap } from './domain/handlers.ts';
import type { IntakeLoad } from './inbox/intake-load.ts';
import type { Logger } from './lib/logger.ts';
import type { GaugeSample, Metrics } from './lib/metrics.ts';
import type { EnabledProvider } from './providers/registry.ts';

/** Milliseconds since the epoch; injected so tests move time instead of sleeping. */
export type Clock = () => number;

export interface AppDeps {
  config: Pick<
    Config,
    | 'HANDLER_DEADLINE_MS'
    | 'MAX_BODY_BYTES'
    | 'WEBHOOK_TOLERANCE_SECONDS'
    | 'METRICS_TOKEN'
    | 'ADMIN_TOKEN'
    | 'PROCESSING_MODE'
    | 'INBOX_MAX_BACKLOG'
  >;
  db: Database;
  providers: ReadonlyMap<string, EnabledProvider>;
  handlers: HandlerMap;
  clock: Clock;
  newId: () => string;
  logger: Logger;
  metrics: Metrics;
  /** Database-backed gauges read at each /metrics scrape. */
  gaugeSources: ReadonlyArray<(db: Executor, nowMs: number) => Promise<GaugeSample[]>>;
  /** Migration the database must have applied for /readyz (the journal's last entry). */
  expectedMigration: { tag: string; createdAt: number };
  /** Deliveries in flight, shared with an in-process async worker that defers to a saturated intake. */
  intakeLoad?: IntakeLoad;
  /** Test and tracing hook: runs after validation, just before the database claim. */
  beforeClaim?: (event: { provider: string; eventId: string }) => Promise<void>;
}
