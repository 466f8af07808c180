// `webhook-inbox outbox list`: the newest outbox messages, optionally of one status, topic or destination, as a
// table or one JSON document. Payloads are not shown.
import { Option } from 'commander';
import { type OutboxStatus, outboxStatuses } from '../../db/schema.ts';
import {
  destinationWaits,
  isConfiguredDestination,
  waitingNote,
  waitingOf,
} from '../../ops/reads/destinations-view.ts';
import { listOutbox, outboxJson } from '../../ops/reads/outbox-view.ts';
import { configuredRouting } from '../../outbox/destinations.ts';
import { type CliContext, CliError, type CommandModule, EXIT } from '../context.ts';
import { listingOptions } from '../options.ts';
import { formatTable } from '../table.ts';

const iso = (date: Date) => date.toISOString();

interface OutboxListOptions {
  status?: OutboxStatus;
  topic?: string;
  destination?: string;
  limit: number;
  json?: boolean;
}

/** A destination named on the command line: a configured one, or a usage error naming those there are. */
export function requireDestination(context: CliContext, name: string, option: string): void {
  const routing = configuredRouting(context.config);
  if (isConfiguredDestination(routing, name)) return;
  const names = routing.destinations.map((destination) => destination.name).join(', ');
  throw new CliError(EXIT.usage, `${option}: not a configured destination (configured: ${names})`);
}

export const outboxListCommand: CommandModule = {
  path: ['outbox', 'list'],
  define: (command, run) =>
    listingOptions(
      command
        .description('list outbox messages, newest first (no payloads)')
        .addOption(new Option('--status <status>', 'only messages in this status').choices(outboxStatuses))
        .option('--topic <topic>', 'only messages of this topic')
        .option('--destination <name>', 'only the rows of this configured destination'),
      { max: 10_000 },
    ).action(
      run(async (context, options: OutboxListOptions) => {
        if (options.destination !== undefined) requireDestination(context, options.destination, '--destination');
        const { rows: messages } = await listOutbox(context.db, options);
        // A pending message of a destination that is not publishing says why it waits.
        const waits = await destinationWaits(context.db, messages);
        if (options.json) {
          context.out(JSON.stringify(messages.map((m) => ({ ...outboxJson(m), waiting: waitingOf(m, waits) }))));
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
            m.lastError ?? waitingNote(m, waits) ?? '',
          ]);
          context.out(formatTable(header, rows));
        }
        return undefined;
      }),
    ),
};
