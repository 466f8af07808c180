// `webhook-inbox events show <provider> <event-id>`: one event's state, attempts, last error and
// timestamps, then its delivery log (each delivery's time, answer, time taken, trace id; a run of
// identical duplicates as one line with how many and the newest's time); its payload only with --payload (it may hold personal data), as indented JSON with every
// number as stored (also with --json, compact). Unknown: exit 3.

import { DELIVERY_LOG_CAP, deliveriesOf } from '../../inbox/delivery-log.ts';
import { exactJsonText } from '../../lib/json-out.ts';
import { deliveryJson, eventJson, getEvent, repeatsText } from '../../ops/reads/events.ts';
import { type CommandModule, EXIT, senderArgument } from '../context.ts';
import { formatTable, terminalJson, terminalText } from '../table.ts';

export const eventsShowCommand: CommandModule = {
  path: ['events', 'show'],
  define: (command, run) =>
    command
      .description("show one event's state, attempts, last error, timestamps and delivery log")
      .addArgument(senderArgument())
      .argument('<event-id>', 'the event id')
      .option('--payload', 'include the stored payload (null once retention purged it)')
      .option('--json', 'print one JSON document')
      .action(
        run(async (context, provider: string, eventId: string, options: { payload?: boolean; json?: boolean }) => {
          const key = { provider, eventId };
          const [event, deliveries] = await Promise.all([
            getEvent(context.db, key, { payload: options.payload === true }),
            deliveriesOf(context.db, key),
          ]);
          if (event === undefined) {
            context.err(`not found: ${provider}/${terminalText(eventId)}`);
            return EXIT.notFound;
          }
          const json = eventJson(event);
          const logged = deliveries.map(deliveryJson);
          if (options.json) {
            context.out(exactJsonText({ ...json, deliveries: logged }));
          } else {
            const { payload, ...fields } = json as typeof json & { payload?: unknown };
            const named = Object.entries(fields).map(
              ([name, value]) => [humanName(name, event.status), value] as const,
            );
            const width = Math.max(...named.map(([name]) => name.length));
            for (const [name, value] of named) {
              context.out(`${name.padEnd(width)}  ${terminalText(String(value ?? ''))}`);
            }
            // Before the payload, which a reader takes as the rest of the output.
            context.out(`\ndeliveries (${logged.length} kept, newest first, at most ${DELIVERY_LOG_CAP})`);
            if (logged.length > 0) {
              // A run of identical duplicates is one line: "200 duplicate ×37, last 12:03:04".
              const rows = deliveries.map((d) => [
                d.deliveredAt.toISOString(),
                `${d.statusCode} ${d.outcome}${d.repeats === 0 ? '' : ` ${repeatsText(d)}`}`,
                `${d.durationMs} ms`,
                d.traceId,
              ]);
              context.out(formatTable(['delivered (UTC)', 'answer', 'took', 'trace id'], rows));
            }
            if (options.payload) context.out(`payload\n${terminalJson(payload ?? null)}`);
          }
          return EXIT.done;
        }),
      ),
};

/**
 * A field's name in human output, where the wire name says less than the truth: `attempts` counts
 * failed applications only (a completed event's 0 is no missing try), and a parked event's
 * `last_error` is why it is parked.
 */
function humanName(name: string, status: string): string {
  if (name === 'attempts') return 'failed_attempts';
  return name === 'last_error' && status === 'parked' ? 'parked_because' : name;
}
