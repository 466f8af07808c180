// `webhook-inbox jobs replay|retry|send [filters] --operator NAME [--dry-run] [--yes] [--wait]`: a bulk
// action by filter (src/ops/jobs/bulk-jobs.ts). The filters are the lists' own (`events list`, `outbox
// list`); `send` copies the outbox messages its filter matches to the destination `--to` names. The count comes first: `--dry-run` prints it and does nothing; otherwise, as `replay` does,
// the command asks on a terminal and needs `--yes` elsewhere (exit 2, nothing done). The job then runs
// in the service (Node's schedule, the Worker's cron), or here with `--wait` (or `jobs run`).
import { type Command, Option } from 'commander';
import { createBulkJob, jobJson, jobOutcome } from '../../ops/jobs/bulk-jobs.ts';
import {
  type BulkJobSpec,
  JOB_KINDS,
  REPLAYABLE_STATUSES,
  type ReplayableStatus,
  specWarnings,
} from '../../ops/jobs/job-kinds.ts';
import { configuredRouting } from '../../outbox/destinations.ts';
import { type CliContext, CliError, type CommandModule, EXIT, providerOption, requireOperator } from '../context.ts';
import { operatorOption, windowOptions } from '../options.ts';
import { waitForJob } from './jobs-run.ts';
import { requireDestination } from './outbox-list.ts';

interface CommonOptions {
  operator?: string;
  id?: string;
  since?: Date;
  until?: Date;
  dryRun?: boolean;
  yes?: boolean;
  wait?: boolean;
  json?: boolean;
}

/** The options every bulk action takes besides its list's own filters. */
function withCommonOptions(command: Command, timeColumn: string): Command {
  return windowOptions(command.option('--id <prefix>', 'only ids starting with this'), timeColumn)
    .addOption(operatorOption('recorded with the job and each item'))
    .option('--dry-run', 'print how many rows match and do nothing')
    .option('--yes', 'do not ask for confirmation (needed when stdin is not a terminal)')
    .option('--wait', 'run the job here until it is finished, printing its progress')
    .option('--json', 'print the outcome as one JSON document');
}

/** Counts, confirms, creates; then waits when asked. `command` is this command's name, for its errors. */
async function bulkAction(context: CliContext, spec: BulkJobSpec, options: CommonOptions, command: string) {
  const words = JOB_KINDS[spec.kind];
  const operator = requireOperator(options.operator, command);
  const dbContext = { db: context.db, logger: context.logger, clock: context.clock };
  const counted = await createBulkJob(dbContext, { spec, operator, dryRun: true });
  const count = counted.kind === 'counted' ? counted.count : counted.job.total;
  // Said before anything is confirmed: retried messages of a destination that is not publishing wait.
  const warnings =
    count > 0 ? await specWarnings(context.db, configuredRouting(context.config), spec, context.clock()) : [];
  if (!options.json) for (const warning of warnings) context.err(`warning: ${warning.text}`);
  if (options.dryRun || count === 0) {
    context.out(options.json ? JSON.stringify({ count, job: null, warnings }) : `${count} ${words.noun}(s) match`);
    if (!options.dryRun && !options.json) context.err('nothing to do: no job was created');
    return EXIT.done;
  }
  if (!options.yes) {
    if (context.ask === undefined) {
      context.err(`${count} ${words.noun}(s) match`);
      throw new CliError(
        EXIT.usage,
        `not a terminal: pass --yes to ${words.verb.toLowerCase()} them as a job (nothing was done)`,
      );
    }
    const answer = await context.ask(`${words.verb} all ${count} matching ${words.noun}(s) as a job? [y/N] `);
    if (!/^y(es)?$/i.test(answer.trim())) {
      context.err('nothing was done');
      return EXIT.done;
    }
  }
  const created = await createBulkJob(dbContext, { spec, operator });
  if (created.kind === 'counted') {
    context.out(
      options.json ? JSON.stringify({ count: 0, job: null }) : `0 ${words.noun}(s) match now: no job was created`,
    );
    return EXIT.done;
  }
  let job = created.job;
  if (!options.json) context.out(`job ${job.id} queued: ${job.total} ${words.noun}(s)`);
  if (options.wait) job = await waitForJob(context, job.id);
  if (options.json) context.out(JSON.stringify({ count: created.job.total, job: jobJson(job), warnings }));
  else if (options.wait) {
    const outcome = jobOutcome(job);
    const why = outcome === 'done_with_failures' ? ` (why: jobs show ${job.id})` : '';
    context.out(
      `job ${job.id} ${outcome}: ${job.processed} of ${job.total} taken, ${job.failed} ${words.failedAre}${why}`,
    );
  }
  return EXIT.done;
}

