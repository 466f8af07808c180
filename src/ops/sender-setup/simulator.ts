// The sender simulator behind `webhook-inbox send`, one for every sender and the same for each:
// the sender's description (src/senders/senders.ts) has a realistic delivery of its own (`sample`)
// and says where the id and type go, and senders/signing.ts signs by it as the sender does.
// Adding a sender adds nothing here.
import { type ExactJson, LosslessNumber, parseJsonText } from '../../lib/json.ts';
import { valueAt } from '../../senders/described.ts';
import type { Path, Sample } from '../../senders/description.ts';
import { type BuiltInDescription, senderDescriptions } from '../../senders/senders.ts';
import { type Outgoing, type SigningKey, type SigningTarget, signAsSender } from '../../senders/signing.ts';

export type { Outgoing, SigningKey, SigningTarget };

/** One delivery to send: what is signed, and how many events it carries (batch senders: several). */
export interface SimulatedDelivery extends Outgoing {
  events: number;
}

export interface SimulatedSender {
  description: BuiltInDescription;
  /** A new delivery (a new event, or a batch of them), typed `type` where given, made at `nowSeconds`. */
  newDelivery(type: string | undefined, nowSeconds: number): SimulatedDelivery;
  /** The file's bytes as they are: the id from the payload, or a fresh one where it is a header. */
  fromFile(body: string, nowSeconds: number): SimulatedDelivery;
  sign(
    outgoing: Outgoing,
    key: SigningKey,
    nowSeconds: number,
    target?: SigningTarget,
  ): Promise<Record<string, string>>;
}

/** The text at `path` of the payload, for the id and type it carries itself. */
function textAt(payload: ExactJson, path: Path, what: string): string {
  const value = valueAt(payload, path);
  const scalar = typeof value === 'string' || typeof value === 'number' || typeof value === 'bigint';
  if (scalar || value instanceof LosslessNumber) return String(value);
  throw new Error(`the payload has no "${path.join('.')}": the ${what} of this sender`);
}

function simulated(description: BuiltInDescription): SimulatedSender {
  const { id, type, events } = description;
  const headerId = 'header' in id;
  /** The delivery of `payload`: its id and type where the sender sends one for the whole body. */
  const delivery = (body: string, sample: Sample): SimulatedDelivery => {
    const extra = sample.headers === undefined ? {} : { headers: sample.headers };
    const payload = parseJsonText(body);
    if (payload === undefined) throw new Error('the payload is not JSON');
    if (events !== undefined) {
      const list = valueAt(payload, events.path);
      if (!Array.isArray(list)) throw new Error(`the payload has no array at "${events.path.join('.')}"`);
      return { eventId: '', body, eventType: sample.type, events: list.length, ...extra };
    }
    const eventId = headerId
      ? (sample.id ?? crypto.randomUUID())
      : 'path' in id
        ? textAt(payload, id.path, 'event id')
        : '';
    const eventType = 'path' in type ? textAt(payload, type.path, 'event type') : sample.type;
    return { eventId, body, eventType, events: 1, ...extra };
  };
  return {
    description,
    newDelivery(type, nowSeconds) {
      const sample = description.sample({ nowSeconds, ...(type === undefined ? {} : { type }) });
      return delivery(JSON.stringify(sample.payload), sample);
    },
    // The sample's usual type and its constant headers; the id is the file's, or a fresh one.
    fromFile: (body, nowSeconds) => delivery(body, { ...description.sample({ nowSeconds }), id: undefined }),
    sign: (outgoing, key, nowSeconds, target) => signAsSender(description, outgoing, key, nowSeconds, target),
  };
}

/** Every sender, by name, as `send` simulates it. */
export const simulatedSenders: Readonly<Record<string, SimulatedSender>> = Object.fromEntries(
  senderDescriptions.map((description) => [description.name, simulated(description)]),
);
