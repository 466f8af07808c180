// `webhook-inbox events show <provider> <event-id>`: one event's state, attempts, last error and
// timestamps; its payload only with --payload (it may hold personal data), as indented JSON with every
// number as stored (also with --json, compact). Unknown: exit 3.
import { exactJsonText } from '../../lib/json-out.ts';
import { eventJson, getEvent } from '../../ops/events.ts';
import { type CommandModule, EXIT, providerArgument } from '../context.ts';
import { terminalJson, terminalText } from '../table.ts';

export const eventsShowCommand: CommandModule = {
  path: ['events', 'show'],
  define: (command, run) =>
    command
      .summary('show one event')
      .description("show one event's state, attempts, last error and timestamps")
      .addArgument(providerArgument())
      .argument('<event-id>', 'the event id')
      .option('--payload', 'include the stored payload (null once retention purged it)')
      .option('--json', 'print one JSON document')
      .action(
        run(async (context, provider: string, eventId: string, options: { payload?: boolean; json?: boolean }) => {
          const event = await getEvent(context.db, { provider, eventId }, { payload: options.payload === true });
          if (event === undefined) {
            context.err(`not found: ${provider}/${terminalText(eventId)}`);
            return EXIT.notFound;
          }
          const json = eventJson(event);
          if (options.json) {
            context.out(exactJsonText(json));
          } else {
            const { payload, ...fields } = json as typeof json & { payload?: unknown };
            const width = Math.max(...Object.keys(fields).map((name) => name.length));
            for (const [name, value] of Object.entries(fields)) {
              context.out(`${name.padEnd(width)}  ${terminalText(String(value ?? ''))}`);
            }
            if (options.payload) context.out(`payload\n${terminalJson(payload ?? null)}`);
          }
          return EXIT.done;
        }),
      ),
};
