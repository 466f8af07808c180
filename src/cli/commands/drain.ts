// `webhook-inbox drain`: one relay pass over the outbox, as the in-process schedule runs it, and a
// summary. Failed deliveries are rescheduled or dead-lettered as usual: that is still exit 0.
import { ConfigError } from '../../config.ts';
import { relayFor } from '../../ops/maintenance/drainers.ts';
import { configuredRouting } from '../../outbox/destinations.ts';
import { nodeDestinationPublishers } from '../../outbox/publishers/node.ts';
import { DEFAULT_BUDGET_MS } from '../../outbox/relay.ts';
import { closePublishers, type DestinationPublisher } from '../../outbox/relays.ts';
import { CliError, type CommandModule, EXIT, integerIn } from '../context.ts';

export const drainCommand: CommandModule = {
  path: ['drain'],
  define: (command, run) =>
    command
      .description('publish due outbox messages once: batches until one comes back short or the time budget is spent')
      .option(
        '--budget-ms <ms>',
        'stop claiming new batches after this long',
        integerIn(1, 3_600_000),
        DEFAULT_BUDGET_MS,
      )
      .option('--json', 'print the summary as one JSON document')
      .action(
        run(async (context, options: { budgetMs: number; json?: boolean }) => {
          const { config, clock, logger } = context;
          let publishers: DestinationPublisher[];
          try {
            publishers = nodeDestinationPublishers(configuredRouting(config), {
              clock,
              logger,
              timeoutMs: config.OUTBOX_TIMEOUT_MS,
            });
          } catch (error) {
            if (error instanceof ConfigError) throw new CliError(EXIT.couldNotRun, error.message);
            throw error;
          }
          const relay = relayFor(context, publishers, { settings: { budgetMs: options.budgetMs } });
          const summary = await relay.drain().finally(() => closePublishers(publishers));
          context.out(
            options.json
              ? JSON.stringify(summary)
              : `claimed ${summary.claimed}: published ${summary.published}, retried ${summary.retried}, ` +
                  `dead ${summary.dead}, released ${summary.released} ` +
                  `(${summary.batches} batch${summary.batches === 1 ? '' : 'es'}, ${summary.elapsedMs} ms, ${summary.stoppedBy})`,
          );
          return undefined;
        }),
      ),
};
