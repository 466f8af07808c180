// The options several commands share, each written once with its words and its parser: a listing's
// time window, page size and --json, and an operator action's --operator and a pause's --note.
import { type Command, InvalidArgumentError, Option } from 'commander';
import { pauseNoteProblem } from '../ops/pauses/sender-pauses.ts';
import { parseTimeBound } from '../ops/reads/time-bound.ts';
import { integerIn, operatorName } from './context.ts';

/** An option parser for --since/--until; anything else is a usage error (exit 2). */
export function timeOption(now: () => number): (value: string) => Date {
  return (value) => {
    const bound = parseTimeBound(value, now());
    if (bound === undefined)
      throw new InvalidArgumentError('expected an ISO 8601 time or a duration such as 15m, 6h, 2d');
    return bound;
  };
}

/** --since and --until, bounds of the time `column` names (received, refused, created). */
export function windowOptions(command: Command, column: string): Command {
  return command
    .option('--since <when>', `${column} at or after: ISO 8601 time or a duration (15m, 6h, 2d)`, timeOption(Date.now))
    .option('--until <when>', `${column} before: ISO 8601 time or a duration`, timeOption(Date.now));
}

/**
 * A listing's last options: its time window where it has one (`window`: the time it bounds), then
 * --limit (1 to `max`, 50 by default) and --json (an array).
 */
export function listingOptions(command: Command, listing: { window?: string; max: number }): Command {
  if (listing.window !== undefined) windowOptions(command, listing.window);
  return command
    .option('--limit <n>', 'at most this many', integerIn(1, listing.max), 50)
    .option('--json', 'print one JSON document (an array)');
}

/** --operator: who is doing this, checked by the admin API's rule; `recorded` says where it is kept. */
export const operatorOption = (recorded = 'recorded') =>
  new Option('--operator <name>', `who is doing this (required; ${recorded})`).argParser(operatorName);

/** --note on a pause (a sender's or a destination's): one line, why, for the other operators. */
export const noteOption = () =>
  new Option('--note <text>', 'why, for the other operators').argParser((value) => {
    const problem = pauseNoteProblem(value.trim());
    if (problem !== undefined) throw new InvalidArgumentError(problem);
    return value.trim();
  });
