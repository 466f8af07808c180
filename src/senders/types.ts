// The interface every signature scheme implements. A scheme owns its headers, its signed content
// and where its event id lives; nothing outside src/senders knows any of that.
import type { ExactJson } from '../lib/json.ts';
import type { CredentialKind } from '../sender-variables.ts';
import type { Bytes } from './encoding.ts';
import type { VerifyKey } from './verify.ts';

export interface Delivery {
  /** The request body exactly as received. */
  body: Bytes;
  headers: Headers;
  /** The request method (`POST` when absent), for senders that sign it (HubSpot). */
  method?: string;
  /**
   * The public URL the sender posts to, from configuration (`<NAME>_WEBHOOK_URL`), for senders that
   * sign it (HubSpot, Square): behind a proxy the URL the service sees is not the one signed.
   */
  url?: string;
}

export interface VerificationTime {
  nowSeconds: number;
  toleranceSeconds: number;
  /**
   * Whether a delivery with this fingerprint (its sender and the signature that verified it) was
   * answered in full a short while ago: then it is answered as `repeated`, before its body is parsed.
   * Absent: nothing is remembered.
   */
  answered?: (fingerprint: string) => boolean;
}

/** What a verified, validated delivery tells us. */
export interface AuthenticatedEvent {
  eventId: string;
  eventType: string;
  occurredAt: Date | null;
  /**
   * The whole parsed body, unknown fields included, every number exact. The body's own text is what
   * is stored (the intake keeps it), so every scheme's payload must be the whole body it parsed.
   */
  payload: ExactJson;
  /** The payload follows a schema version this service does not know: park it, do not guess. */
  unknownSchemaVersion: boolean;
  /**
   * With unknownSchemaVersion, why: the rule and the value it met (`unknown api_version "2099-01-01"
   * (known: 2024-06-01)`), kept in the parked row's `last_error`. Absent otherwise.
   */
  parkReason?: string;
  /**
   * Hex SHA-256 of the signed bytes, for schemes whose event id is not signed (GitHub, Shopify): a
   * second key, so the same signed body is a duplicate whatever id it arrives under.
   */
  contentDigest?: string;
}

/**
 * One event of a delivery that carries several (HubSpot, LINE, SendGrid, GoCardless, Twilio Event
 * Streams), authenticated by the delivery's signature. Its payload is the event alone, and
 * `payloadText` its own JSON text exactly as it appears in the signed body: what its row stores.
 */
export interface BatchedEvent extends AuthenticatedEvent {
  payloadText: string;
}

/**
 * One event of an authentic batch that cannot be stored: no usable id or type, or refused by the
 * sender's schema. `field` is where, as a path of names and positions in the body (`events.1.webhookEventId`),
 * never a value.
 */
export interface RefusedEvent {
  field: string;
}

/** Why a delivery was not authentic: logged for operators, never told to the sender. */
export type UnauthorizedReason =
  | 'headers_missing'
  | 'signature_malformed'
  | 'timestamp_outside_tolerance'
  | 'signature_mismatch';

export type Verification =
  | { outcome: 'unauthorized'; reason: UnauthorizedReason }
  /**
   * Authentic, but not an event this service accepts. `field` names what was refused, as a path of
   * names (`data.status`) or a header, never a value; absent when the body as a whole was (not JSON,
   * or not the kind of document expected).
   */
  | { outcome: 'invalid_payload'; field?: string }
  /**
   * Authentic, and `fingerprint` names it: the sender and the signature that verified it, the same for
   * every copy of this delivery and for no other. Absent where nothing signs the content (a shared token).
   */
  | { outcome: 'verified'; event: AuthenticatedEvent; fingerprint?: string }
  /**
   * Authentic, and carrying these events (at least one; an empty batch is answered as `respond`).
   * `refused`, present only when some are: the batch's other events, malformed or refused by the
   * sender's schema, which the well-formed ones do not depend on.
   */
  | {
      outcome: 'verified_batch';
      events: readonly BatchedEvent[];
      refused?: readonly RefusedEvent[];
      fingerprint?: string;
    }
  /**
   * Authentic, and a copy of a delivery answered in full a short while ago (`answered` said so): read
   * no further, since its events were stored or set aside then.
   */
  | { outcome: 'repeated' }
  /**
   * Authentic, but a protocol message rather than an event (Slack's `url_verification`, Zoom's
   * `endpoint.url_validation`, Discord's ping): answered with `status` (200 when absent) and `body`
   * (JSON text; none with 204), and nothing is stored. `reason` names it in the log.
   */
  | { outcome: 'respond'; body: string; reason: string; status?: 200 | 204 };

/**
 * Which kinds of credential a provider reads from configuration (a signed URL it reads is required
 * once it is enabled); src/sender-variables.ts names their variables.
 */
export type Credentials = Readonly<Record<CredentialKind, boolean>>;

export interface Sender {
  /** The route segment and the `provider` column. */
  readonly name: string;
  /** Which variables enable and configure it (absent: a secret only). */
  readonly credentials?: Credentials;
  /**
   * Turns configured secrets and public keys into keys; called once per configuration, never per
   * request. Rejects, naming the provider and never a value, when they cannot be used.
   */
  importKeys(secrets: readonly string[], publicKeys?: readonly string[]): Promise<readonly VerifyKey[]>;
  verify(delivery: Delivery, keys: readonly VerifyKey[], time: VerificationTime): Promise<Verification>;
  /**
   * Why this code would park a stored payload (its schema version unknown, or its shape not the
   * described one), or undefined when it knows the payload's schema: asked again when a parked event
   * is replayed, after a deploy may have taught it the version. Absent: every version is known.
   */
  parkReasonOf?(payload: ExactJson): string | undefined;
}
