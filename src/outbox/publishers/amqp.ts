// The RabbitMQ publisher (`amqp://…?exchange=NAME`, amqps too): each message goes to the exchange
// with the topic as routing key, persistent, `message_id` = its deduplication key, mandatory, on a
// confirm channel. Published only on the broker's confirm of a routed message: a message returned as
// unroutable (no queue bound for its key) is retried, a nack (a full queue with reject-publish) too.
// One connection and one confirm channel, reopened on the next publish after the broker closed them;
// publishes are pipelined on the channel. Node only.
import { type ChannelModel, type ConfirmChannel, connect, type Message } from 'amqplib';
import { errorName } from '../../lib/errors.ts';
import type { OutboxTarget } from '../target.ts';
import { ConnectionSlot, permanent, retry, systemCode, unavailable, untilAborted } from './broker.ts';
import { messageBody, type OutboxMessage, type Publisher, type PublishOutcome, traceHeaders } from './publisher.ts';

type AmqpTarget = Extract<OutboxTarget, { kind: 'amqp' }>;

interface Link {
  model: ChannelModel;
  channel: ConfirmChannel;
  /** Transport keys (message_id) of messages the broker returned as unroutable, until their confirm arrives. */
  returned: Set<string>;
  /** Why the broker closed the channel or connection (set before the pending confirms fail). */
  closedBy?: { code: number | undefined; text: string };
  /** Set while a resource alarm (memory, disk) blocks publishing on the connection. */
  blocked?: string;
}

/** Reply codes from the AMQP 0-9-1 spec that say the configuration is wrong, not the moment. */
const ACCESS_REFUSED = 403;
const NOT_FOUND = 404;
/** The broker is shutting down (or an operator closed the connection): the broker's state, not the message's. */
const CONNECTION_FORCED = 320;

export interface AmqpPublisherOptions {
  target: AmqpTarget;
  /** Connection attempt bound (the relay's OUTBOX_TIMEOUT_MS). */
  connectTimeoutMs: number;
}

/** The broker's own close text ("NOT_FOUND - no exchange 'x' in vhost '/'"): it never quotes credentials. */
function closeReason(error: unknown): { code: number | undefined; text: string } {
  const code =
    typeof error === 'object' && error !== null && 'code' in error && typeof error.code === 'number'
      ? error.code
      : undefined;
  const quoted = error instanceof Error ? /with message "([^"]{1,300})"/.exec(error.message)?.[1] : undefined;
  return { code, text: quoted ?? systemCode(error) ?? (code === undefined ? errorName(error) : `reply ${code}`) };
}

