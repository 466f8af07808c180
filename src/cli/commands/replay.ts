// `webhook-inbox replay <provider> <event-id…> --operator NAME [--yes]`: shows the events' current
// state, asks for confirmation on a terminal (or takes --yes), then replays them through
// src/ops/replay.ts. Unknown ids change nothing and exit 3; an event that fails again is still exit 0
// (it was replayed; its new state is printed).
import { Argument } from 'commander';
import { defaultHandlers } from '../../domain/handlers.ts';
import { getEvent } from '../../ops/events.ts';
import { REPLAYABLE, replayEvents } from '../../ops/replay.ts';
import { providers } from '../../providers/registry.ts';
import { CliError, type CommandModule, EXIT, operatorName } from '../context.ts';
import { formatTable } from '../table.ts';

export const replayCommand: CommandModule = {
  path: ['replay'],
  define: (command, run) =>
    command
      .description(
        'apply failed, parked or dead-lettered events again through the domain path; completed or ignored ' +
          'ones are left as they are; every replay is recorded in operator_actions',
      )
      .addArgument(new Argument('<provider>', 'the route name').choices(providers.map((provider) => provider.name)))
      .argument('<event-id...>', 'event ids, as `events list` shows them')
      .requiredOption('--operator <name>', 'who is doing this (recorded with each replay)', operatorName)
      .option('--yes', 'do not ask for confirmation (needed when stdin is not a terminal)')
      .action(
        run(async (context, provider: string, eventIds: string[], options: { operator: string; yes?: boolean }) => {
          if (!options.yes && context.ask === undefined) {
            throw new CliError(EXIT.usage, 'not a terminal: pass --yes to replay without confirmation');
          }
          const ids = [...new Set(eventIds)];
          const current = await Promise.all(ids.map((eventId) => getEvent(context.db, { provider, eventId })));
          const missing = ids.filter((_, index) => current[index] === undefined);
          if (missing.length > 0) {
            context.err(`not found: ${missing.map((id) => `${provider}/${id}`).join(', ')} (nothing was replayed)`);
            return EXIT.notFound;
          }
          const rows = current.flatMap((event) =>
            event === undefined
              ? []
              : [
                  [
                    event.eventId,
                    event.status,
                    String(event.attempts),
                    REPLAYABLE.includes(event.status) ? 'apply again' : 'nothing to apply (recorded only)',
                    event.lastError ?? '',
                  ],
                ],
          );
          context.out(formatTable(['event_id', 'status', 'attempts', 'replay', 'last_error'], rows));
          if (!options.yes) {
            const answer = await context.ask?.(`Replay ${ids.length} event(s) of ${provider}? [y/N] `);
            if (!/^y(es)?$/i.test((answer ?? '').trim())) {
              context.err('nothing was replayed');
              return EXIT.done;
            }
          }
          const result = await replayEvents(
            { db: context.db, handlers: defaultHandlers, clock: context.clock, logger: context.logger },
            { provider, eventIds: ids, operator: options.operator },
          );
          if (result.kind === 'not_found') {
            context.err(`not found: ${result.eventIds.map((id) => `${provider}/${id}`).join(', ')}`);
            return EXIT.notFound;
          }
          for (const event of result.events) {
            const error = event.after.lastError === null ? '' : ` (${event.after.lastError})`;
            context.out(
              event.applied
                ? `replayed ${provider}/${event.eventId}: ${event.before} -> ${event.after.status}${error}`
                : `recorded ${provider}/${event.eventId}: ${event.before}, nothing applied`,
            );
          }
          return EXIT.done;
        }),
      ),
};
