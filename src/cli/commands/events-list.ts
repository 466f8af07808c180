// `webhook-inbox events list`: the newest inbox events, filtered by status, provider and age, as a
// table or one JSON document. Payloads are never listed (`events show --payload` reads one).
import { InvalidArgumentError, Option } from 'commander';
import { type WebhookEventStatus, webhookEventStatuses } from '../../db/schema.ts';
import { eventJson, listEvents } from '../../ops/events.ts';
import { type CommandModule, integerIn } from '../context.ts';
import { formatTable } from '../table.ts';

/** An ISO 8601 time, or a duration back from now: `90s`, `15m`, `6h`, `2d`. */
export function sinceOption(now: () => number): (value: string) => Date {
  const units: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };
  return (value) => {
    const relative = /^(\d+)([smhd])$/.exec(value.trim());
    if (relative !== null) return new Date(now() - Number(relative[1]) * (units[relative[2] as string] ?? 0));
    const absolute = new Date(value);
    if (!/^\d{4}-\d{2}-\d{2}/.test(value) || Number.isNaN(absolute.getTime())) {
      throw new InvalidArgumentError('expected an ISO 8601 time or a duration such as 15m, 6h, 2d');
    }
    return absolute;
  };
}

export const eventsListCommand: CommandModule = {
  path: ['events', 'list'],
  groupDescription: 'inbox events: list, show',
  define: (command, run) =>
    command
      .description('list inbox events, newest first (no payloads)')
      .addOption(new Option('--status <status>', 'only events in this status').choices(webhookEventStatuses))
      .option('--provider <name>', 'only events of this provider')
      .option(
        '--since <when>',
        'received at or after: ISO 8601 time or a duration (15m, 6h, 2d)',
        sinceOption(Date.now),
      )
      .option('--limit <n>', 'at most this many', integerIn(1, 10_000), 50)
      .option('--json', 'print one JSON document (an array)')
      .action(
        run(
          async (
            context,
            options: { status?: WebhookEventStatus; provider?: string; since?: Date; limit: number; json?: boolean },
          ) => {
            const events = await listEvents(context.db, options);
            if (options.json) {
              context.out(JSON.stringify(events.map(eventJson)));
            } else if (events.length === 0) {
              context.out('no events');
            } else {
              const header = ['provider', 'event_id', 'type', 'status', 'attempts', 'received_at', 'last_error'];
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
