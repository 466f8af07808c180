// The NATS JetStream publisher (`nats://…?stream=NAME`): each message is published to subject
// `prefix + topic` with `Nats-Msg-Id` = its deduplication key, so a second publish inside the
// stream's duplicate window is stored once, and counts as published only on the stream's own
// acknowledgement (`Nats-Expected-Stream`: a subject caught by another stream is refused, not stored
// elsewhere). One connection, reconnecting by itself; publishes are pipelined on it. Node only.
import {
  JetStreamApiCodes,
  JetStreamApiError,
  type JetStreamClient,
  jetstream,
  jetstreamManager,
} from '@nats-io/jetstream';
import {
  AuthorizationError,
  connect,
  headers,
  type NatsConnection,
  PermissionViolationError,
} from '@nats-io/transport-node';
import { messageBody, type OutboxMessage, type Publisher, type PublishOutcome } from '../publishers.ts';
import type { OutboxTarget } from '../target.ts';
import { ConnectionSlot, errorName, permanent, retry, systemCode, untilAborted } from './broker.ts';

type NatsTarget = Extract<OutboxTarget, { kind: 'nats' }>;

/** JetStream API error codes (nats-server's errors.json) that no retry can get past. */
const REFUSED_FOR_GOOD: Readonly<Record<number, string>> = {
  10039: 'JetStream is not enabled for this account',
  10054: 'the message is larger than the stream allows (max_msg_size)',
  10059: 'the stream does not exist',
  10060: 'the subject belongs to another stream than the one configured',
};

interface Link {
  nc: NatsConnection;
  js: JetStreamClient;
  /** False between a disconnect and the reconnect: publishes fail at once instead of queueing. */
  connected: boolean;
}

export interface NatsPublisherOptions {
  target: NatsTarget;
  /** Connection attempt bound (the relay's OUTBOX_TIMEOUT_MS). */
  connectTimeoutMs: number;
}

export function natsPublisher({ target, connectTimeoutMs }: NatsPublisherOptions): Publisher {
  const describe = `stream ${target.stream}`;

  const slot: ConnectionSlot<Link> = new ConnectionSlot(
    async () => {
      const nc = await connect({
        servers: target.server,
        ...(target.user === undefined ? {} : { user: target.user }),
        ...(target.pass === undefined ? {} : { pass: target.pass }),
        name: 'webhook-inbox-relay',
        timeout: connectTimeoutMs,
        // Once connected, the client reconnects by itself for as long as the process lives.
        maxReconnectAttempts: -1,
        reconnectTimeWait: 500,
        // Otherwise every request builds two errors up front to keep the caller's stack: a sixth of
        // the relay's CPU per message in the outbox benchmark. Our outcomes never show a stack.
        noAsyncTraces: true,
      });
      const link: Link = { nc, js: jetstream(nc), connected: true };
      void (async () => {
        for await (const status of nc.status()) {
          if (status.type === 'disconnect') link.connected = false;
          else if (status.type === 'reconnect') link.connected = true;
        }
      })().catch(() => {});
      void nc.closed().then(() => slot.forget(link));
      return link;
    },
    async (link) => {
      await link.nc.drain().catch(() => link.nc.close());
    },
  );

  /** No responders for the subject: tell a missing stream or subject (never succeeds) from a stream between leaders. */
  async function whyNoResponders(link: Link, subject: string): Promise<PublishOutcome> {
    try {
      const manager = await jetstreamManager(link.nc, { timeout: connectTimeoutMs });
      const info = await manager.streams.info(target.stream);
      const subjects = info.config.subjects ?? [];
      const covered = subjects.some((pattern) => subjectMatches(pattern, subject));
      return covered
        ? retry(`nats: ${describe} did not answer for ${subject}`)
        : permanent(`nats: ${describe} does not take subject ${subject}: add it to the stream's subjects`);
    } catch (error) {
      if (error instanceof JetStreamApiError && error.code === JetStreamApiCodes.StreamNotFound) {
        return permanent(`nats: ${describe} does not exist: create it with subjects ${target.subjectPrefix}>`);
      }
      // Nobody answered the API either: JetStream is off, or between leaders. Only a definite answer
      // (no such stream, a subject it does not take) is worth a dead letter.
      if (noResponders(error)) return retry('nats: JetStream did not answer (is it enabled on the server?)');
      return retry(`nats: ${describe} did not answer for ${subject}`);
    }
  }

  function classify(error: unknown, link: Link, subject: string): PublishOutcome | Promise<PublishOutcome> {
    if (noResponders(error)) return whyNoResponders(link, subject);
    if (error instanceof JetStreamApiError) {
      const reason = REFUSED_FOR_GOOD[error.code];
      if (reason !== undefined) return permanent(`nats: ${describe}: ${reason} (error ${error.code})`);
      // A stream at its limits with discard=new refuses new messages until consumers or limits make room.
      return retry(`nats: ${describe} refused the message (error ${error.code}: ${error.apiError().description})`);
    }
    // The client reports a refused publish as a RequestError caused by the violation.
    const cause = error instanceof Error ? error.cause : undefined;
    if ([error, cause].some((e) => e instanceof PermissionViolationError || e instanceof AuthorizationError)) {
      return permanent(`nats: the user in OUTBOX_TARGET_URL may not publish to ${subject}: grant it`);
    }
    return retry(`nats: ${systemCode(error) ?? errorName(error)}`);
  }

  async function publishOn(link: Link, message: OutboxMessage, body: Uint8Array): Promise<PublishOutcome> {
    const subject = `${target.subjectPrefix}${message.topic}`;
    const h = headers();
    h.set('Outbox-Id', message.id);
    h.set('Outbox-Topic', message.topic);
    h.set('Outbox-Created-At', message.createdAt.toISOString());
    try {
      const ack = await link.js.publish(subject, body, {
        msgID: message.deduplicationKey,
        expect: { streamName: target.stream },
        headers: h,
        timeout: connectTimeoutMs,
      });
      // A duplicate is stored already (the first publish's answer was lost): published all the same.
      return ack.stream === target.stream
        ? { outcome: 'published' }
        : permanent(`nats: stored by stream ${ack.stream}`);
    } catch (error) {
      return classify(error, link, subject);
    }
  }

  const encoder = new TextEncoder();

  return {
    kind: 'nats',
    pipelined: true,
    publish(message, signal) {
      const body = encoder.encode(messageBody(message));
      return untilAborted(
        signal,
        slot.get().then(
          (link) => (link.connected ? publishOn(link, message, body) : retry('nats: disconnected, reconnecting')),
          (error: unknown) =>
            error instanceof AuthorizationError
              ? permanent('nats: the server refused the credentials in OUTBOX_TARGET_URL')
              : retry(`nats: connect ${systemCode(error) ?? errorName(error)}`),
        ),
      );
    },
    close: () => slot.close(),
  };
}

/** The client's name for "nobody answered on the subject" (its class is not exported). */
const noResponders = (error: unknown) => error instanceof Error && error.name === 'JetStreamNotEnabled';

/** NATS subject matching: `*` one token, `>` one or more trailing tokens. */
export function subjectMatches(pattern: string, subject: string): boolean {
  const want = pattern.split('.');
  const have = subject.split('.');
  for (const [index, token] of want.entries()) {
    if (token === '>') return have.length > index;
    if (index >= have.length || (token !== '*' && token !== have[index])) return false;
  }
  return want.length === have.length;
}
