// The outbox's destinations: where a message may go and which messages each one wants, read once at
// start-up from OUTBOX_DESTINATIONS (JSON text, or the file OUTBOX_DESTINATIONS_FILE names) and from
// the OUTBOX_TARGET_URL shorthand. A destination is a name, a target (any form OUTBOX_TARGET_URL
// takes, or `queue:BINDING` for a Workers Queues binding) and filters on the message's topic and on
// its event's sender and type. The enqueue writes one row per matching destination (enqueue.ts);
// the relay claims and publishes each destination's rows with that destination's publisher
// (ops/maintenance/drainers.ts). Web standards only: the Worker parses the same variable.
import { z } from 'zod';
import { type Config, ConfigError } from '../config.ts';
import type { Logger } from '../lib/logger.ts';
import { parseOutboxTarget } from './target.ts';

/** The destination OUTBOX_TARGET_URL names, or the log when nothing is configured: today's one destination. */
export const DEFAULT_DESTINATION = 'default';

export const DESTINATIONS_VARIABLE = 'OUTBOX_DESTINATIONS';

/** Lowercase so a name reads the same in a key, a log line and a URL; no `@` (the key's separator). */
const DESTINATION_NAME = /^[a-z0-9][a-z0-9_-]{0,39}$/;

/** More would be a routing system of its own; every destination costs a publisher and a drain loop. */
export const MAX_DESTINATIONS = 32;

/** A Workers Queues producer binding as a destination's target: `queue:OUTBOX_QUEUE`. */
export const QUEUE_TARGET_PREFIX = 'queue:';
const QUEUE_BINDING = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;

/**
 * A breaker that never opens would hold nothing back; one that opens on a few failures trips on a
 * target that is only flaky. Publishes settle dozens at a time, so a target failing half of them
 * shows 5 failures in a row within a few hundred messages almost surely (and held everything back
 * for a cool-off), while 20 in a row comes once in about a million publishes; a target that is down
 * reaches 20 within its first wave of concurrent publishes.
 */
export const DEFAULT_BREAKER_FAILURES = 20;
export const DEFAULT_BREAKER_COOLOFF_SECONDS = 30;

/**
 * Per-destination tuning, each with its default; strict, so a misspelt key is an error. Read by the
 * destination's relay (relay.ts): `rate_per_second` and `concurrency` hold per relay process,
 * the breaker's counts are shared by every process through outbox_destinations (destination-state.ts).
 */
const settingsSchema = z
  .strictObject({
    /** Messages per second this process publishes to the destination; absent: as fast as it answers. */
    rate_per_second: z.number().positive('must be above 0').max(100_000).optional(),
    /** Publishes in flight to the destination; absent: the runner's concurrency split evenly. */
    concurrency: z.number().int('a whole number').min(1).max(1024).optional(),
    /** Consecutive failed publishes that open the circuit. */
    breaker_failures: z.number().int('a whole number').min(1).max(10_000).default(DEFAULT_BREAKER_FAILURES),
    /** How long an open circuit waits before one probe. */
    breaker_cooloff_seconds: z
      .number()
      .positive('must be above 0')
      .max(86_400)
      .default(DEFAULT_BREAKER_COOLOFF_SECONDS),
  })
  .default({ breaker_failures: DEFAULT_BREAKER_FAILURES, breaker_cooloff_seconds: DEFAULT_BREAKER_COOLOFF_SECONDS });
export type DestinationSettings = z.infer<typeof settingsSchema>;

/** What a destination without settings (`default`, OUTBOX_TARGET_URL's) gets. */
export const DEFAULT_SETTINGS: DestinationSettings = settingsSchema.parse(undefined);

/** A name or a `*` glob (`*` matches any run of characters, dots included). */
const pattern = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[\x21-\x7e]+$/, 'printable ASCII without spaces');

const patternList = z.array(pattern).min(1, 'an empty list matches nothing; leave it out to match every value');

