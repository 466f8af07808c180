// What OUTBOX_TARGET_URL names, read once at start-up: an HTTP endpoint or a broker (the contract's
// § Outbox delivery fixes the forms). Its scheme chooses the publisher; its query names the stream or
// exchange, which the operator creates (the service never declares topology). Web standards only
// (URL), so the Worker entry can refuse a broker target with the same words the Node entry uses.
import { ConfigError } from '../config.ts';

/** Subjects are `prefix + topic`; a prefix keeps the service's subjects apart from the operator's others. */
export const DEFAULT_NATS_SUBJECT_PREFIX = 'webhook-inbox.';

/**
 * How long the Redis publisher remembers a deduplication key it has added. Longer than a message can
 * keep being retried (OUTBOX_MAX_ATTEMPTS at OUTBOX_BACKOFF_MAX_MS is ten hours by default), so a
 * retry of a message whose first XADD was acknowledged but whose answer was lost adds nothing.
 */
export const DEFAULT_REDIS_DEDUP_WINDOW_S = 86_400;

export type OutboxTarget =
  | { kind: 'http'; url: string }
  | {
      kind: 'nats';
      /** `nats://host:port`, without credentials or query. */
      server: string;
      user?: string;
      pass?: string;
      stream: string;
      subjectPrefix: string;
    }
  | {
      kind: 'amqp' /** The URL without the `exchange` parameter (amqplib reads the rest). */;
      url: string;
      exchange: string;
    }
  | {
      kind: 'redis';
      /** The URL without the service's own parameters. */
      url: string;
      stream: string;
      dedupWindowS: number;
    };

export const BROKER_SCHEMES = ['nats', 'amqp', 'amqps', 'redis', 'rediss'] as const;

/** One query parameter, required and non-empty; the URL is never quoted back (it may hold a password). */
function required(url: URL, name: string, form: string, problem: (text: string) => ConfigError): string {
  const value = url.searchParams.get(name);
  if (value === null || value === '') throw problem(`${url.protocol}// targets need ?${name}= (${form})`);
  return value;
}

function without(url: URL, ...names: string[]): string {
  const copy = new URL(url);
  for (const name of names) copy.searchParams.delete(name);
  return copy.toString();
}

/** NATS subjects are dot-separated tokens without spaces or wildcards. */
const NATS_SUBJECT_PREFIX = /^([A-Za-z0-9_-]+\.)*$/;

/**
 * Throws a ConfigError naming where the URL came from (`label`: OUTBOX_TARGET_URL, or a destination
 * in OUTBOX_DESTINATIONS) and the fix, never the URL itself.
 */
export function parseOutboxTarget(text: string, label = 'OUTBOX_TARGET_URL'): OutboxTarget {
  const problem = (words: string) => new ConfigError([`${label}: ${words}`]);
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw problem('not a URL');
  }
  const scheme = url.protocol.slice(0, -1);
  switch (scheme) {
    case 'http':
    case 'https':
      return { kind: 'http', url: text };
    case 'nats': {
      const form = 'nats://[user:pass@]host:port?stream=NAME[&subject_prefix=P]';
      const stream = required(url, 'stream', form, problem);
      const subjectPrefix = url.searchParams.get('subject_prefix') ?? DEFAULT_NATS_SUBJECT_PREFIX;
      if (!NATS_SUBJECT_PREFIX.test(subjectPrefix)) {
        throw problem('subject_prefix must be dot-separated tokens ending in a dot, e.g. "webhook-inbox."');
      }
      return {
        kind: 'nats',
        server: `nats://${url.host}`,
        ...(url.username === '' ? {} : { user: decodeURIComponent(url.username) }),
        ...(url.password === '' ? {} : { pass: decodeURIComponent(url.password) }),
        stream,
        subjectPrefix,
      };
    }
    case 'amqp':
    case 'amqps': {
      const exchange = required(url, 'exchange', 'amqp://user:pass@host:port[/vhost]?exchange=NAME', problem);
      return { kind: 'amqp', url: without(url, 'exchange'), exchange };
    }
    case 'redis':
    case 'rediss': {
      const stream = required(url, 'stream', 'redis://[user:pass@]host:port[/db]?stream=KEY', problem);
      const window = url.searchParams.get('dedup_window_s');
      const dedupWindowS = window === null ? DEFAULT_REDIS_DEDUP_WINDOW_S : Number(window);
      if (!Number.isInteger(dedupWindowS) || dedupWindowS < 1) {
        throw problem('dedup_window_s must be a whole number of seconds, at least 1');
      }
      return { kind: 'redis', url: without(url, 'stream', 'dedup_window_s'), stream, dedupWindowS };
    }
    default:
      throw problem(`unknown scheme "${scheme}" (http, https, ${BROKER_SCHEMES.join(', ')})`);
  }
}
