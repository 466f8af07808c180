// `webhook-inbox rejections list`: the most recent refused deliveries the ring keeps (src/inbox/
// rejection-log.ts), newest first, filtered by sender, reason and time, as a table or one JSON document.
// The same rows as GET /admin/api/rejections: never a body, credentials already redacted.
import { Option } from 'commander';
import { rejectionJson } from '../../admin/api/rejections/route.ts';
import { rejectionProviders } from '../../admin/api/rejections/schema.ts';
import { REJECTION_RING_SIZE } from '../../inbox/rejection-log.ts';
import { type RejectionReason, rejectionReasons } from '../../lib/rejection-reasons.ts';
import { listRejections } from '../../ops/reads/rejections.ts';
import type { CommandModule } from '../context.ts';
import { listingOptions } from '../options.ts';
import { formatTable } from '../table.ts';

export const rejectionsListCommand: CommandModule = {
  path: ['rejections', 'list'],
  define: (command, run) =>
    listingOptions(
      command
        .description(`list the most recent refused deliveries (the newest ${REJECTION_RING_SIZE} are kept)`)
        .addOption(new Option('--provider <name>', 'only refusals of this sender').choices(rejectionProviders))
        .addOption(new Option('--reason <reason>', 'only refusals for this reason').choices(rejectionReasons)),
      { window: 'refused', max: REJECTION_RING_SIZE },
    ).action(
      run(
        async (
          context,
          options: {
            provider?: string;
            reason?: RejectionReason;
            since?: Date;
            until?: Date;
            limit: number;
            json?: boolean;
          },
        ) => {
          const rows = await listRejections(context.db, options);
          if (options.json) {
            context.out(JSON.stringify(rows.map(rejectionJson)));
          } else if (rows.length === 0) {
            context.out('no refused deliveries');
          } else {
            const header = ['at', 'provider', 'status', 'reason', 'detail'];
            context.out(
              formatTable(
                header,
                rows.map((row) => [
                  row.at.toISOString(),
                  row.provider,
                  String(row.statusCode),
                  row.reason,
                  row.detail ?? '',
                ]),
              ),
            );
          }
          return undefined;
        },
      ),
    ),
};