const destinationSchema = z.strictObject({
  name: z
    .string()
    .regex(DESTINATION_NAME, 'lowercase letters, digits, - and _, starting with a letter or digit, at most 40')
    .refine((name) => name !== DEFAULT_DESTINATION, `"${DEFAULT_DESTINATION}" is OUTBOX_TARGET_URL's; choose another`),
  url: z.string().min(1),
  topics: patternList.optional(),
  senders: patternList.optional(),
  types: patternList.optional(),
  settings: settingsSchema,
});

const destinationsSchema = z
  .array(destinationSchema)
  .min(1, 'lists no destination; unset it to use OUTBOX_TARGET_URL alone')
  .max(MAX_DESTINATIONS);

/** What a destination's filters look at: the message's topic, its event's sender and type. */
export interface MessageFacts {
  topic: string;
  sender: string;
  type: string;
}

export interface Destination {
  name: string;
  /** OUTBOX_TARGET_URL's forms, or `queue:BINDING`; undefined for the log (the default without a target). */
  url: string | undefined;
  /** Checked once at start-up: true when the filters let the message through. */
  matches(facts: MessageFacts): boolean;
  settings: DestinationSettings;
  /** The patterns `matches` was compiled from, as configured (absent: every value), for operators to read. */
  filters?: DestinationFilters;
}

export interface DestinationFilters {
  topics?: readonly string[] | undefined;
  senders?: readonly string[] | undefined;
  types?: readonly string[] | undefined;
}

/** Which destinations a message goes to, and the names of all of them (for the relay's loops). */
export interface DestinationRouting {
  readonly destinations: readonly Destination[];
  /** The names of the destinations whose filters match, in configuration order. */
  route(facts: MessageFacts): string[];
  /** Told of a message no destination matches (it is not written): a debug line, where there is a logger. */
  unrouted?(facts: MessageFacts): void;
}

const everything = () => true;

/** One compiled pattern list: exact names by lookup, globs as anchored expressions. */
function matcherOf(patterns: readonly string[] | undefined): (value: string) => boolean {
  if (patterns === undefined || patterns.includes('*')) return everything;
  const exact = new Set(patterns.filter((entry) => !entry.includes('*')));
  const globs = patterns
    .filter((entry) => entry.includes('*'))
    .map(
      (glob) =>
        new RegExp(
          `^${glob
            .split('*')
            .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
            .join('.*')}$`,
        ),
    );
  return (value) => exact.has(value) || globs.some((glob) => glob.test(value));
}

export function routingOf(destinations: readonly Destination[]): DestinationRouting {
  return {
    destinations,
    route: (facts) => destinations.filter((destination) => destination.matches(facts)).map(({ name }) => name),
  };
}

/** No configuration at all: every message to `default`, published to the log. */
export const DEFAULT_ROUTING: DestinationRouting = routingOf([
  { name: DEFAULT_DESTINATION, url: undefined, matches: everything, settings: DEFAULT_SETTINGS },
]);

function problemsOf(error: z.ZodError): string[] {
  return error.issues.map((issue) => {
    // `[2].topics[0]`: where the problem is in the list, as a reader would index it.
    const path = issue.path.map((part) => (typeof part === 'number' ? `[${part}]` : `.${String(part)}`)).join('');
    return `${DESTINATIONS_VARIABLE}${path}: ${issue.message}`;
  });
}

/**
 * The configured destinations: OUTBOX_DESTINATIONS' list, plus `default` (every message) when
 * OUTBOX_TARGET_URL is set too; `default` alone without OUTBOX_DESTINATIONS. Every problem is named
 * (the list's index and field, never a URL, which may hold a password) in one ConfigError.
 */
