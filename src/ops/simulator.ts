// The provider simulator behind `webhook-inbox send`: builds events of the six original senders
// and signs them the way each does, by its description in src/providers/senders.ts
// (providers/signing.ts): how a sender signs is decided there, once.
import { senderDescriptions } from '../providers/senders.ts';
import { type Outgoing, signAsSender } from '../providers/signing.ts';

export type { Outgoing };

/** The events a simulated sender makes; how they are signed comes from its description. */
interface SimulatedEvents {
  /** A new event of `type` with an id of its own. */
  newEvent(type: string | undefined, nowSeconds: number): Outgoing;
  /** The file's bytes as they are; the id from the payload, or a fresh one for header-id schemes. */
  fromFile(body: string): Outgoing;
}

export interface SimulatedScheme extends SimulatedEvents {
  sign(outgoing: Outgoing, secret: string, nowSeconds: number): Promise<Record<string, string>>;
}

function freshId(prefix: string): string {
  return `${prefix}_${crypto.randomUUID().replaceAll('-', '').slice(0, 20)}`;
}

/** A field of a JSON body, for schemes whose event id is in the payload. */
function field(body: string, name: string): string {
  const parsed: unknown = JSON.parse(body);
  const value = typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>)[name] : undefined;
  if (typeof value !== 'string') throw new Error(`the file has no string "${name}": the event id of this provider`);
  return value;
}

function typeOf(body: string): string {
  const parsed: unknown = JSON.parse(body);
  const type = typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>).type : undefined;
  return typeof type === 'string' ? type : 'simulated';
}

const SUBSCRIPTION_STATUSES = ['trialing', 'active', 'past_due', 'canceled', 'unpaid'] as const;

const simulatedEvents: Readonly<Record<string, SimulatedEvents>> = {
  acme: {
    newEvent(type = 'subscription.updated', nowSeconds) {
      const id = freshId('evt');
      const status = SUBSCRIPTION_STATUSES[Math.floor(Math.random() * SUBSCRIPTION_STATUSES.length)];
      const event = {
        id,
        type,
        api_version: '2024-06-01',
        created: nowSeconds,
        version: nowSeconds,
        data: { id: freshId('sub'), status },
      };
      return { eventId: id, body: JSON.stringify(event), eventType: type };
    },
    fromFile: (body) => ({ eventId: field(body, 'id'), body, eventType: typeOf(body) }),
  },
  standard: {
    newEvent(type = 'invoice.paid', nowSeconds) {
      const body = JSON.stringify({ type, timestamp: new Date(nowSeconds * 1000).toISOString(), data: {} });
      return { eventId: freshId('msg'), body, eventType: type };
    },
    fromFile: (body) => ({ eventId: freshId('msg'), body, eventType: typeOf(body) }),
  },
  stripe: {
    newEvent(type = 'customer.subscription.updated', nowSeconds) {
      const id = freshId('evt');
      const body = JSON.stringify({
        id,
        object: 'event',
        type,
        created: nowSeconds,
        data: { object: { id: freshId('sub'), status: 'active' } },
      });
      return { eventId: id, body, eventType: type };
    },
    fromFile: (body) => ({ eventId: field(body, 'id'), body, eventType: typeOf(body) }),
  },
  github: {
    newEvent(type = 'issues') {
      const body = JSON.stringify({ action: 'opened', issue: { number: 1, title: freshId('issue') } });
      return { eventId: crypto.randomUUID(), body, eventType: type };
    },
    fromFile: (body) => ({ eventId: crypto.randomUUID(), body, eventType: 'push' }),
  },
  shopify: {
    newEvent(type = 'orders/create') {
      const body = JSON.stringify({ id: Math.floor(Math.random() * 1e12), email: 'simulated@example.com' });
      return { eventId: crypto.randomUUID(), body, eventType: type };
    },
    fromFile: (body) => ({ eventId: crypto.randomUUID(), body, eventType: 'orders/create' }),
  },
  slack: {
    newEvent(type = 'app_mention', nowSeconds) {
      const id = freshId('Ev');
      const body = JSON.stringify({ type: 'event_callback', event_id: id, event_time: nowSeconds, event: { type } });
      return { eventId: id, body, eventType: type };
    },
    fromFile: (body) => ({ eventId: field(body, 'event_id'), body, eventType: typeOf(body) }),
  },
};

export const simulatedSchemes: Readonly<Record<string, SimulatedScheme>> = Object.fromEntries(
  Object.entries(simulatedEvents).map(([name, events]) => {
    const description = senderDescriptions.find((candidate) => candidate.name === name);
    if (description === undefined) throw new Error(`${name}: no such sender to simulate`);
    const sign = (outgoing: Outgoing, secret: string, nowSeconds: number) =>
      signAsSender(description, outgoing, secret, nowSeconds);
    return [name, { ...events, sign }];
  }),
);
