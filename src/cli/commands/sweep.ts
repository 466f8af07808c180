// `webhook-inbox sweep`: inbox rows left `processing` by a worker whose lease expired go back to
// `received`, claimable again; prints how many.
import { sweepExpiredLeases } from '../../inbox/sweep.ts';
import { type CommandModule, integerIn } from '../context.ts';

export const sweepCommand: CommandModule = {
  path: ['sweep'],
  define: (command, run) =>
    command
      .description('make async inbox events whose worker lease expired claimable again')
      .option('--budget-ms <ms>', 'stop starting new batches after this long', integerIn(1, 3_600_000), 20_000)
      .option('--json', 'print the summary as one JSON document')
      .action(
        run(async (context, options: { budgetMs: number; json?: boolean }) => {
          const summary = await sweepExpiredLeases(context.db, { nowMs: context.clock, budgetMs: options.budgetMs });
          context.out(
            options.json
              ? JSON.stringify(summary)
              : `swept ${summary.swept} expired lease${summary.swept === 1 ? '' : 's'} (${summary.stoppedBy})`,
          );
          return undefined;
        }),
      ),
};
