// `webhook-inbox destinations list`: every configured outbox destination with its state (healthy,
// open, half_open, paused), backlog, recent publish rate and redacted target, as a table (then, for
// each one not healthy, why its messages wait) or one JSON document (the admin API's shape). Only
// configured names: the configuration is the list.
import { destinationJson, listDestinations, targetText } from '../../ops/reads/destinations-view.ts';
import { configuredRouting } from '../../outbox/destinations.ts';
import type { CommandModule } from '../context.ts';
import { formatTable } from '../table.ts';

export const destinationsListCommand: CommandModule = {
  path: ['destinations', 'list'],
  define: (command, run) =>
    command
      .description(
        'list the configured outbox destinations (OUTBOX_DESTINATIONS, OUTBOX_TARGET_URL): state, backlog, published per minute over the last 5 minutes, target without credentials',
      )
      .option('--json', 'print one JSON document (an array)')
      .action(
        run(async (context, options: { json?: boolean }) => {
          const destinations = await listDestinations(context.db, configuredRouting(context.config), context.clock());
          if (options.json) {
            context.out(JSON.stringify(destinations.map(destinationJson)));
            return undefined;
          }
          const rows = destinations.map((destination) => [
            destination.name,
            destination.state,
            String(destination.backlog.pending),
            String(destination.backlog.dead),
            String(destination.publishedPerMinute),
            destination.pausedBy ?? '',
            targetText(destination.target),
          ]);
          const header = ['name', 'state', 'pending', 'dead', 'per_minute', 'paused_by', 'target'];
          context.out(formatTable(header, rows));
          // Below the table, one line each: why a destination that is not healthy holds its messages.
          for (const destination of destinations) {
            if (destination.waiting !== null) context.out(`${destination.name}: ${destination.waiting}`);
          }
          return undefined;
        }),
      ),
};
