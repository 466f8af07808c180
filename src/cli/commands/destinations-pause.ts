// `webhook-inbox destinations pause <name> --operator NAME [--note TEXT]` and
// `webhook-inbox destinations resume <name> --operator NAME`: an outbox destination's relays claim
// nothing while it is paused (its messages wait, attempts untouched) and publish them once it is
// resumed; both recorded in operator_actions. A name that is not a configured destination
// (OUTBOX_DESTINATIONS, or `default` for OUTBOX_TARGET_URL) exits 3.
import { destinationStateJson } from '../../admin/api/destinations/route.ts';
import {
  type DestinationPauseContext,
  pauseDestination,
  resumeDestination,
} from '../../ops/pauses/destination-pauses.ts';
import { configuredRouting } from '../../outbox/destinations.ts';
import { type CliContext, type CommandModule, EXIT, requireOperator } from '../context.ts';
import { noteOption, operatorOption } from '../options.ts';
import { terminalText } from '../table.ts';

function pauseContext(context: CliContext): DestinationPauseContext {
  const configured = new Set(configuredRouting(context.config).destinations.map(({ name }) => name));
  return { db: context.db, clock: context.clock, logger: context.logger, configured };
}

function notConfigured(context: CliContext, name: string) {
  context.err(`not found: ${terminalText(name)} is not a configured outbox destination (nothing was changed)`);
  return EXIT.notFound;
}

export const destinationsPauseCommand: CommandModule = {
  path: ['destinations', 'pause'],
  define: (command, run) =>
    command
      .description(
        'pause an outbox destination: its relays claim nothing and its messages wait (attempts untouched) ' +
          'until `destinations resume`; recorded in operator_actions',
      )
      .argument('<name>', 'the destination (a name of OUTBOX_DESTINATIONS, or default)')
      .addOption(operatorOption())
      .addOption(noteOption())
      .option('--json', 'print the result as one JSON document')
      .action(
        run(async (context, name: string, options: { operator?: string; note?: string; json?: boolean }) => {
          const operator = requireOperator(options.operator, 'destinations pause');
          const result = await pauseDestination(pauseContext(context), { name, operator, note: options.note });
          if (result.kind === 'not_found') return notConfigured(context, name);
          if (options.json) {
            context.out(
              JSON.stringify({ before: result.before, destination: destinationStateJson(result.destination) }),
            );
          } else {
            const again = result.before === 'paused' ? ' (it was paused already)' : '';
            context.out(`paused ${name}: its messages wait until \`destinations resume ${name}\`${again}`);
          }
          return EXIT.done;
        }),
      ),
};

export const destinationsResumeCommand: CommandModule = {
  path: ['destinations', 'resume'],
  define: (command, run) =>
    command
      .description("resume a paused outbox destination: its waiting messages are published at the relays' next drain")
      .argument('<name>', 'the destination (a name of OUTBOX_DESTINATIONS, or default)')
      .addOption(operatorOption())
      .option('--json', 'print the result as one JSON document')
      .action(
        run(async (context, name: string, options: { operator?: string; json?: boolean }) => {
          const operator = requireOperator(options.operator, 'destinations resume');
          const result = await resumeDestination(pauseContext(context), { name, operator });
          if (result.kind === 'not_found') return notConfigured(context, name);
          const resumed = result.kind === 'resumed';
          if (options.json) {
            context.out(JSON.stringify({ resumed, destination: destinationStateJson(result.destination) }));
          } else context.out(resumed ? `resumed ${name}` : `${name} was not paused (nothing was changed)`);
          return EXIT.done;
        }),
      ),
};
