// What every CLI command runs with: the server's configuration (parseConfig), a database that must be
// reachable and migrated (DATABASE_URL, else the embedded server `npm start` runs on DATA_DIR), the
// clock, ids, jitter and a logger on stderr that stays silent unless --verbose (stdout is the
// command's answer, kept clean for --json). Also the exit codes the contract fixes, and the one
// wrapper that turns a command's outcome or failure into one of them.
import { readFileSync } from 'node:fs';
import { Argument, type Command, InvalidArgumentError, Option } from 'commander';
import { type Config, ConfigError, checkEmbeddedDatabase, parseConfig } from '../config.ts';
import type { Database, DatabaseHandle } from '../db/client.ts';
import { databaseStartupProblem, describeError, isTransientDatabaseError } from '../db/errors.ts';
import type { RandomSource } from '../lib/backoff.ts';
import { type Clock, newHexId } from '../lib/clock.ts';
import { createLogger, type Logger } from '../lib/logger.ts';
import { operatorNameProblem } from '../lib/operator-name.ts';
import { checkSenderLimits } from '../ops/sender-setup/sender-limits.ts';
import { configuredRouting } from '../outbox/destinations.ts';
import { allSenders } from '../senders/registry.ts';

import { EXIT, type ExitCode } from './exit.ts';

export { EXIT, type ExitCode };

