// `webhook-inbox jobs list` and `jobs show <id>`: bulk jobs newest first, and one job's progress,
// as text or one JSON document. `jobs cancel <id> --operator NAME`: stops a queued or running job
// before its next batch (audited); a finished one is left as it is (exit 0); unknown: exit 3.
import { jobWithFailures } from '../../admin/api/jobs/route.ts';
import { JOB_FAILURES_KEPT } from '../../db/schema.ts';
import {
  cancelBulkJob,
  getBulkJob,
  jobJson,
  jobOutcome,
  listBulkJobs,
  listJobFailures,
} from '../../ops/jobs/bulk-jobs.ts';
import { type CommandModule, EXIT, integerIn, requireOperator } from '../context.ts';
import { operatorOption } from '../options.ts';
import { formatTable, terminalJson, terminalText } from '../table.ts';

/** The printable form of an id argument: it may be anything the operator typed. */
const shownId = (id: string) => terminalText(id);

export const jobsListCommand: CommandModule = {
  path: ['jobs', 'list'],
  define: (command, run) =>
    command
      .option('--limit <n>', 'at most this many', integerIn(1, 200), 20)
      .option('--json', 'print one JSON document (an array)')
      .action(
        run(async (context, options: { limit: number; json?: boolean }) => {
          const jobs = await listBulkJobs(context.db, options.limit);
          if (options.json) {
            context.out(JSON.stringify(jobs.map(jobJson)));
          } else if (jobs.length === 0) {
            context.out('no jobs');
          } else {
            // The outcome, not the bare status: a job done with failures is not shown as a success.
            const header = ['id', 'kind', 'status', 'processed', 'total', 'failed', 'operator', 'created_at'];
            const rows = jobs.map((job) => [
              job.id,
              job.kind,
              jobOutcome(job),
              String(job.processed),
              String(job.total),
              String(job.failed),
              job.operator,
              job.createdAt.toISOString(),
            ]);
            context.out(formatTable(header, rows));
          }
          return EXIT.done;
        }),
      ),
};

export const jobsShowCommand: CommandModule = {
  path: ['jobs', 'show'],
  define: (command, run) =>
    command
      .argument('<job-id>', 'the job id, as `jobs list` shows it')
      .option('--json', 'print one JSON document')
      .action(
        run(async (context, id: string, options: { json?: boolean }) => {
          const job = await getBulkJob(context.db, id);
          if (job === undefined) {
            context.err(`not found: job ${shownId(id)}`);
            return EXIT.notFound;
          }
          const answer = jobWithFailures(job, await listJobFailures(context.db, job.id));
          if (options.json) {
            // The job as before, its failed items one field more.
            context.out(JSON.stringify({ ...answer.job, failures: answer.failures }));
            return EXIT.done;
          }
          const { filter, ...fields } = answer.job;
          const width = Math.max(...Object.keys(answer.job).map((name) => name.length));
          for (const [name, value] of Object.entries(fields)) {
            context.out(`${name.padEnd(width)}  ${terminalText(String(value ?? ''))}`);
            // The filter as one JSON object, right after the kind it filters for.
            if (name === 'kind') context.out(`${'filter'.padEnd(width)}  ${terminalJson(filter, 0)}`);
          }
          if (answer.failures.length > 0) {
            const shown = job.failed > JOB_FAILURES_KEPT ? ` (the first ${JOB_FAILURES_KEPT} of ${job.failed})` : '';
            context.out(`\nfailed items${shown}, with why:`);
            const rows = answer.failures.map((failure) => [failure.target, failure.reason]);
            context.out(formatTable(['item', 'reason'], rows));
          }
          return EXIT.done;
        }),
      ),
};

export const jobsCancelCommand: CommandModule = {
  path: ['jobs', 'cancel'],
  define: (command, run) =>
    command
      .argument('<job-id>', 'the job id')
      .addOption(operatorOption())
      .option('--json', 'print the job after as one JSON document')
      .action(
        run(async (context, id: string, options: { operator?: string; json?: boolean }) => {
          const operator = requireOperator(options.operator, 'jobs cancel');
          const result = await cancelBulkJob(context, { id, operator });
          if (result.kind === 'not_found') {
            context.err(`not found: job ${shownId(id)}`);
            return EXIT.notFound;
          }
          const { job } = result;
          if (options.json) {
            context.out(JSON.stringify({ cancelled: result.kind === 'cancelled', job: jobJson(job) }));
          } else {
            context.out(
              result.kind === 'cancelled'
                ? `cancelled job ${job.id} after ${job.processed} of ${job.total}`
                : `job ${job.id} was already ${job.status}: left as it is`,
            );
          }
          return EXIT.done;
        }),
      ),
};
