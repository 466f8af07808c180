// `webhook-inbox jobs run [job-id]`: works through runnable bulk jobs here, as the Node schedule
// does, until none is left or the time budget is spent: how a deployment without that schedule (or
// with the service stopped) finishes a job. Also the wait of `jobs replay|retry --wait`.

import { sleep } from '../../lib/loops.ts';
import { type BulkJob, getBulkJob, isJobId, UNFINISHED } from '../../ops/jobs/bulk-jobs.ts';
import { bulkRunnerFor } from '../../ops/maintenance/drainers.ts';
import { type CliContext, CliError, type CommandModule, EXIT, integerIn } from '../context.ts';

const DEFAULT_RUN_BUDGET_MS = 3_600_000;
/** While another process holds the job, how often its progress is read. */
const POLL_MS = 1_000;

/** Batches run between two progress lines of `--wait`. */
const BATCHES_PER_PROGRESS = 10;

/**
 * Runs the job here until it is finished, its progress on stderr when that is a terminal; while
 * another runner holds it (the service), watches its progress instead.
 */
export async function waitForJob(context: CliContext, id: string): Promise<BulkJob> {
  const runner = bulkRunnerFor(context, { idPrefix: 'cli' });
  let shown = '';
  for (;;) {
    const ran = await runner.run({ budgetMs: DEFAULT_RUN_BUDGET_MS, jobId: id, maxBatches: BATCHES_PER_PROGRESS });
    if (ran.stoppedBy === 'error') {
      throw new CliError(
        EXIT.couldNotRun,
        `the database failed during a batch of job ${id}: it resumes once its lease lapses`,
      );
    }
    const job = await getBulkJob(context.db, id);
    if (job === undefined) throw new CliError(EXIT.notFound, `not found: job ${id}`);
    if (!UNFINISHED.includes(job.status)) return job;
    const holder = ran.jobs === 0 ? ', held by another runner' : '';
    const progress = `job ${id}: ${job.processed} of ${job.total} taken, ${job.failed} failed (${job.status}${holder})`;
    if (progress !== shown && context.errIsTerminal) context.err(progress);
    shown = progress;
    if (ran.jobs === 0) await sleep(POLL_MS);
  }
}

export const jobsRunCommand: CommandModule = {
  path: ['jobs', 'run'],
  define: (command, run) =>
    command
      .description(
        'work through queued or interrupted bulk jobs (or only the one named) until none is left or the budget is spent',
      )
      .argument('[job-id]', 'only this job')
      .option(
        '--budget-ms <ms>',
        'stop taking batches after this long',
        integerIn(1, 86_400_000),
        DEFAULT_RUN_BUDGET_MS,
      )
      .option('--json', 'print the summary as one JSON document')
      .action(
        run(async (context, jobId: string | undefined, options: { budgetMs: number; json?: boolean }) => {
          if (jobId !== undefined && (await getBulkJob(context.db, jobId)) === undefined) {
            context.err(`not found: job ${isJobId(jobId) ? jobId : '(not a job id)'}`);
            return EXIT.notFound;
          }
          const runner = bulkRunnerFor(context, { idPrefix: 'cli' });
          const s = await runner.run({ budgetMs: options.budgetMs, jobId });
          context.out(
            options.json
              ? JSON.stringify(s)
              : `jobs ${s.jobs}, finished ${s.finished}: ${s.items} item(s) in ${s.batches} batch(es), ` +
                  `${s.failed} failed (${s.stoppedBy})`,
          );
          return s.stoppedBy === 'error' ? EXIT.couldNotRun : EXIT.done;
        }),
      ),
};
