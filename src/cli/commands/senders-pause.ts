// `webhook-inbox senders pause <provider> --operator NAME [--for 1h | --until TIME] [--note TEXT]`:
// the sender's deliveries get 503 + Retry-After (its retries are the backlog) until it is resumed or
// the pause ends; recorded in operator_actions. What the pause may cost (a sender that never retries
// by itself, a pause longer than its retries) is printed as warnings on stderr. A sender not enabled
// in this environment exits 3.
import { InvalidArgumentError } from 'commander';
import { senderJson } from '../../admin/api/senders/route.ts';
import { PAUSE_MAX_MINUTES, pauseEndProblem, pauseSender } from '../../ops/pauses/sender-pauses.ts';
import { CliError, type CommandModule, EXIT, providerArgument, requireOperator } from '../context.ts';
import { enabledSenders } from '../enabled-senders.ts';
import { noteOption, operatorOption } from '../options.ts';
import { terminalText } from '../table.ts';

const MINUTES_PER: Readonly<Record<string, number>> = { m: 1, h: 60, d: 24 * 60 };

/** `--for`: 30m, 1h, 2d as whole minutes, from a minute to PAUSE_MAX_MINUTES. */
function pauseLength(value: string): number {
  const match = /^(\d{1,6})([mhd])$/.exec(value.trim());
  const minutes = match === null ? Number.NaN : Number(match[1]) * (MINUTES_PER[match[2] as string] ?? 0);
  if (!(minutes >= 1 && minutes <= PAUSE_MAX_MINUTES)) {
    throw new InvalidArgumentError(`expected a duration such as 30m, 1h or 2d, at most ${PAUSE_MAX_MINUTES / 1440}d`);
  }
  return minutes;
}

/** `--until`: an ISO 8601 time with its offset (checked against now in the action). */
function pauseEnd(value: string): Date {
  const typed = value.trim();
  const date = new Date(typed);
  if (!/^\d{4}-\d{2}-\d{2}T[\d:.]+(Z|[+-]\d{2}:?\d{2})$/.test(typed) || Number.isNaN(date.getTime())) {
    throw new InvalidArgumentError('expected an ISO 8601 time with its offset, such as 2026-12-02T15:00:00Z');
  }
  return date;
}

export const sendersPauseCommand: CommandModule = {
  path: ['senders', 'pause'],
  define: (command, run) =>
    command
      .description(
        'pause a sender: its deliveries are refused with 503 + Retry-After, so it retries them later; ' +
          'recorded in operator_actions. Without --for or --until it lasts until `senders resume`',
      )
      .addArgument(providerArgument())
      .addOption(operatorOption())
      .option('--for <duration>', 'end the pause after this long: 30m, 1h, 2d (at most 7d)', pauseLength)
      .option('--until <time>', 'end the pause at this time (ISO 8601 with its offset)', pauseEnd)
      .addOption(noteOption())
      .option('--json', 'print the result as one JSON document')
      .action(
        run(
          async (
            context,
            provider: string,
            options: { operator?: string; for?: number; until?: Date; note?: string; json?: boolean },
          ) => {
            const operator = requireOperator(options.operator, 'senders pause');
            if (options.for !== undefined && options.until !== undefined) {
              throw new CliError(EXIT.usage, 'senders pause: give --for or --until, not both');
            }
            const endProblem =
              options.until === undefined ? undefined : pauseEndProblem(options.until, context.clock());
            if (endProblem !== undefined) throw new CliError(EXIT.usage, `senders pause: --until ${endProblem}`);
            const result = await pauseSender(
              { ...context, enabled: enabledSenders(context.config) },
              { provider, operator, minutes: options.for, until: options.until, note: options.note },
            );
            if (result.kind === 'not_found') {
              context.err(`not found: ${provider} is not enabled here (no secret or public key; nothing was changed)`);
              return EXIT.notFound;
            }
            if (options.json) {
              const sender = senderJson({ provider, status: 'paused', pause: result.pause });
              context.out(JSON.stringify({ before: result.before, sender, warnings: result.warnings }));
              return EXIT.done;
            }
            const { until, note: kept } = result.pause;
            const end = until === null ? 'until resumed' : `until ${until.toISOString()}`;
            const again = result.before === 'paused' ? ' (it was paused: this pause replaces that one)' : '';
            context.out(`paused ${provider} ${end}${kept === null ? '' : `: ${terminalText(kept)}`}${again}`);
            for (const warning of result.warnings) context.err(`warning: ${warning}`);
            return EXIT.done;
          },
        ),
      ),
};
