// `webhook-inbox work`: one async inbox worker pass, as the in-process schedule runs it, and a
// summary. Events that failed and were rescheduled or dead-lettered are still exit 0 (the contract).
import { DEFAULT_WORKER_BUDGET_MS } from '../../inbox/worker.ts';
import { inboxWorkerFor } from '../../ops/maintenance/drainers.ts';
import { type CommandModule, integerIn } from '../context.ts';

export const workCommand: CommandModule = {
  path: ['work'],
  define: (command, run) =>
    command
      .description('apply due async inbox events once: batches until one comes back short or the time budget is spent')
      .option(
        '--budget-ms <ms>',
        'stop claiming new batches after this long',
        integerIn(1, 3_600_000),
        DEFAULT_WORKER_BUDGET_MS,
      )
      .option('--json', 'print the summary as one JSON document')
      .action(
        run(async (context, options: { budgetMs: number; json?: boolean }) => {
          // The CLI's pool holds at most four connections: one application per connection.
          const worker = inboxWorkerFor(context, { settings: { budgetMs: options.budgetMs } });
          const s = await worker.work();
          context.out(
            options.json
              ? JSON.stringify(s)
              : `claimed ${s.claimed}: completed ${s.completed}, ignored ${s.ignored}, parked ${s.parked}, ` +
                  `failed ${s.failed}, dead-lettered ${s.deadLettered}, skipped ${s.skipped}, released ${s.released} ` +
                  `(${s.batches} batch${s.batches === 1 ? '' : 'es'}, ${s.elapsedMs} ms, ${s.stoppedBy})`,
          );
          return undefined;
        }),
      ),
};
