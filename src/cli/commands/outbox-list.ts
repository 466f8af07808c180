// `webhook-inbox outbox list`: the newest outbox messages, optionally of one status, topic or destination, as a
// table or one JSON document. Payloads are not shown.
import { Option } from 'commander';
import { type OutboxStatus, outboxStatuses } from '../../db/schema.ts';
import { isConfiguredDestination } from '../../ops/destinations-view.ts';
import { listOutbox, outboxJson } from '../../ops/outbox-view.ts';
import { configuredRouting } from '../../outbox/destinations.ts';
import { CliError, type CommandModule, EXIT, integerIn } from '../context.ts';
import { formatTable } from '../table.ts';

const iso = (date: Date) => date.toISOString();

interface OutboxListOptions {
  status?: OutboxStatus;
  topic?: string;
  destination?: string;
  limit: number;
  json?: boolean;
}

export const outboxListCommand: CommandModule = {
  path: ['outbox', 'list'],
  groupDescription: 'outbox messages: list, retry dead ones',
  define: (command, run) =>
    command
      .summary('list outbox messages, newest first')
      .description('list outbox messages, newest first (no payloads)')
      .addOption(new Option('--status <status>', 'only messages in this status').choices(outboxStatuses))
      .option('--topic <topic>', 'only messages of this topic')
      .option('--destination <name>', 'only the rows of this configured destination')
      .option('--limit <n>', 'at most this many', integerIn(1, 10_000), 50)
      .option('--json', 'print one JSON document (an array)')
      .action(
        run(async (context, options: OutboxListOptions) => {
          const routing = configuredRouting(context.config);
          if (options.destination !== undefined && !isConfiguredDestination(routing, options.destination)) {
            const names = routing.destinations.map(({ name }) => name).join(', ');
            throw new CliError(EXIT.usage, `--destination: not a configured destination (configured: ${names})`);
          }
          const { rows: messages } = await listOutbox(context.db, options);
          if (options.json) {
            context.out(JSON.stringify(messages.map(outboxJson)));
          } else if (messages.length === 0) {
            context.out('no messages');
          } else {
            const header = [
              'id',
              'status',
              'attempts',
              'topic',
              'destination',
              'created_at',
              'available_at',
              'last_error',
            ];
            const rows = messages.map((m) => [
              m.id,
              m.status,
              String(m.attempts),
              m.topic,
              m.destination,
              iso(m.createdAt),
              iso(m.availableAt),
              m.lastError ?? '',
            ]);
            context.out(formatTable(header, rows));
          }
          return undefined;
        }),
      ),
};
