// `webhook-inbox outbox retry <id…> --operator NAME`: dead messages back to pending (attempts 0, due
// now), audited per message. All or nothing: an unknown id changes nothing and exits 3. A message
// that is not dead is left alone and reported; that alone is still exit 0.
import { InvalidArgumentError } from 'commander';
import { retryOutbox } from '../../ops/actions/retry.ts';
import { isMessageId } from '../../outbox/operator.ts';
import { type CommandModule, EXIT, requireOperator } from '../context.ts';
import { operatorOption } from '../options.ts';

// Checked while parsing, before any database work: a bad argument is a usage error (exit 2).
function messageIds(value: string, previous: string[] = []): string[] {
  if (!isMessageId(value)) throw new InvalidArgumentError(`not a message id: ${value}`);
  return [...previous, value];
}

export const outboxRetryCommand: CommandModule = {
  path: ['outbox', 'retry'],
  define: (command, run) =>
    command
      .description('send dead outbox messages back to pending (attempts 0, due now); recorded in operator_actions')
      .argument('<id...>', 'message ids (uuid)', messageIds)
      .addOption(operatorOption('recorded with each retry'))
      .option('--json', 'print the result as one JSON document')
      .action(
        run(async (context, ids: string[], options: { operator?: string; json?: boolean }) => {
          const operator = requireOperator(options.operator, 'outbox retry');
          const result = await retryOutbox(context, { ids, operator });
          if (result.kind === 'not_found') {
            context.err(`not found: ${result.ids.join(', ')} (nothing was changed)`);
            return EXIT.notFound;
          }
          if (options.json) {
            context.out(JSON.stringify({ retried: result.ids, skipped: result.skipped }));
            return EXIT.done;
          }
          for (const id of result.ids) context.out(`retried ${id}`);
          for (const { id, status } of result.skipped) {
            context.out(`skipped ${id}: ${status}, not dead (only dead messages are retried)`);
          }
          return EXIT.done;
        }),
      ),
};
