// The NATS JetStream publisher (`nats://…?stream=NAME`): each message is published to subject
// `prefix + topic` with `Nats-Msg-Id` = its deduplication key, so a second publish inside the
// stream's duplicate window is stored once, and counts as published only on the stream's own
// acknowledgement (`Nats-Expected-Stream`: a subject caught by another stream is refused, not stored
// elsewhere). One connection, reconnecting by itself; publishes are pipelined on it, and the
// acknowledgements of all of them come back to one reply subscription. Node only.
import { JetStreamApiCodes, JetStreamApiError, jetstreamManager } from '@nats-io/jetstream';
import {
  AuthorizationError,
  connect,
  createInbox,
  headers,
  type Msg,
  type MsgHdrs,
  type NatsConnection,
  PermissionViolationError,
} from '@nats-io/transport-node';
import { errorName } from '../../lib/errors.ts';
import type { OutboxTarget } from '../target.ts';
import {
  ConnectionSlot,
  permanent,
  retry,
  systemCode,
  timedOut,
  unavailable,
  untilAborted,
  whenAborted,
} from './broker.ts';
import { messageBody, type OutboxMessage, type Publisher, type PublishOutcome, traceHeaders } from './publisher.ts';

type NatsTarget = Extract<OutboxTarget, { kind: 'nats' }>;

/** JetStream API error codes (nats-server's errors.json) that no retry can get past. */
const REFUSED_FOR_GOOD: Readonly<Record<number, string>> = {
  10039: 'JetStream is not enabled for this account',
  10054: 'the message is larger than the stream allows (max_msg_size)',
  10059: 'the stream does not exist',
  10060: 'the subject belongs to another stream than the one configured',
};

/** A JetStream publish acknowledgement (a PubAck), or the stream's refusal. */
interface PubAck {
  stream?: string;
  error?: { code?: number; err_code?: number; description?: string };
}

interface Waiting {
  subject: string;
  settle(outcome: PublishOutcome | Promise<PublishOutcome>): void;
}

/**
 * Publishes are plain core-NATS publishes with a reply subject: the stream answers each on
 * `inbox.<token>`, and one subscription takes every answer. The client's own `js.publish` is a
 * request per message (a timer, a mux entry and an Error built even on success): a quarter to a
 * third of the relay's CPU per message in the outbox benchmark.
 */
interface Link {
  nc: NatsConnection;
  /** False between a disconnect and the reconnect: publishes fail at once instead of queueing. */
  connected: boolean;
  /** `<inbox>.`, the prefix of every reply subject on this connection. */
  replyPrefix: string;
  /** Publishes waiting for their acknowledgement, by reply token. */
  waiting: Map<string, Waiting>;
  nextToken: number;
}

export interface NatsPublisherOptions {
  target: NatsTarget;
  /** Connection attempt bound (the relay's OUTBOX_TIMEOUT_MS). */
  connectTimeoutMs: number;
}

