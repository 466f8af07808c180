// Event type -> handler, per sender: an explicit map, never a function name built from payload
// text. A handler declares the payload schema it needs (checked before any database work) and applies
// its change inside the caller's transaction.
import { z } from 'zod';
import type { Config } from '../config.ts';
import type { Transaction } from '../db/client.ts';
import { subscriptionStatuses } from '../db/schema.ts';
import type { Logger } from '../lib/logger.ts';
import {
  configuredRouting,
  DEFAULT_ROUTING,
  type DestinationRouting,
  loggingUnrouted,
} from '../outbox/destinations.ts';
import { type Enqueue, enqueuerFor } from '../outbox/enqueue.ts';
import { type StripeLifecycle, stripeSubscriptionChange, stripeSubscriptionEvent } from './stripe.ts';
import { applySubscriptionChange, type SubscriptionChange, subscriptionChanged } from './subscriptions.ts';

/** The facts about an event a handler may use besides its payload. */
export interface HandledEvent {
  provider: string;
  /** The id it is stored under (a digest match keeps the first delivery's id). */
  eventId: string;
  eventType: string;
  /** When the sender says it happened; null when it does not say. */
  occurredAt: Date | null;
  /** W3C traceparent of the handler's span: what the messages it enqueues carry to consumers. */
  traceparent?: string | null;
}

export interface HandlerContext {
  tx: Transaction;
  event: HandledEvent;
  /** Writes a side effect to the outbox in `tx`, a row per matching destination; the relay publishes it after COMMIT. */
  enqueue: Enqueue;
  /** The destinations `enqueue` routes to, for a handler that writes its messages itself (applyAndAnnounce). */
  routing: DestinationRouting;
}

export interface EventHandler<Payload = unknown> {
  /** Validates the payload beyond the sender's envelope; a failure answers 400. */
  schema: z.ZodType<Payload>;
  apply(context: HandlerContext, payload: Payload): Promise<void>;
  /** The outbox destinations its messages go to (routedHandlers); the one `default` destination when absent. */
  routing?: DestinationRouting;
}

/** Runs the handler in `tx`: the one place its `enqueue` is bound, to that transaction and this event. */
export function applyHandler<Payload>(
  handler: EventHandler<Payload>,
  tx: Transaction,
  event: HandledEvent,
  payload: Payload,
): Promise<void> {
  const routing = handler.routing ?? DEFAULT_ROUTING;
  return handler.apply({ tx, event, enqueue: enqueuerFor(tx, event, routing), routing }, payload);
}

/**
 * The map with every handler routing its messages to `routing`'s destinations: the configuration
 * travels with the handlers, so every path that applies an event (intake, worker, bulk jobs,
 * replay) fans out the same way.
 */
export function routedHandlers(handlers: HandlerMap, routing: DestinationRouting): HandlerMap {
  return Object.fromEntries(
    Object.entries(handlers).map(([provider, byType]) => [
      provider,
      Object.fromEntries(Object.entries(byType).map(([type, handler]) => [type, { ...handler, routing }])),
    ]),
  );
}

/** Keeps each handler's payload type tied to its own schema inside a heterogeneous map. */
export function defineHandler<Payload>(handler: EventHandler<Payload>): EventHandler<unknown> {
  return handler as EventHandler<unknown>;
}

export type HandlerMap = Readonly<Record<string, Readonly<Record<string, EventHandler<unknown>>>>>;

const acmeSubscriptionEvent = z.looseObject({
  version: z.int().nonnegative(),
  data: z.looseObject({
    id: z.string().min(1).max(255),
    status: z.enum(subscriptionStatuses),
  }),
});

/**
 * Applies the change and, only if it changed a row, announces it through the outbox: a stale version
 * changed nothing, so there is nothing to tell anyone. Both go in one statement, shared with the
 * other changes of the batch, so this hands the message to the change rather than to `enqueue`.
 */
async function applyAndAnnounce({ tx, event, routing }: HandlerContext, change: SubscriptionChange): Promise<void> {
  await applySubscriptionChange(tx, change, { source: event, message: subscriptionChanged(change), routing });
}

const acmeSubscriptionHandler = (forcedStatus?: 'canceled') =>
  defineHandler({
    schema: acmeSubscriptionEvent,
    apply: (context, payload) =>
      applyAndAnnounce(context, {
        externalId: payload.data.id,
        status: forcedStatus ?? payload.data.status,
        providerVersion: payload.version,
        occurredAt: context.event.occurredAt ?? new Date(0),
      }),
  });

const stripeSubscriptionHandler = (lifecycle: StripeLifecycle) =>
  defineHandler({
    schema: stripeSubscriptionEvent,
    apply: (context, payload) => applyAndAnnounce(context, stripeSubscriptionChange(payload, lifecycle)),
  });

export const defaultHandlers: HandlerMap = {
  acme: {
    'subscription.created': acmeSubscriptionHandler(),
    'subscription.updated': acmeSubscriptionHandler(),
    // The event type is the authoritative fact: a cancellation cancels, whatever status it lists.
    'subscription.canceled': acmeSubscriptionHandler('canceled'),
  },
  stripe: {
    'customer.subscription.created': stripeSubscriptionHandler('created'),
    'customer.subscription.updated': stripeSubscriptionHandler('updated'),
    'customer.subscription.deleted': stripeSubscriptionHandler('deleted'),
  },
};

export function findHandler(
  handlers: HandlerMap,
  provider: string,
  eventType: string,
): EventHandler<unknown> | undefined {
  const byType = handlers[provider];
  return byType !== undefined && Object.hasOwn(byType, eventType) ? byType[eventType] : undefined;
}

/**
 * The service's handlers routed to the configured destinations: what every runner applies events
 * with. A message no destination takes is logged at debug on `logger`.
 */
export function configuredHandlers(
  config: Pick<Config, 'OUTBOX_TARGET_URL' | 'OUTBOX_DESTINATIONS'>,
  logger: Logger,
): HandlerMap {
  return routedHandlers(defaultHandlers, loggingUnrouted(configuredRouting(config), logger));
}
