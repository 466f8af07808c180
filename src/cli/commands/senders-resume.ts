// `webhook-inbox senders resume <provider> --operator NAME`: the sender's deliveries are accepted
// again (its retries drain the backlog on its own schedule); recorded in operator_actions. A sender
// that was not paused changes nothing and says so (exit 0); one neither enabled nor paused exits 3.
import { senderJson } from '../../admin/api/senders/route.ts';
import { resumeSender } from '../../ops/pauses/sender-pauses.ts';
import { type CommandModule, EXIT, providerArgument, requireOperator } from '../context.ts';
import { enabledSenders } from '../enabled-senders.ts';
import { operatorOption } from '../options.ts';

export const sendersResumeCommand: CommandModule = {
  path: ['senders', 'resume'],
  define: (command, run) =>
    command
      .description("resume a paused sender: its deliveries (the sender's retries) are accepted again")
      .addArgument(providerArgument())
      .addOption(operatorOption())
      .option('--json', 'print the result as one JSON document')
      .action(
        run(async (context, provider: string, options: { operator?: string; json?: boolean }) => {
          const operator = requireOperator(options.operator, 'senders resume');
          const result = await resumeSender(
            { ...context, enabled: enabledSenders(context.config) },
            { provider, operator },
          );
          if (result.kind === 'not_found') {
            context.err(`not found: ${provider} is neither enabled here nor paused (nothing was changed)`);
            return EXIT.notFound;
          }
          const resumed = result.kind === 'resumed';
          if (options.json) {
            context.out(JSON.stringify({ resumed, sender: senderJson({ provider, status: 'active', pause: null }) }));
          } else context.out(resumed ? `resumed ${provider}` : `${provider} was not paused (nothing was changed)`);
          return EXIT.done;
        }),
      ),
};
