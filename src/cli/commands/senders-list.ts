// `webhook-inbox senders list`: every enabled sender and whether it is paused (by whom, since when,
// until when, why), as a table or one JSON document (the admin API's shape).
import { senderJson } from '../../admin/api/senders/route.ts';
import { listSenders } from '../../ops/pauses/sender-pauses.ts';
import type { CommandModule } from '../context.ts';
import { enabledSenders } from '../enabled-senders.ts';
import { formatTable } from '../table.ts';

export const sendersListCommand: CommandModule = {
  path: ['senders', 'list'],
  define: (command, run) =>
    command
      .description('list the enabled senders (this environment: secrets and public keys) and their pauses')
      .option('--json', 'print one JSON document (an array)')
      .action(
        run(async (context, options: { json?: boolean }) => {
          const senders = await listSenders(context.db, enabledSenders(context.config), context.clock());
          if (options.json) {
            context.out(JSON.stringify(senders.map(senderJson)));
          } else if (senders.length === 0) {
            context.out('no sender is enabled in this environment');
          } else {
            const rows = senders.map(({ provider, status, pause }) => [
              provider,
              status,
              pause?.pausedBy ?? '',
              pause?.pausedAt.toISOString() ?? '',
              pause === null ? '' : (pause.until?.toISOString() ?? 'until resumed'),
              pause?.note ?? '',
            ]);
            context.out(formatTable(['provider', 'status', 'paused_by', 'paused_at', 'until', 'note'], rows));
          }
          return undefined;
        }),
      ),
};