export function parseDestinations(
  config: Pick<Config, 'OUTBOX_TARGET_URL' | 'OUTBOX_DESTINATIONS'>,
): DestinationRouting {
  const shorthand: Destination[] =
    config.OUTBOX_TARGET_URL === undefined
      ? []
      : [{ name: DEFAULT_DESTINATION, url: config.OUTBOX_TARGET_URL, matches: everything, settings: DEFAULT_SETTINGS }];
  if (config.OUTBOX_DESTINATIONS === undefined) return shorthand.length === 0 ? DEFAULT_ROUTING : routingOf(shorthand);
  let json: unknown;
  try {
    json = JSON.parse(config.OUTBOX_DESTINATIONS);
  } catch {
    throw new ConfigError([`${DESTINATIONS_VARIABLE}: not JSON (a list of destinations, docs/outbox.md)`]);
  }
  const parsed = destinationsSchema.safeParse(json);
  if (!parsed.success) throw new ConfigError(problemsOf(parsed.error));
  const problems: string[] = [];
  const seen = new Set<string>();
  const named = parsed.data.map((entry, index): Destination => {
    const at = `${DESTINATIONS_VARIABLE}[${index}]`;
    if (seen.has(entry.name)) problems.push(`${at}.name: "${entry.name}" is used twice`);
    seen.add(entry.name);
    const problem = targetProblem(entry.url, `${at}.url`);
    if (problem !== undefined) problems.push(problem);
    const topic = matcherOf(entry.topics);
    const sender = matcherOf(entry.senders);
    const type = matcherOf(entry.types);
    return {
      name: entry.name,
      url: entry.url,
      matches: (facts) => topic(facts.topic) && sender(facts.sender) && type(facts.type),
      settings: entry.settings,
      filters: { topics: entry.topics, senders: entry.senders, types: entry.types },
    };
  });
  if (problems.length > 0) throw new ConfigError(problems);
  return routingOf([...shorthand, ...named]);
}

/** Where a destination's target came from, for its errors: the shorthand, or the named destination. */
export function targetLabel(name: string): string {
  return name === DEFAULT_DESTINATION ? 'OUTBOX_TARGET_URL' : `${DESTINATIONS_VARIABLE} (${name}).url`;
}

/** The routing, logging at debug each message that no destination takes (none is written). */
export function loggingUnrouted(routing: DestinationRouting, logger: Logger): DestinationRouting {
  return {
    ...routing,
    unrouted: (facts) =>
      logger.debug('outbox message matches no destination, not written', {
        topic: facts.topic,
        sender: facts.sender,
        type: facts.type,
      }),
  };
}

const routingByConfig = new WeakMap<object, DestinationRouting>();

/** parseDestinations once per parsed configuration: the entry checks it at start-up, the rest reuse it. */
export function configuredRouting(
  config: Pick<Config, 'OUTBOX_TARGET_URL' | 'OUTBOX_DESTINATIONS'>,
): DestinationRouting {
  let routing = routingByConfig.get(config);
  if (routing === undefined) {
    routing = parseDestinations(config);
    routingByConfig.set(config, routing);
  }
  return routing;
}

/** The Queues binding a target names, or undefined when it is a URL. */
export function queueBindingOf(url: string): string | undefined {
  return url.startsWith(QUEUE_TARGET_PREFIX) ? url.slice(QUEUE_TARGET_PREFIX.length) : undefined;
}

function targetProblem(url: string, label: string): string | undefined {
  const binding = queueBindingOf(url);
  if (binding !== undefined) {
    return QUEUE_BINDING.test(binding)
      ? undefined
      : `${label}: queue:BINDING names a Workers binding (letters, digits, _)`;
  }
  try {
    parseOutboxTarget(url, label);
    return undefined;
  } catch (error) {
    if (error instanceof ConfigError) return error.problems.join('; ');
    throw error;
  }
}

/**
 * The deduplication key a destination's consumers see: the message's own key for `default` (the
 * contract's `provider:event_id:topic`, unchanged for a one-destination service), and the key plus
 * `@name` for a named destination, so each destination's row has a key of its own and a retry of one
 * never collides with (or re-sends) another. `@` cannot occur in a name or in a topic (the service's
 * own names), so the suffix is always the destination.
 */
export function destinationKey(key: string, destination: string): string {
  return destination === DEFAULT_DESTINATION ? key : `${key}@${destination}`;
}
