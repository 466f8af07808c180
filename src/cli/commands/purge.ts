// `webhook-inbox purge`: retention by PAYLOAD_RETENTION_DAYS and EVENT_RETENTION_DAYS, batched, once;
// prints how many payloads were nulled and rows deleted (events, and delivery-log rows of events not kept).
import { purgeByRetention } from '../../inbox/retention.ts';
import { type CommandModule, integerIn } from '../context.ts';

export const purgeCommand: CommandModule = {
  path: ['purge'],
  define: (command, run) =>
    command
      .description(
        'null payloads of finished events after PAYLOAD_RETENTION_DAYS, delete them after EVENT_RETENTION_DAYS',
      )
      .option('--budget-ms <ms>', 'stop starting new batches after this long', integerIn(1, 3_600_000), 60_000)
      .option('--json', 'print the summary as one JSON document')
      .action(
        run(async (context, options: { budgetMs: number; json?: boolean }) => {
          const { config } = context;
          const summary = await purgeByRetention(context.db, config, {
            nowMs: context.clock,
            budgetMs: options.budgetMs,
          });
          context.out(
            options.json
              ? JSON.stringify(summary)
              : `nulled ${summary.payloadsNulled} payload${summary.payloadsNulled === 1 ? '' : 's'} ` +
                  `(older than ${config.PAYLOAD_RETENTION_DAYS} days), deleted ${summary.rowsDeleted} ` +
                  `event${summary.rowsDeleted === 1 ? '' : 's'} (older than ${config.EVENT_RETENTION_DAYS} days) ` +
                  `and ${summary.deliveriesDeleted} delivery-log row${summary.deliveriesDeleted === 1 ? '' : 's'} of events not kept ` +
                  `(${summary.batches} batch${summary.batches === 1 ? '' : 'es'}, ${summary.stoppedBy})`,
          );
          return undefined;
        }),
      ),
};
