// What a piece of background work is, whichever runtime runs it: a named step that a Node process
// runs on a timer (schedule.ts) and the Worker's cron runs in each invocation (cron.ts), and
// the parts both runtimes hand it. The steps themselves are listed in background-steps.ts.
import type { Config } from '../../config.ts';
import type { MigrationMark } from '../../db/migrations.ts';
import type { IntakeLoad } from '../../inbox/intake-load.ts';
import type { LogFields } from '../../lib/logger.ts';
import type { Metrics } from '../../lib/metrics.ts';
import type { DestinationPublisher } from '../../outbox/relays.ts';
import type { DrainerParts } from './drainers.ts';

/** What a step may use: the whole configuration (each step reads its own settings) and the runtime's parts. */
export interface StepParts extends DrainerParts {
  config: Config;
  /** A long-lived process keeps a step's state between runs; a cron run starts afresh each time. */
  runtime: 'process' | 'cron';
  expectedMigration: MigrationMark;
  /** Every destination's publisher, as the runtime makes them (Node's clients, or the Worker's portable ones). */
  publishers: readonly DestinationPublisher[];
  metrics?: Pick<Metrics, 'countPublish' | 'countEvent' | 'countReplay' | 'countRetry'>;
  /** A process's: the intake's load, which the worker and the bulk jobs defer to. */
  intakeLoad?: IntakeLoad | undefined;
  /** A process's background connections: one inbox application each. */
  backgroundLanes?: number;
  /** A process's spools of what requests recorded (the Worker writes them after each request). */
  spooled?: { flushRefusals(): Promise<void>; flushDeliveryLog(): Promise<void> };
}

/** One run: at most `budgetMs` when given (a cron run's share), else the step's own bound in a process. */
export type StepRun = (options: {
  budgetMs?: number | undefined;
  signal?: AbortSignal | undefined;
}) => Promise<LogFields | undefined>;

export interface BackgroundStep {
  /** snake_case: the `step` field of its log lines, on Node and on the cron alike. */
  readonly name: string;
  /**
   * Where it runs: `both`; `process` for the flushes of what requests spooled (the Worker writes
   * them after each request); `cron` for what a process checks once, at start-up.
   */
  readonly runsIn: 'both' | 'process' | 'cron';
  /** How often a process runs it: the gap from one run's end to the next's start; 0 is off. */
  intervalMs(config: Config): number;
  /** A process's bound on one run; the cron gives each step its share of the invocation instead. */
  readonly processBudgetMs?: number;
  /**
   * Made once per process (the relay keeps its backoff and breakers, the worker its lanes, between
   * runs) and once per cron run. Reports counts only: never ids, payloads or messages from the database.
   */
  prepare(parts: StepParts): StepRun;
  /** The level of a process's line for a run that went well, when it changed something worth a line. */
  lineFor?(fields: LogFields): 'info' | 'warn' | undefined;
  /**
   * Whether a process runs it again at once, without the interval: the run stopped with work left
   * (its budget spent), so an idle interval would only cost throughput. Absent: never.
   */
  againAtOnce?(fields: LogFields): boolean;
}

/** A failure whose message we wrote ourselves, so it is safe to log as is. */
export class StepFailure extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StepFailure';
  }
}