export function amqpPublisher({ target, connectTimeoutMs }: AmqpPublisherOptions): Publisher {
  const { exchange } = target;

  const slot: ConnectionSlot<Link> = new ConnectionSlot(
    async () => {
      const model = await connect(target.url, {
        timeout: connectTimeoutMs,
        clientProperties: { connection_name: 'webhook-inbox-relay' },
      });
      let channel: ConfirmChannel;
      try {
        channel = await model.createConfirmChannel();
      } catch (error) {
        await model.close().catch(() => {});
        throw error;
      }
      const link: Link = { model, channel, returned: new Set() };
      const gone = (error?: unknown) => {
        if (error !== undefined && link.closedBy === undefined) link.closedBy = closeReason(error);
        slot.forget(link);
      };
      model.on('error', gone);
      model.on('close', () => gone());
      model.on('blocked', (reason: string) => {
        link.blocked = reason.slice(0, 100);
      });
      model.on('unblocked', () => {
        link.blocked = undefined;
      });
      channel.on('error', gone);
      channel.on('close', () => {
        gone();
        // A channel closed alone (by a refused publish) leaves a connection nobody will use again.
        model.close().catch(() => {});
      });
      channel.on('return', (returned: Message) => {
        const key: unknown = returned.properties.messageId;
        if (typeof key === 'string') link.returned.add(key);
      });
      return link;
    },
    async (link) => {
      await link.channel.waitForConfirms().catch(() => {});
      await link.model.close().catch(() => {});
    },
  );

  function failed(link: Link, nacked: boolean): PublishOutcome {
    if (nacked) {
      return retry('rabbitmq: nacked (a queue is full with overflow reject-publish, or the broker failed to store it)');
    }
    const closedBy = link.closedBy;
    // The connection went (a socket error carries no reply code): nothing was said about the message.
    if (closedBy === undefined) return unavailable('rabbitmq: connection lost before the confirm');
    if (closedBy.code === undefined || closedBy.code === CONNECTION_FORCED)
      return unavailable(`rabbitmq: ${closedBy.text}`);
    if (closedBy.code === NOT_FOUND)
      return permanent(`rabbitmq: ${closedBy.text}: declare exchange ${exchange} (the service never creates it)`);
    if (closedBy.code === ACCESS_REFUSED)
      return permanent(`rabbitmq: ${closedBy.text}: grant the user write access to exchange ${exchange}`);
    return retry(`rabbitmq: ${closedBy.text}`);
  }

  function publishOn(link: Link, message: OutboxMessage): Promise<PublishOutcome> {
    // A resource alarm blocks the whole connection and the message is never sent: the broker's state.
    if (link.blocked !== undefined)
      return Promise.resolve(unavailable(`rabbitmq: publishing blocked by the broker (${link.blocked})`));
    // The transport form: a short string holds under 256 bytes, the exact key travels in the body.
    const key = message.transportKey;
    return new Promise((resolve) => {
      const confirmed = (error: unknown) => {
        const unroutable = link.returned.delete(key);
        // amqplib answers a basic.nack with this message, and a channel that closed with another.
        if (error !== null && error !== undefined) {
          resolve(failed(link, error instanceof Error && error.message === 'message nacked'));
        } else if (unroutable)
          resolve(
            retry(`rabbitmq: unroutable: no queue is bound to exchange ${exchange} for routing key ${message.topic}`),
          );
        else resolve({ outcome: 'published' });
      };
      try {
        link.channel.publish(
          exchange,
          message.topic,
          Buffer.from(messageBody(message)),
          {
            persistent: true,
            mandatory: true,
            messageId: key,
            contentType: 'application/json',
            timestamp: Math.floor(message.createdAt.getTime() / 1000),
            type: message.topic,
            appId: 'webhook-inbox',
            headers: {
              'outbox-id': message.id,
              'outbox-created-at': message.createdAt.toISOString(),
              ...traceHeaders(message),
            },
          },
          confirmed,
        );
      } catch (error) {
        // The channel closed between taking it and publishing on it.
        resolve(link.closedBy === undefined ? unavailable(`rabbitmq: ${errorName(error)}`) : failed(link, false));
      }
    });
  }

  function connectFailed(error: unknown): PublishOutcome {
    const text = error instanceof Error ? error.message : '';
    if (/ACCESS.REFUSED/.test(text))
      return permanent('rabbitmq: the broker refused the user and password in OUTBOX_TARGET_URL');
    // RabbitMQ answers connection.open for a vhost it will not open with connection.close (530
    // NOT_ALLOWED), which amqplib reports without the reason.
    if (/NOT.ALLOWED|Expected ConnectionOpenOk; got <ConnectionClose/.test(text)) {
      return permanent('rabbitmq: the vhost in OUTBOX_TARGET_URL does not exist or the user may not use it');
    }
    return unavailable(`rabbitmq: connect ${systemCode(error) ?? errorName(error)}`);
  }

  return {
    kind: 'rabbitmq',
    pipelined: true,
    publish(message, signal) {
      return untilAborted(
        signal,
        slot.with((link) => publishOn(link, message), connectFailed),
        // Counted only when the connection was open and still is: the broker had the message.
        () => {
          const link = slot.ready();
          return link !== undefined && link.closedBy === undefined;
        },
      );
    },
    close: () => slot.close(),
  };
}