export function natsPublisher({ target, connectTimeoutMs }: NatsPublisherOptions): Publisher {
  const describe = `stream ${target.stream}`;

  /** Settles the waiting publishes `which` picks (all by default) with `outcome`. */
  function settleWaiting(link: Link, outcome: PublishOutcome, which: (waiting: Waiting) => boolean = () => true) {
    for (const [token, waiting] of link.waiting) {
      if (!which(waiting)) continue;
      link.waiting.delete(token);
      waiting.settle(outcome);
    }
  }

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
        // Otherwise the client's own requests (the JetStream API calls that explain a refusal) build
        // errors up front to keep the caller's stack. Our outcomes never show a stack.
        // Stryker disable next-line BooleanLiteral: as said above, only where errors get their stacks.
        noAsyncTraces: true,
      });
      const link: Link = { nc, connected: true, replyPrefix: `${createInbox()}.`, waiting: new Map(), nextToken: 0 };
      nc.subscribe(`${link.replyPrefix}*`, {
        callback: (error, msg) => {
          if (error !== null) {
            // The server refused the reply subscription itself: no acknowledgement can come.
            settleWaiting(
              link,
              permanent(`nats: the user in OUTBOX_TARGET_URL may not subscribe to _INBOX.>: grant it`),
            );
            slot.forget(link);
            void nc.close().catch(() => {});
            return;
          }
          const token = msg.subject.slice(link.replyPrefix.length);
          const waiting = link.waiting.get(token);
          if (waiting === undefined) return;
          link.waiting.delete(token);
          waiting.settle(acknowledged(link, msg, waiting.subject));
        },
      });
      void (async () => {
        for await (const status of nc.status()) {
          if (status.type === 'disconnect') {
            link.connected = false;
            // Answers to what was sent may never come; the same keys go out again later, deduplicated.
            // The connection failed, not the messages: no attempt is counted.
            settleWaiting(link, unavailable('nats: disconnected, reconnecting'));
          } else if (status.type === 'reconnect') {
            link.connected = true;
          } else if (status.type === 'error' && status.error instanceof PermissionViolationError) {
            const refused = status.error;
            if (refused.operation === 'publish') {
              settleWaiting(
                link,
                permanent(`nats: the user in OUTBOX_TARGET_URL may not publish to ${refused.subject}: grant it`),
                (waiting) => waiting.subject === refused.subject,
              );
            }
          }
        }
      })().catch(() => {});
      void nc.closed().then(() => {
        slot.forget(link);
        settleWaiting(link, unavailable('nats: connection closed before the acknowledgement'));
      });
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

  /** The outcome an answer on the reply subject says. */
  function acknowledged(link: Link, msg: Msg, subject: string): PublishOutcome | Promise<PublishOutcome> {
    // The server's own "no responders" status: no stream listens on the subject (or none right now).
    if (msg.data.length === 0 && msg.headers?.code === 503) return whyNoResponders(link, subject);
    let ack: PubAck;
    try {
      ack = msg.json<PubAck>();
    } catch {
      return retry('nats: an acknowledgement that is not JSON');
    }
    if (ack.error !== undefined) {
      const code = ack.error.err_code ?? ack.error.code ?? 0;
      const reason = REFUSED_FOR_GOOD[code];
      if (reason !== undefined) return permanent(`nats: ${describe}: ${reason} (error ${code})`);
      // A stream at its limits with discard=new refuses new messages until consumers or limits make room.
      return retry(
        `nats: ${describe} refused the message (error ${code}: ${ack.error.description ?? 'no description'})`,
      );
    }
    // A duplicate is stored already (the first publish's answer was lost): published all the same.
    if (ack.stream === target.stream) return { outcome: 'published' };
    return ack.stream === undefined || ack.stream === ''
      ? retry('nats: an acknowledgement without a stream')
      : permanent(`nats: stored by stream ${ack.stream}`);
  }

  function publishOn(link: Link, message: OutboxMessage, signal: AbortSignal): Promise<PublishOutcome> {
    if (signal.aborted) return Promise.resolve(timedOut(link.connected));
    const subject = `${target.subjectPrefix}${message.topic}`;
    const h = headers();
    h.set('Nats-Msg-Id', message.transportKey);
    // A subject caught by another stream is refused, not stored elsewhere.
    h.set('Nats-Expected-Stream', target.stream);
    h.set('Outbox-Id', message.id);
    h.set('Outbox-Topic', message.topic);
    h.set('Outbox-Created-At', message.createdAt.toISOString());
    const { traceparent } = traceHeaders(message);
    if (traceparent !== undefined) h.set('traceparent', traceparent);
    // Stryker disable next-line UpdateOperator: counting down gives tokens just as unique per connection ("0", "-1", …), and `-` is allowed in a subject token.
    const token = (link.nextToken++).toString(36);
    return new Promise((resolve) => {
      const forget = whenAborted(signal, () => {
        link.waiting.delete(token);
        resolve(timedOut(link.connected));
      });
      link.waiting.set(token, {
        subject,
        settle: (outcome) => {
          // Stryker disable next-line CallExpression: a call left behind only resolves a settled promise and deletes a token already deleted; the set goes with the batch's signal.
          forget();
          resolve(outcome);
        },
      });
      const data = encoder.encode(messageBody(message));
      try {
        link.nc.publish(subject, data, { reply: `${link.replyPrefix}${token}`, headers: h });
      } catch (error) {
        // Stryker disable next-line OptionalChaining: the entry was set a few lines above, synchronously, so it is always there.
        link.waiting.get(token)?.settle(publishRefused(link, error, data.length + headerBytes(h)));
        link.waiting.delete(token);
      }
    });
  }

  const encoder = new TextEncoder();

  /** The bytes `h` takes on the wire (`NATS/1.0`, a line per value, a blank line), which max_payload counts. */
  function headerBytes(h: MsgHdrs): number {
    let text = 'NATS/1.0\r\n';
    for (const [name, values] of h) for (const value of values) text += `${name}: ${value}\r\n`;
    return encoder.encode(`${text}\r\n`).length;
  }

  /**
   * The client refused to send: a message over the server's max_payload (body and headers) never
   * fits, whatever the retries; else the connection was lost under us.
   */
  function publishRefused(link: Link, error: unknown, bytes: number): PublishOutcome {
    // Stryker disable next-line OptionalChaining: `info` is set once the connection is open, and only an open link publishes.
    const limit = link.nc.info?.max_payload;
    if (limit !== undefined && bytes > limit) {
      return permanent(
        `nats: the message is ${bytes} bytes with its headers, over the server's max_payload of ${limit} bytes`,
      );
    }
    return link.connected && !link.nc.isClosed()
      ? retry(`nats: ${systemCode(error) ?? errorName(error)}`)
      : unavailable(`nats: ${systemCode(error) ?? errorName(error)}`);
  }

  function connectFailed(error: unknown): PublishOutcome {
    return error instanceof AuthorizationError
      ? permanent('nats: the server refused the credentials in OUTBOX_TARGET_URL')
      : unavailable(`nats: connect ${systemCode(error) ?? errorName(error)}`);
  }

  return {
    kind: 'nats',
    pipelined: true,
    publish(message, signal) {
      const link = slot.ready();
      // The common case, connected: no promise hop, and the publish's own abort handling suffices.
      if (link !== undefined) {
        return link.connected
          ? publishOn(link, message, signal)
          : Promise.resolve(unavailable('nats: disconnected, reconnecting'));
      }
      // Still opening the connection: a timeout here is the server's, not the message's.
      return untilAborted(
        signal,
        slot
          .get()
          .then(
            (opened) =>
              opened.connected ? publishOn(opened, message, signal) : unavailable('nats: disconnected, reconnecting'),
            connectFailed,
          ),
        // Stryker disable next-line ArrowFunction: `timedOut` takes the answer for its truth only, and undefined counts as false.
        () => false,
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
