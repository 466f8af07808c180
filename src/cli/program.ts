// The operator CLI (`npx webhook-inbox <verb>`): commander, one module per verb under commands/, and
// the list below that registers them, loading only the module of the command that runs. Adding a
// verb is one file plus one entry in `commands`.
import { readFileSync } from 'node:fs';
import { Command, CommanderError } from 'commander';
import type { CliIo, CommandModule, Runner } from './context.ts';
import { EXIT, type ExitCode } from './exit.ts';
import { terminalLines } from './table.ts';

/**
 * A command as the program lists it, its module loaded only when it runs (or its own help is
 * asked for): each module brings what its work needs (the database driver, the broker clients, the
 * admin schemas), and a process runs one command. The summary lives here so that `--help` lists
 * every command without loading any (docs/operations.md has the figures).
 */
interface CommandEntry {
  path: CommandModule['path'];
  summary: string;
  load(): Promise<CommandModule>;
}

/** What each group of verbs is, as the program's help lists it. */
const GROUPS: Readonly<Record<string, string>> = {
  events: 'inbox events: list, show',
  outbox: 'outbox messages: list, retry dead ones',
  destinations: 'outbox destinations: list with their state, backlog and rate',
  rejections: 'refused deliveries: list',
  senders: 'senders: list, pause, resume',
  jobs: 'bulk actions by filter: replay, retry, send, list, show, cancel, run',
};

const commands: readonly CommandEntry[] = [
  {
    path: ['events', 'list'],
    summary: 'list events, newest first',
    load: async () => (await import('./commands/events-list.ts')).eventsListCommand,
  },
  {
    path: ['events', 'show'],
    summary: 'show one event',
    load: async () => (await import('./commands/events-show.ts')).eventsShowCommand,
  },
  {
    path: ['replay'],
    summary: 'apply failed, parked or dead events again',
    load: async () => (await import('./commands/replay.ts')).replayCommand,
  },
  {
    path: ['outbox', 'list'],
    summary: 'list outbox messages, newest first',
    load: async () => (await import('./commands/outbox-list.ts')).outboxListCommand,
  },
  {
    path: ['outbox', 'retry'],
    summary: 'send dead messages back to pending',
    load: async () => (await import('./commands/outbox-retry.ts')).outboxRetryCommand,
  },
  {
    path: ['destinations', 'list'],
    summary: 'list the outbox destinations, their state, backlog and rate',
    load: async () => (await import('./commands/destinations-list.ts')).destinationsListCommand,
  },
  {
    path: ['drain'],
    summary: 'publish due outbox messages once',
    load: async () => (await import('./commands/drain.ts')).drainCommand,
  },
  {
    path: ['work'],
    summary: 'apply due async inbox events once',
    load: async () => (await import('./commands/work.ts')).workCommand,
  },
  {
    path: ['sweep'],
    summary: 'free expired inbox leases',
    load: async () => (await import('./commands/sweep.ts')).sweepCommand,
  },
  {
    path: ['purge'],
    summary: 'apply the retention periods once',
    load: async () => (await import('./commands/purge.ts')).purgeCommand,
  },
  {
    path: ['rejections', 'list'],
    summary: 'list refused deliveries, newest first',
    load: async () => (await import('./commands/rejections-list.ts')).rejectionsListCommand,
  },
  {
    path: ['migrate'],
    summary: 'apply pending database migrations',
    load: async () => (await import('./commands/migrate.ts')).migrateCommand,
  },
  {
    path: ['send'],
    summary: 'sign test events and deliver them',
    load: async () => (await import('./commands/send.ts')).sendCommand,
  },
  {
    path: ['senders', 'list'],
    summary: 'list the enabled senders and their pauses',
    load: async () => (await import('./commands/senders-list.ts')).sendersListCommand,
  },
  {
    path: ['senders', 'pause'],
    summary: 'pause a sender: its deliveries get 503 until resumed',
    load: async () => (await import('./commands/senders-pause.ts')).sendersPauseCommand,
  },
  {
    path: ['senders', 'resume'],
    summary: 'resume a paused sender',
    load: async () => (await import('./commands/senders-resume.ts')).sendersResumeCommand,
  },
  {
    path: ['destinations', 'pause'],
    summary: 'pause an outbox destination: nothing is published to it until resumed',
    load: async () => (await import('./commands/destinations-pause.ts')).destinationsPauseCommand,
  },
  {
    path: ['destinations', 'resume'],
    summary: 'resume a paused outbox destination',
    load: async () => (await import('./commands/destinations-pause.ts')).destinationsResumeCommand,
  },
  {
    path: ['jobs', 'replay'],
    summary: 'replay every event a filter matches, as a job',
    load: async () => (await import('./commands/jobs-create.ts')).jobsReplayCommand,
  },
  {
    path: ['jobs', 'retry'],
    summary: 'retry every dead outbox message a filter matches, as a job',
    load: async () => (await import('./commands/jobs-create.ts')).jobsRetryCommand,
  },
  {
    path: ['jobs', 'send'],
    summary: 'send the outbox messages a filter matches to a destination, as a job',
    load: async () => (await import('./commands/jobs-create.ts')).jobsSendCommand,
  },
  {
    path: ['jobs', 'list'],
    summary: 'list bulk jobs, newest first',
    load: async () => (await import('./commands/jobs-view.ts')).jobsListCommand,
  },
  {
    path: ['jobs', 'show'],
    summary: "show one bulk job's progress and its failed items with their reasons",
    load: async () => (await import('./commands/jobs-view.ts')).jobsShowCommand,
  },
  {
    path: ['jobs', 'cancel'],
    summary: 'cancel a queued or running bulk job',
    load: async () => (await import('./commands/jobs-view.ts')).jobsCancelCommand,
  },
  {
    path: ['jobs', 'run'],
    summary: 'work through queued bulk jobs here',
    load: async () => (await import('./commands/jobs-run.ts')).jobsRunCommand,
  },
];

