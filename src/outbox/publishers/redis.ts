// The Redis Streams publisher (`redis://…?stream=KEY`, rediss too): each message is one entry in
// the stream with the contract's fields (id, topic, deduplication_key, created_at, payload as JSON
// text), added by a script that first looks for the key's marker and, only when there is none, adds
// the entry and then writes the marker (`<stream>:dedup:<key>`, expiring after the dedup window). One
// script runs atomically, and the marker is written only after XADD succeeded, so a refused XADD
// leaves nothing that would later pass a retry off as a duplicate. One connection, reconnecting by
// itself; commands issued together go out in one write (auto-pipelining). Node only.
import { createHash } from 'node:crypto';
import { Redis } from 'ioredis';
import { errorName } from '../../lib/errors.ts';
import type { OutboxTarget } from '../target.ts';
import { ConnectionSlot, permanent, retry, systemCode, unavailable, untilAborted } from './broker.ts';
import type { OutboxMessage, Publisher, PublishOutcome } from './publisher.ts';

type RedisTarget = Extract<OutboxTarget, { kind: 'redis' }>;

/**
 * KEYS: stream, marker. ARGV: window (s), id, topic, deduplication key, created_at, payload, and the
 * W3C traceparent ('' for none: then the entry has no `traceparent` field). Answers the entry id.
 */
export const ADD_ONCE_SCRIPT = `
local seen = redis.call('GET', KEYS[2])
if seen then return seen end
local entry
if ARGV[7] ~= '' then
  entry = redis.call('XADD', KEYS[1], '*', 'id', ARGV[2], 'topic', ARGV[3],
    'deduplication_key', ARGV[4], 'created_at', ARGV[5], 'payload', ARGV[6], 'traceparent', ARGV[7])
else
  entry = redis.call('XADD', KEYS[1], '*', 'id', ARGV[2], 'topic', ARGV[3],
    'deduplication_key', ARGV[4], 'created_at', ARGV[5], 'payload', ARGV[6])
end
redis.call('SET', KEYS[2], entry, 'EX', ARGV[1])
return entry
`;
const ADD_ONCE_SHA = createHash('sha1').update(ADD_ONCE_SCRIPT).digest('hex');

/** The marker's name holds the key's transport form (transport-key.ts): bounded, whatever the sender's id. */
export const dedupMarkerKey = (stream: string, transportKey: string) => `${stream}:dedup:${transportKey}`;

export interface RedisPublisherOptions {
  target: RedisTarget;
  /** Connection attempt bound (the relay's OUTBOX_TIMEOUT_MS). */
  connectTimeoutMs: number;
}

/** The error word Redis starts a refusal with (WRONGTYPE, OOM, NOAUTH…); never the rest of the text. */
function replyCode(error: unknown): string | undefined {
  if (!(error instanceof Error)) return undefined;
  return /^([A-Z]{2,20})\b/.exec(error.message)?.[1];
}

export function redisPublisher({ target, connectTimeoutMs }: RedisPublisherOptions): Publisher {
  const { stream } = target;

  function refused(error: unknown): PublishOutcome {
    switch (replyCode(error)) {
      case 'NOAUTH':
      case 'WRONGPASS':
        return permanent('redis: the server refused the credentials in OUTBOX_TARGET_URL');
      case 'NOPERM':
        return permanent(`redis: the user may not run scripts or write key ${stream} and its :dedup: keys: grant it`);
      case 'WRONGTYPE':
        return permanent(`redis: key ${stream} holds something other than a stream: choose another ?stream=`);
      case 'OOM':
        return retry('redis: out of memory (maxmemory reached): trim the stream or raise the limit');
      case undefined:
        // ioredis's words (no code on them) for commands in flight when the connection drops, and
        // for a command sent while it is down (the offline queue is off): the connection's failure,
        // no attempt counted; so is a socket error (ECONNREFUSED…) opening it.
        // Stryker disable next-line Regex: ioredis's only messages with these words begin with them, and a server's refusal starts with its code, so it never gets here: the anchor changes nothing.
        if (error instanceof Error && /^(Connection is closed|Reached the max retries)/.test(error.message)) {
          return unavailable('redis: connection lost before the reply');
        }
        if (error instanceof Error && error.message.startsWith("Stream isn't writeable")) {
          return unavailable('redis: disconnected, reconnecting');
        }
        return systemCode(error) === undefined
          ? retry(`redis: ${errorName(error)}`)
          : unavailable(`redis: ${systemCode(error)}`);
      default:
        // READONLY (a replica), LOADING, BUSY, MASTERDOWN…: the server answered the command, so it
        // counts as an attempt like any refusal, and is retried.
        return retry(`redis: ${replyCode(error)}`);
    }
  }

  const slot: ConnectionSlot<Redis> = new ConnectionSlot(
    async () => {
      const client = new Redis(target.url, {
        lazyConnect: true,
        connectTimeout: connectTimeoutMs,
        // A publish while the connection is down fails at once (retried later by the relay) rather
        // than waiting in a queue; the client keeps reconnecting in the background.
        enableOfflineQueue: false,
        maxRetriesPerRequest: 0,
        retryStrategy: (times) => Math.min(100 * times, 2000),
        // Stryker disable next-line BooleanLiteral: performance only: without it commands issued together go out in separate writes, each with its reply as before.
        enableAutoPipelining: true,
        connectionName: 'webhook-inbox-relay',
      });
      // Errors also arrive as events while reconnecting; the publishes report their own. The first
      // connection's failure is known only from its event (connect() rejects with "Connection is closed.").
      let lastError: unknown;
      client.on('error', (error: unknown) => {
        lastError = error;
      });
      // Stryker disable next-line StringLiteral,ArrowFunction: with a retryStrategy that always answers a number, ioredis ends a client only when it is closed on purpose (the disconnect after a failed open, never the open one, or the slot's close, which has dropped it already); kept for a strategy that gives up.
      client.on('end', () => slot.forget(client));
      try {
        await client.connect();
      } catch (error) {
        client.disconnect();
        throw lastError ?? error;
      }
      return client;
    },
    async (client) => {
      await client.quit().catch(() => client.disconnect());
    },
  );

  async function addOnce(client: Redis, message: OutboxMessage): Promise<PublishOutcome> {
    const args = [
      stream,
      dedupMarkerKey(stream, message.transportKey),
      target.dedupWindowS,
      message.id,
      message.topic,
      message.deduplicationKey,
      message.createdAt.toISOString(),
      JSON.stringify(message.payload),
      message.traceparent ?? '',
    ];
    try {
      try {
        await client.evalsha(ADD_ONCE_SHA, 2, ...args);
      } catch (error) {
        // First use on this server (or after SCRIPT FLUSH / a restart): send the script itself.
        if (replyCode(error) !== 'NOSCRIPT') throw error;
        await client.eval(ADD_ONCE_SCRIPT, 2, ...args);
      }
      return { outcome: 'published' };
    } catch (error) {
      return refused(error);
    }
  }

  return {
    kind: 'redis',
    pipelined: true,
    publish(message, signal) {
      return untilAborted(
        signal,
        slot.with(
          (client) =>
            client.status === 'ready' ? addOnce(client, message) : unavailable('redis: disconnected, reconnecting'),
          (error: unknown) => refused(error),
        ),
        () => slot.ready()?.status === 'ready',
      );
    },
    close: () => slot.close(),
  };
}