/** One bulk action's command: its verb, what it says of itself, its list's own filters and the job it makes of them. */
function bulkCommand<Filters>(entry: {
  verb: 'replay' | 'retry' | 'send';
  description: string;
  /** The column `--since` and `--until` bound. */
  timeColumn: 'received' | 'created';
  filters: (command: Command) => Command;
  spec: (context: CliContext, options: CommonOptions & Filters) => BulkJobSpec;
}): CommandModule {
  const name = `jobs ${entry.verb}`;
  return {
    path: ['jobs', entry.verb],
    define: (command, run) =>
      withCommonOptions(entry.filters(command.description(entry.description)), entry.timeColumn).action(
        run((context, options: CommonOptions & Filters) =>
          bulkAction(context, entry.spec(context, options), options, name),
        ),
      ),
  };
}

export const jobsReplayCommand = bulkCommand<{
  status: ReplayableStatus;
  provider?: string;
  type?: string;
  subject?: string;
}>({
  verb: 'replay',
  description:
    'replay the failed (or parked, or dead-lettered) events that match the filters of `events list`, as a ' +
    'job that survives restarts; the job and each replay are recorded in operator_actions',
  timeColumn: 'received',
  filters: (command) =>
    command
      .addOption(new Option('--status <status>', 'the events to replay').choices(REPLAYABLE_STATUSES).default('failed'))
      .addOption(providerOption('only events of this provider'))
      .option('--type <type>', 'only events of this type')
      .option('--subject <id>', "only events about this sender's object"),
  spec: (_context, { status, provider, type, subject, id, since, until }) => ({
    kind: 'replay_events',
    filter: { status, provider, type, subject, id, since, until },
  }),
});

export const jobsRetryCommand = bulkCommand<{ topic?: string }>({
  verb: 'retry',
  description:
    'send the dead outbox messages that match the filters of `outbox list` back to pending, as a job that ' +
    'survives restarts; the job and each retry are recorded in operator_actions',
  timeColumn: 'created',
  filters: (command) =>
    command
      .addOption(new Option('--status <status>', 'the messages to retry (dead only)').choices(['dead']).default('dead'))
      .option('--topic <topic>', 'only messages of this topic'),
  spec: (_context, { topic, id, since, until }) => ({
    kind: 'retry_outbox',
    filter: { status: 'dead', topic, id, since, until },
  }),
});

export const jobsSendCommand = bulkCommand<{ to: string; topic?: string }>({
  verb: 'send',
  description:
    'copy the outbox messages (any status, stored for any destination) that match the filters of `outbox ' +
    'list` to the configured destination --to names, as a job that survives restarts: only those its ' +
    'filters would have taken at enqueue and it does not have already; the job and each copy are ' +
    'recorded in operator_actions',
  timeColumn: 'created',
  filters: (command) =>
    command
      .requiredOption('--to <name>', 'the configured destination to send them to')
      .option('--topic <topic>', 'only messages of this topic'),
  spec: (context, { to, topic, id, since, until }) => {
    requireDestination(context, to, '--to');
    return { kind: 'send_to_destination', filter: { to, topic, id, since, until } };
  },
});
