// `webhook-inbox events list`: the newest inbox events, filtered by status, provider, type, id and
// time, as a table or one JSON document. Payloads are never listed (`events show --payload` reads one).
import { Option } from 'commander';
import { type WebhookEventStatus, webhookEventStatuses } from '../../db/schema.ts';
import { eventJson, listEvents } from '../../ops/reads/events.ts';
import { type CommandModule, providerOption } from '../context.ts';
import { listingOptions } from '../options.ts';
import { formatTable } from '../table.ts';

export const eventsListCommand: CommandModule = {
  path: ['events', 'list'],
  define: (command, run) =>
    listingOptions(
      command
        .description('list inbox events, newest first (no payloads)')
        .addOption(new Option('--status <status>', 'only events in this status').choices(webhookEventStatuses))
        .addOption(providerOption('only events of this provider'))
        .option('--type <type>', 'only events of this type')
        .option('--id <prefix>', 'only events whose id starts with this')
        .option(
          '--subject <id>',
          "only events about this sender's object (Stripe data.object.id, GitHub repository.full_name, Shopify's id)",
        ),
      { window: 'received', max: 10_000 },
    ).action(
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
