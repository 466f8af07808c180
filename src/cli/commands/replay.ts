// `webhook-inbox replay <provider> <event-id…> --operator NAME [--yes]`: shows the events' current
// state and asks for confirmation on a terminal (both on stderr), or takes --yes, then replays them
// through src/ops/actions/replay.ts. Unknown ids change nothing and exit 3; an event that fails or parks again
// exits 4 (replayFailed) once every event was tried, its new state and why printed; an event that was
// not replayable (completed, ignored) is recorded and still exit 0.
import { configuredHandlers } from '../../domain/handlers.ts';
import { REPLAYABLE, type ReplayedEvent, replayEvents } from '../../ops/actions/replay.ts';
import { type EventDetail, getEvent } from '../../ops/reads/events.ts';
import { CliError, type CommandModule, EXIT, providerArgument, requireOperator } from '../context.ts';
import { operatorOption } from '../options.ts';
import { formatTable, terminalText } from '../table.ts';

/** `provider/id, …` for human output, each id escaped (src/cli/table.ts). */
const targets = (provider: string, ids: readonly string[]) =>
  ids.map((id) => `${provider}/${terminalText(id)}`).join(', ');

export const replayCommand: CommandModule = {
  path: ['replay'],
  define: (command, run) =>
    command
      .description(
        'apply failed, parked or dead-lettered events again through the domain path; completed or ignored ' +
          'ones are left as they are; every replay is recorded in operator_actions',
      )
      .addArgument(providerArgument())
      .argument('<event-id...>', 'event ids, as `events list` shows them')
      .addOption(operatorOption('recorded with each replay'))
      .option('--yes', 'do not ask for confirmation (needed when stdin is not a terminal)')
      .option('--json', 'print the outcome as one JSON document')
      .action(
        run(
          async (
            context,
            provider: string,
            eventIds: string[],
            options: { operator?: string; yes?: boolean; json?: boolean },
          ) => {
            const operator = requireOperator(options.operator, 'replay');
            if (!options.yes && context.ask === undefined) {
              throw new CliError(EXIT.usage, 'not a terminal: pass --yes to replay without confirmation');
            }
            const ids = [...new Set(eventIds)];
            const current = await Promise.all(ids.map((eventId) => getEvent(context.db, { provider, eventId })));
            const missing = ids.filter((_, index) => current[index] === undefined);
            if (missing.length > 0) {
              context.err(`not found: ${targets(provider, missing)} (nothing was replayed)`);
              return EXIT.notFound;
            }
            if (!options.yes) {
              // The plan goes where the question goes: stdout stays the command's answer.
              context.err(planTable(current));
              const answer = await context.ask?.(`Replay ${ids.length} event(s) of ${provider}? [y/N] `);
              if (!/^y(es)?$/i.test((answer ?? '').trim())) {
                context.err('nothing was replayed');
                return EXIT.done;
              }
            }
            const result = await replayEvents(
              {
                db: context.db,
                handlers: configuredHandlers(context.config, context.logger),
                clock: context.clock,
                logger: context.logger,
              },
              { provider, eventIds: ids, operator },
            );
            if (result.kind === 'not_found') {
              context.err(`not found: ${targets(provider, result.eventIds)}`);
              return EXIT.notFound;
            }
            if (options.json) {
              context.out(
                JSON.stringify(
                  result.events.map((event) => ({
                    provider,
                    event_id: event.eventId,
                    before: event.before,
                    after: event.after.status,
                    applied: event.applied,
                    reason: event.reason ?? null,
                  })),
                ),
              );
              return exitOf(result.events);
            }
            for (const event of result.events) {
              const target = targets(provider, [event.eventId]);
              const reason = event.reason === undefined ? '' : `: ${terminalText(event.reason)}`;
              const change = `${event.before} -> ${event.after.status}`;
              context.out(
                event.outcome === 'applied'
                  ? `replayed ${target}: ${change}${reason}`
                  : event.outcome === 'failed'
                    ? `replay failed ${target}: ${change}${reason}`
                    : `not replayed ${target}${reason}`,
              );
            }
            return exitOf(result.events);
          },
        ),
      ),
};

/** Done, unless some event went through the domain path and failed or parked again. */
const exitOf = (events: readonly ReplayedEvent[]) =>
  events.some((event) => event.outcome === 'failed') ? EXIT.replayFailed : EXIT.done;

/** What the replay is about to do, one row per event, shown before the question. */
function planTable(events: ReadonlyArray<EventDetail | undefined>): string {
  const rows = events.flatMap((event) =>
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
  return formatTable(['event_id', 'status', 'attempts', 'replay', 'last_error'], rows);
}
