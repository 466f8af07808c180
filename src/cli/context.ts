// What every CLI command runs with: the server's configuration (parseConfig), a database that must be
// reachable and migrated, the clock, ids, jitter and a logger on stderr (stdout is the command's
// answer, kept clean for --json). Also the exit codes the contract fixes, and the one wrapper that
// turns a command's outcome or failure into one of them.
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { type Command, InvalidArgumentError } from 'commander';
import { type Config, ConfigError, parseConfig } from '../config.ts';
import { connectDatabase, type Database, type DatabaseHandle } from '../db/client.ts';
import { databaseStartupProblem, describeError, isTransientDatabaseError } from '../db/errors.ts';
import { expectedMigration, hasPendingMigrations } from '../db/migrations.ts';
import type { RandomSource } from '../lib/backoff.ts';
import type { Clock } from '../lib/clock.ts';
import { createLogger, type Logger } from '../lib/logger.ts';

export const EXIT = { done: 0, couldNotRun: 1, usage: 2, notFound: 3 } as const;
export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

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
}

export interface CliContext {
  config: Config;
  /** DATABASE_URL, known to be set (the CLI refuses to run without it). */
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
    return parseConfig(env, { readFile: (path) => readFileSync(path, 'utf8') });
  } catch (error) {
    if (error instanceof ConfigError) throw new CliError(EXIT.couldNotRun, error.message);
    throw error;
  }
}

function loadConfig(env: CliIo['env']): Config & { DATABASE_URL: string } {
  const config = parseCliConfig(env);
  const url = config.DATABASE_URL;
  if (url === undefined) {
    throw new CliError(EXIT.couldNotRun, 'DATABASE_URL is required: the CLI works on the database the server uses');
  }
  return { ...config, DATABASE_URL: url };
}

async function openDatabase(
  config: Config & { DATABASE_URL: string },
  requireMigrated: boolean,
): Promise<DatabaseHandle> {
  const handle = connectDatabase({
    url: config.DATABASE_URL,
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
    throw new CliError(EXIT.couldNotRun, databaseStartupProblem(error));
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
 * database (nor DATABASE_URL).
 */
export interface Runner {
  <Args extends unknown[]>(
    action: CommandAction<Args>,
    options?: { requireMigrated?: boolean },
  ): (...args: Args) => Promise<void>;
  offline<Args extends unknown[]>(action: OfflineAction<Args>): (...args: Args) => Promise<void>;
}

function baseContext(io: CliIo, config: Config): OfflineContext {
  const clock = () => Date.now();
  return {
    config,
    clock,
    newId: () => randomUUID(),
    random: Math.random,
    logger: createLogger({ level: config.LOG_LEVEL, now: () => new Date(clock()), write: io.err }),
    out: io.out,
    err: io.err,
    ask: io.ask,
    errIsTerminal: io.errIsTerminal ?? false,
  };
}

export function createRunner(io: CliIo, setExitCode: (code: ExitCode) => void): Runner {
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
          const config = loadConfig(io.env);
          handle = await openDatabase(config, options.requireMigrated ?? true);
          const context: CliContext = { ...baseContext(io, config), databaseUrl: config.DATABASE_URL, db: handle.db };
          return action(context, ...args);
        },
        async () => handle?.close(),
      );
    }) as Runner;
  run.offline =
    (action) =>
    async (...args) => {
      await guarded(
        async () => action(baseContext(io, parseCliConfig(io.env)), ...args),
        async () => {},
      );
    };
  return run;
}

export interface CommandModule {
  /** `['drain']`, or a group and a verb: `['outbox', 'list']`. */
  path: readonly [string] | readonly [string, string];
  /** Describes the group the first time a verb of it is registered. */
  groupDescription?: string;
  /** Adds description, arguments and options to `command`, and its action through `run`. */
  define(command: Command, run: Runner): void;
}

/** The `--operator` parser: a name is required and blanks are not one (a usage error, exit 2). */
export function operatorName(value: string): string {
  const name = value.trim();
  if (name.length === 0) throw new InvalidArgumentError('must name someone');
  return name;
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
