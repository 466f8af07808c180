// `webhook-inbox events list`: the newest inbox events, filtered by status, provider, type, id and
// time, as a table or one JSON document. Payloads are never listed (`events show --payload` reads one).
import { InvalidArgumentError, Option } from 'commander';
import { type WebhookEventStatus, webhookEventStatuses } from '../../db/schema.ts';
import { eventJson, listEvents } from '../../ops/reads/events.ts';
import { parseTimeBound } from '../../ops/reads/time-bound.ts';
import { type CommandModule, integerIn, providerOption } from '../context.ts';
import { formatTable } from '../table.ts';

/** An option parser for --since/--until; anything else is a usage error (exit 2). */
export function timeOption(now: () => number): (value: string) => Date {
  return (value) => {
    const bound = parseTimeBound(value, now());
    if (bound === undefined)
      throw new InvalidArgumentError('expected an ISO 8601 time or a duration such as 15m, 6h, 2d');
    return bound;
  };
}

export const eventsListCommand: CommandModule = {
  path: ['events', 'list'],
  define: (command, run) =>
    command
      .description('list inbox events, newest first (no payloads)')
      .addOption(new Option('--status <status>', 'only events in this status').choices(webhookEventStatuses))
      .addOption(providerOption('only events of this provider'))
      .option('--type <type>', 'only events of this type')
      .option('--id <prefix>', 'only events whose id starts with this')
      .option(
        '--subject <id>',
        "only events about this sender's object (Stripe data.object.id, GitHub repository.full_name, Shopify's id)",
      )
      .option('--since <when>', 'received at or after: ISO 8601 time or a duration (15m, 6h, 2d)', timeOption(Date.now))
      .option('--until <when>', 'received before: ISO 8601 time or a duration', timeOption(Date.now))
      .option('--limit <n>', 'at most this many', integerIn(1, 10_000), 50)
      .option('--json', 'print one JSON document (an array)')
      .action(
        run(
          async (
            context,
            options: {
              status?: WebhookEventStatus;
              provider?: string;
              type?: string;
              id?: string;
              subject?: string;
              since?: Date;
              until?: Date;
              limit: number;
              json?: boolean;
            },
          ) => {
            const { rows: events } = await listEvents(context.db, options);
            if (options.json) {
              context.out(JSON.stringify(events.map(eventJson)));
            } else if (events.length === 0) {
              context.out('no events');
            } else {
              const header = ['provider', 'event_id', 'type', 'status', 'failed_attempts', 'received_at', 'last_error'];
              const rows = events.map((e) => [
                e.provider,
                e.eventId,
                e.eventType,
                e.status,
                String(e.attempts),
                e.receivedAt.toISOString(),
                e.lastError ?? '',
              ]);
              context.out(formatTable(header, rows));
            }
            return undefined;
          },
        ),
      ),
};
