// The operator CLI (`npx webhook-inbox <verb>`): commander, one module per verb under commands/, and
// the list below that registers them. Adding a verb is one file plus one line in `commands`.
import { readFileSync } from 'node:fs';
import { Command, CommanderError } from 'commander';
import { destinationsListCommand } from './commands/destinations-list.ts';
import { destinationsPauseCommand, destinationsResumeCommand } from './commands/destinations-pause.ts';
import { drainCommand } from './commands/drain.ts';
import { eventsListCommand } from './commands/events-list.ts';
import { eventsShowCommand } from './commands/events-show.ts';
import { jobsReplayCommand, jobsRetryCommand, jobsSendCommand } from './commands/jobs-create.ts';
import { jobsRunCommand } from './commands/jobs-run.ts';
import { jobsCancelCommand, jobsListCommand, jobsShowCommand } from './commands/jobs-view.ts';
import { migrateCommand } from './commands/migrate.ts';
import { outboxListCommand } from './commands/outbox-list.ts';
import { outboxRetryCommand } from './commands/outbox-retry.ts';
import { purgeCommand } from './commands/purge.ts';
import { rejectionsListCommand } from './commands/rejections-list.ts';
import { replayCommand } from './commands/replay.ts';
import { sendCommand } from './commands/send.ts';
import { sendersListCommand } from './commands/senders-list.ts';
import { sendersPauseCommand } from './commands/senders-pause.ts';
import { sendersResumeCommand } from './commands/senders-resume.ts';
import { sweepCommand } from './commands/sweep.ts';
import { workCommand } from './commands/work.ts';
import { type CliIo, type CommandModule, createRunner, EXIT, type ExitCode } from './context.ts';
import { terminalLines } from './table.ts';

const commands: readonly CommandModule[] = [
  eventsListCommand,
  eventsShowCommand,
  replayCommand,
  outboxListCommand,
  outboxRetryCommand,
  destinationsListCommand,
  drainCommand,
  workCommand,
  sweepCommand,
  purgeCommand,
  rejectionsListCommand,
  migrateCommand,
  sendCommand,
  sendersListCommand,
  sendersPauseCommand,
  sendersResumeCommand,
  destinationsPauseCommand,
  destinationsResumeCommand,
  jobsReplayCommand,
  jobsRetryCommand,
  jobsSendCommand,
  jobsListCommand,
  jobsShowCommand,
  jobsCancelCommand,
  jobsRunCommand,
];

/** Commander's codes for "asked for help or the version": not a usage error. */
const SUCCESSFUL_EXITS = new Set(['commander.helpDisplayed', 'commander.version']);

function parentFor(program: Command, module: CommandModule): Command {
  if (module.path.length === 1) return program;
  const [group] = module.path;
  const existing = program.commands.find((command) => command.name() === group);
  if (existing !== undefined) return existing;
  return program.command(group).description(module.groupDescription ?? '');
}

/** The package's own version, read once from package.json (no build step stamps it in). */
function packageVersion(): string {
  const manifest: unknown = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));
  const version = (manifest as { version?: unknown }).version;
  return typeof version === 'string' ? version : 'unknown';
}

const WHERE_THE_DATABASE_IS = `
Database: DATABASE_URL when set; otherwise the embedded PostgreSQL that
\`npm start\` runs with its data in DATA_DIR (default .data), found while it
runs (with NODE_ENV=production, only when EMBEDDED_DATABASE=allow). Every
other setting comes from the server's environment variables
(docs/configuration.md). \`webhook-inbox <command> --help\` describes a command.
Exit codes: 0 done, 1 could not run, 2 usage, 3 not found, 4 a replay failed.`;

export function buildProgram(io: CliIo, setExitCode: (code: ExitCode) => void): Command {
  const helpWidth = io.columns ?? 80;
  const program = new Command('webhook-inbox')
    .description('Operator commands for Webhook Inbox.')
    .version(packageVersion(), '-V, --version', 'print the version')
    .option('--verbose', 'also print the log lines of the work done (on stderr)')
    .addHelpText('after', WHERE_THE_DATABASE_IS)
    .configureOutput({
      writeOut: (text) => io.out(text.trimEnd()),
      // Usage errors quote the argument refused, which can hold anything a script passed.
      writeErr: (text) => io.err(terminalLines(text.trimEnd())),
      getOutHelpWidth: () => helpWidth,
      getErrHelpWidth: () => helpWidth,
    })
    // Names only in the list of commands: each command's own --help shows its arguments, and the
    // descriptions keep room to wrap at the terminal's width.
    .configureHelp({ subcommandTerm: (command) => command.name() })
    .showHelpAfterError('(add --help for usage)')
    // Settings above are copied to every command created below; exitOverride makes commander throw
    // instead of exiting, so usage errors get the contract's code 2.
    .exitOverride();
  const run = createRunner(io, setExitCode, () => program.opts<{ verbose?: boolean }>().verbose === true);
  for (const module of commands) {
    const verb = module.path[module.path.length - 1] as string;
    module.define(parentFor(program, module).command(verb), run);
  }
  return program;
}

export async function runCli(argv: readonly string[], io: CliIo): Promise<ExitCode> {
  let exitCode: ExitCode = EXIT.done;
  const program = buildProgram(io, (code) => {
    exitCode = code;
  });
  try {
    await program.parseAsync([...argv], { from: 'user' });
  } catch (error) {
    if (!(error instanceof CommanderError)) throw error;
    return SUCCESSFUL_EXITS.has(error.code) ? EXIT.done : EXIT.usage;
  }
  return exitCode;
}