/** Commander's codes for "asked for help or the version": not a usage error. */
const SUCCESSFUL_EXITS = new Set(['commander.helpDisplayed', 'commander.version']);

function parentFor(program: Command, path: CommandEntry['path']): Command {
  if (path.length === 1) return program;
  const [group] = path;
  const existing = program.commands.find((command) => command.name() === group);
  if (existing !== undefined) return existing;
  return program.command(group).description(GROUPS[group] ?? '');
}

/** The words of `argv` before its first option that is no root flag: `help`, a group, a verb. */
function commandWords(argv: readonly string[]): string[] {
  const words = argv.filter((word) => !word.startsWith('-')).slice(0, 3);
  return words[0] === 'help' ? words.slice(1) : words;
}

/** The command modules loaded for one run, and what their actions run through. */
export interface Loaded {
  modules: ReadonlyMap<CommandEntry, CommandModule>;
  createRunner?: typeof import('./context.ts').createRunner;
}

/** The modules of the commands `argv` runs (or asks help for): none for the program's own help. */
async function modulesFor(argv: readonly string[]): Promise<Loaded> {
  const [first, second] = commandWords(argv);
  const wanted = commands.filter(
    ({ path }) => path[0] === first && (path.length === 1 || second === undefined || path[1] === second),
  );
  // A group alone lists its verbs: their summaries are enough.
  const running = wanted.filter(({ path }) => path.length === 1 || second !== undefined);
  if (running.length === 0) return { modules: new Map() };
  const [{ createRunner }, ...modules] = await Promise.all([
    import('./context.ts'),
    ...running.map(async (entry) => [entry, await entry.load()] as const),
  ]);
  return { modules: new Map(modules), createRunner };
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

/**
 * The program with every command listed, and defined in full where its module is in `loaded` (all
 * its arguments and options; the others are names and summaries).
 */
export function buildProgram(
  io: CliIo,
  setExitCode: (code: ExitCode) => void,
  loaded: Loaded = { modules: new Map() },
): Command {
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
  const run: Runner | undefined = loaded.createRunner?.(
    io,
    setExitCode,
    () => program.opts<{ verbose?: boolean }>().verbose === true,
  );
  for (const entry of commands) {
    const verb = entry.path[entry.path.length - 1] as string;
    const command = parentFor(program, entry.path).command(verb).summary(entry.summary);
    const module = loaded.modules.get(entry);
    if (module !== undefined && run !== undefined) module.define(command, run);
  }
  return program;
}

export async function runCli(argv: readonly string[], io: CliIo): Promise<ExitCode> {
  let exitCode: ExitCode = EXIT.done;
  const program = buildProgram(
    io,
    (code) => {
      exitCode = code;
    },
    await modulesFor(argv),
  );
  try {
    await program.parseAsync([...argv], { from: 'user' });
  } catch (error) {
    if (!(error instanceof CommanderError)) throw error;
    return SUCCESSFUL_EXITS.has(error.code) ? EXIT.done : EXIT.usage;
  }
  return exitCode;
}