/** A command's own refusal, with the code and the one line to print on stderr. */
export class CliError extends Error {
  constructor(
    readonly exitCode: ExitCode,
    message: string,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

export interface CliIo {
  env: Readonly<Record<string, string | undefined>>;
  out(line: string): void;
  err(line: string): void;
  /** Asks the operator on the terminal; absent when stdin is not a terminal (scripts, CI). */
  ask?: (question: string) => Promise<string>;
  /** Whether stderr is a terminal (progress output is drawn only then). */
  errIsTerminal?: boolean;
  /** The terminal's width, for help text; 80 when stdout is not a terminal. */
  columns?: number;
}

export interface CliContext {
  config: Config;
  /** DATABASE_URL, or the URL of the embedded server running on DATA_DIR. */
  databaseUrl: string;
  db: Database;
  clock: Clock;
  newId: () => string;
  random: RandomSource;
  logger: Logger;
  out(line: string): void;
  err(line: string): void;
  ask?: CliIo['ask'];
  errIsTerminal: boolean;
}

/** Operator commands may scan more than a webhook request, so they get a longer statement bound. */
const CLI_STATEMENT_TIMEOUT_MS = 30_000;

function parseCliConfig(env: CliIo['env']): Config {
  try {
    const config = parseConfig(env, { readFile: (path) => readFileSync(path, 'utf8') });
    // The server's own refusals (a `purge` with a retention production would refuse deletes for good).
    checkSenderLimits(config);
    // The outbox destinations too: a command that applies events (work, replay, jobs) routes messages with them.
    configuredRouting(config);
    return config;
  } catch (error) {
    if (error instanceof ConfigError) throw new CliError(EXIT.couldNotRun, error.message);
    throw error;
  }
}

/** Which database the CLI works on, in words for its error messages (never the URL: it holds a password). */
interface DatabaseTarget {
  url: string;
  described: string;
}

/**
 * DATABASE_URL when set; else the embedded server of DATA_DIR when it runs (in production only with
 * the server's own opt-in, so an operator's command never lands on a stray server the service does
 * not use); else a refusal saying how to get one.
 */
async function findDatabase(config: Config): Promise<DatabaseTarget> {
  if (config.DATABASE_URL !== undefined) return { url: config.DATABASE_URL, described: 'check DATABASE_URL' };
  try {
    // Its warning is the server's to log at start-up; a command's stderr carries only its refusals.
    checkEmbeddedDatabase(config);
  } catch (error) {
    if (error instanceof ConfigError) throw new CliError(EXIT.couldNotRun, error.message);
    throw error;
  }
  const { runningEmbeddedServer } = await import('../entry/setup/embedded-postgres.ts');
  const embedded = await runningEmbeddedServer(config.DATA_DIR);
  if (!embedded.running) {
    throw new CliError(
      EXIT.couldNotRun,
      `DATABASE_URL is not set and ${embedded.reason}: start it with \`npm start\` (or \`npm run db:start\`) ` +
        'in this folder, set DATA_DIR to where its data is, or set DATABASE_URL',
    );
  }
  return { url: embedded.url, described: `the embedded server of DATA_DIR=${config.DATA_DIR}` };
}

async function openDatabase(config: Config, target: DatabaseTarget, requireMigrated: boolean): Promise<DatabaseHandle> {
  // Loaded here, not with the program: `send` and every command's --help need no driver.
  const [{ connectDatabase }, { expectedMigration, hasPendingMigrations }] = await Promise.all([
    import('../db/client.ts'),
    import('../db/migrations.ts'),
  ]);
  const handle = connectDatabase({
    url: target.url,
    maxConnections: Math.min(config.DB_POOL_MAX, 4),
    statementTimeoutMs: CLI_STATEMENT_TIMEOUT_MS,
  });
  // `migrate` is the one verb that runs on a database with pending migrations (it applies them).
  if (!requireMigrated) return handle;
  let pending: boolean;
  try {
    pending = await hasPendingMigrations(handle.db, expectedMigration);
  } catch (error) {
    await handle.close().catch(() => {});
    // The causes are named after DATABASE_URL's parts; the embedded server is named as it is.
    const problem =
      config.DATABASE_URL === undefined
        ? `the database is unreachable (${target.described})`
        : databaseStartupProblem(error);
    throw new CliError(EXIT.couldNotRun, problem);
  }
  if (pending) {
    await handle.close();
    throw new CliError(EXIT.couldNotRun, 'the database has pending migrations: run `npm run db:migrate` first');
  }
  return handle;
}

export type CommandAction<Args extends unknown[]> = (
  context: CliContext,
  ...args: Args
) => Promise<ExitCode | undefined>;

/** What a command that needs no database (`send`) runs with. */
export type OfflineContext = Omit<CliContext, 'db' | 'databaseUrl'>;

export type OfflineAction<Args extends unknown[]> = (
  context: OfflineContext,
  ...args: Args
) => Promise<ExitCode | undefined>;

/**
 * Wraps a command's action: builds its context (config, database), runs it, closes the database and
 * records the exit code. Failures never print more than a class or a code: an error message from
 * the driver can quote parameters or the connection string. `offline` does the same without a
 * database.
 */
export interface Runner {
  <Args extends unknown[]>(
    action: CommandAction<Args>,
    options?: { requireMigrated?: boolean },
  ): (...args: Args) => Promise<void>;
  offline<Args extends unknown[]>(action: OfflineAction<Args>): (...args: Args) => Promise<void>;
}

function baseContext(io: CliIo, config: Config, verbose: boolean): OfflineContext {
  const clock = () => Date.now();
  return {
    config,
    clock,
    newId: newHexId,
    random: Math.random,
    // A command's answer is its output; the log lines of the code it runs are for --verbose.
    logger: createLogger({ level: verbose ? config.LOG_LEVEL : 'silent', now: () => new Date(clock()), write: io.err }),
    out: io.out,
    err: io.err,
    ask: io.ask,
    errIsTerminal: io.errIsTerminal ?? false,
  };
}

export function createRunner(
  io: CliIo,
  setExitCode: (code: ExitCode) => void,
  isVerbose: () => boolean = () => false,
): Runner {
  const guarded = async (body: () => Promise<ExitCode | undefined>, cleanUp: () => Promise<void>) => {
    try {
      setExitCode((await body()) ?? EXIT.done);
    } catch (error) {
      if (error instanceof CliError) {
        io.err(error.message);
        setExitCode(error.exitCode);
      } else if (isTransientDatabaseError(error)) {
        io.err(`the database is unavailable (${describeError(error)})`);
        setExitCode(EXIT.couldNotRun);
      } else {
        io.err(`failed: ${describeError(error)}`);
        setExitCode(EXIT.couldNotRun);
      }
    } finally {
      await cleanUp().catch(() => {});
    }
  };
  const run = (<Args extends unknown[]>(action: CommandAction<Args>, options: { requireMigrated?: boolean } = {}) =>
    async (...args: Args) => {
      let handle: DatabaseHandle | undefined;
      await guarded(
        async () => {
          const config = parseCliConfig(io.env);
          const target = await findDatabase(config);
          handle = await openDatabase(config, target, options.requireMigrated ?? true);
          const context: CliContext = {
            ...baseContext(io, config, isVerbose()),
            databaseUrl: target.url,
            db: handle.db,
          };
          return action(context, ...args);
        },
        async () => handle?.close(),
      );
    }) as Runner;
  run.offline =
    (action) =>
    async (...args) => {
      await guarded(
        async () => action(baseContext(io, parseCliConfig(io.env), isVerbose()), ...args),
        async () => {},
      );
    };
  return run;
}

export interface CommandModule {
  /** `['drain']`, or a group and a verb: `['outbox', 'list']`. */
  path: readonly [string] | readonly [string, string];
  /** Adds description, arguments and options to `command`, and its action through `run`. */
  define(command: Command, run: Runner): void;
}

/** The provider names the service knows: an argument or option naming another is a usage error (exit 2). */
export const PROVIDER_NAMES: readonly string[] = allSenders.map((provider) => provider.name);

export const providerArgument = (description = 'the route name') =>
  new Argument('<provider>', description).choices(PROVIDER_NAMES);

export const providerOption = (description: string) =>
  new Option('--provider <name>', description).choices(PROVIDER_NAMES);

/**
 * The `--operator` parser: the admin API's rule (src/lib/operator-name.ts), so a name refused there
 * is refused here, as a usage error (exit 2) before the database is opened.
 */
export function operatorName(value: string): string {
  const name = value.trim();
  const problem = operatorNameProblem(name);
  if (problem !== undefined) throw new InvalidArgumentError(problem);
  return name;
}

/**
 * `--operator` checked in the action rather than as a required option: commander checks required
 * options before arguments, and the provider or ids should be judged first.
 */
export function requireOperator(operator: string | undefined, verb: string): string {
  if (operator === undefined) throw new CliError(EXIT.usage, `${verb}: --operator NAME is required (it is recorded)`);
  return operator;
}

/** An option parser for a whole number in [min, max]; anything else is a usage error (exit 2). */
export function integerIn(min: number, max: number): (value: string) => number {
  return (value) => {
    const parsed = Number(value);
    if (!/^\d+$/.test(value.trim()) || parsed < min || parsed > max) {
      throw new InvalidArgumentError(`expected a whole number from ${min} to ${max}`);
    }
    return parsed;
  };
}
