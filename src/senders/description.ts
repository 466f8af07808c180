// The descriptions' vocabulary: a sender described as data (which headers carry what, how
// the signature is written, which bytes are signed in what order, where the time, the id and the
// type are), the signed-content template and the bytes it makes, and the check that a description
// can work at all. The engine that runs descriptions is described.ts (signing.ts signs by them, as
// the sender does); the senders themselves are senders.ts.
import type { z } from 'zod';
import type { ExactJson } from '../lib/json.ts';
import type { AsymmetricAlgorithm, PublicKeyFormat } from './asymmetric.ts';
import { type Bytes, utf8 } from './encoding.ts';
import type { HmacHash } from './hmac.ts';

/** Keys into a JSON document: object members by name, array elements by index. */
export type Path = readonly (string | number)[];

/**
 * A value carried by a header (the first of several present, where a sender names it differently
 * from one delivery to another), or by the signed payload at a path.
 */
export type Source = { header: string | readonly string[] } | { path: Path };

/** How a configured secret becomes the HMAC key. */
export type SecretFormat =
  /** Its UTF-8 bytes (most senders). */
  | 'utf8'
  /** Its UTF-8 bytes after Unicode NFKD normalisation (EasyPost). */
  | 'nfkd'
  /** Base64-decoded (Standard Webhooks-style secrets shown without a prefix). */
  | 'base64'
  /** `whsec_` + base64, decoded (Standard Webhooks; the prefix may be left out). */
  | 'whsec';

/** One way a signature may be made; `entry` names it in a `k=v` list header. */
export type SignatureMethod =
  | { algorithm: 'HMAC'; hash: HmacHash; secret: SecretFormat; entry?: string }
  /** ECDSA signatures are DER (what senders send), checked strictly and turned into r || s. */
  | { algorithm: AsymmetricAlgorithm; publicKey: PublicKeyFormat; entry?: string };

export interface SignatureSpec {
  /** Headers carrying signatures; each present one is read (Box sends a primary and a secondary). */
  headers: readonly string[];
  /** `base64url`: unpadded, as Sanity writes it. */
  encoding: SignatureEncoding;
  /** Text every signature header starts with (`sha256=`, `v0=`), required and removed. */
  prefix?: string;
  /**
   * The header is a list of `name<assign>value` entries joined by `separator`; where that is a
   * pattern (the forms a sender's own library accepts), `joins` is what the sender writes.
   */
  list?: { separator: string | RegExp; assign: string; joins?: string };
  methods: readonly SignatureMethod[];
}

/** How a signature is written in its header. */
export type SignatureEncoding = 'hex' | 'base64' | 'base64url';

/** How a time is written: unix seconds, unix milliseconds, or an RFC 3339 date. */
export type TimeFormat = 'unix' | 'unix-ms' | 'rfc3339';

export interface ProtocolReply {
  body: string;
  /** Named in the log line. */
  reason: string;
  status?: 200 | 204;
}

export interface AnswerTools {
  /** Hex HMAC of `text` under the first configured secret (Zoom's URL validation). */
  hmacHex(text: string): Promise<string>;
}

/** A protocol message the sender expects an answer to, recognised in an authentic payload. */
export type ProtocolAnswer = (
  payload: ExactJson,
  tools: AnswerTools,
) => ProtocolReply | undefined | Promise<ProtocolReply | undefined>;

export interface SenderDescription {
  /** The route segment and the `provider` column: lower case, no spaces. */
  name: string;
  /**
   * Alternative header name prefixes, one set per delivery (Shopify's `x-shopify-` and `shopify-`):
   * the first set whose first signature header is present is read, and every header name in the
   * description is written without the prefix.
   */
  headerSets?: readonly string[];
  /** A signed request. At least one of `signature` and `token`. */
  signature?: SignatureSpec;
  /**
   * The configured secret itself, sent in this header (GitLab's secret token). With a signature too
   * (GitLab's signing token), a delivery carrying a signature header is checked by its signature
   * only; secrets written `whsec_…` are signing keys and every other secret is a token.
   */
  token?: { header: string };
  /**
   * The signed content: `{timestamp}`, `{id}`, `{body}`, `{url}`, `{method}` and literal text
   * between them, e.g. `v0:{timestamp}:{body}`. The body appears exactly once, as itself or as
   * `{bodySha256}`, its hex SHA-256 (Twilio signs that in the URL). Required with `signature`.
   */
  signed?: string;
  /**
   * The signed time: a header, an entry of the signature list, or a path in the payload (read
   * once the signature holds). Header and entry times must appear in `signed`.
   */
  timestamp?: { from: { header: string } | { entry: string } | { path: Path }; format: TimeFormat };
  /**
   * The event id. A header the signature does not cover (not `{id}` in `signed`) is backed by the
   * body digest as a second key; `bodyDigest` makes the digest of the signed body the id itself,
   * for senders that batch events or send no id.
   */
  id: Source | { bodyDigest: true };
  type: Source | { constant: string };
  /**
   * The delivery carries several events: the array at this path (empty: the body is the array).
   * Each element is an event stored in a row of its own, and `id`, `type`, `typeSuffix` and
   * `occurredAt` are then paths read from each event; an empty array is answered and stores nothing.
   */
  events?: { path: readonly string[] };
  /** Joined to the type with `.` when present in the payload (GitHub's `action`). */
  typeSuffix?: Path;
  /** Informational: an unreadable value is stored as no time, never a refusal. */
  occurredAt?: { from: Source | 'timestamp'; format: TimeFormat };
  /** The payload's shape; any JSON object when absent. Unknown fields are always kept. */
  payload?: z.ZodType<unknown>;
  /** Events whose version at `path` is not in `known` are parked, not applied. */
  schemaVersion?: { path: Path; known: ReadonlySet<string> };
  answer?: ProtocolAnswer;
  /**
   * A realistic delivery of this sender, built as its documentation shows one (its field names and
   * shapes): what `webhook-inbox send` signs and delivers. Every described sender has one (senders.ts).
   */
  sample?: (context: SampleContext) => Sample;
  /**
   * What the sender does with a delivery that was refused (or never answered): how long it delivers
   * the event again, and whether by itself. Retention and a sender's pause are judged by it. Every
   * described sender has one (senders.ts); docs/senders.md ("Retry windows") gives the sources.
   */
  redelivery?: Redelivery;
}

/** How long, and how, a sender delivers an event again after its first attempt. */
export interface Redelivery {
  /**
   * The longest it may deliver one event again, in whole days rounded up: its automatic retries, or
   * the manual redelivery its dashboard offers where that is longer. Where it publishes no figure,
   * 3 (Stripe's, the longest common one).
   */
  windowDays: number;
  /** Minutes it keeps retrying, where its schedule is shorter than `windowDays` (which rounds up). */
  retriesForMinutes?: number;
  /** It never sends a refused delivery again by itself: where an operator redelivers it. */
  byHand?: string;
}

export interface SampleContext {
  /** The time the delivery is made, unix seconds: its times (and signed time) are this. */
  nowSeconds: number;
  /** The event type asked for (`send --type`); each sample has a usual one of its own. */
  type?: string;
}

/** One delivery as the sender would make it: its payload, type and, where sent apart, its id. */
export interface Sample {
  /** The JSON body: one event, or for batch senders the delivery holding several. */
  payload: object;
  /** The event type: in the payload already, except for senders that send it in a header. */
  type: string;
  /** The delivery id, for senders that send it in a header (a fresh UUID where not given). */
  id?: string;
  /** Headers the sender sends beside those the description reads (Box's signature version). */
  headers?: Readonly<Record<string, string>>;
}

export type Field = 'timestamp' | 'id' | 'body' | 'bodySha256' | 'url' | 'method';
export type Part = { literal: string } | { field: Field };

const FIELDS: ReadonlySet<string> = new Set(['timestamp', 'id', 'body', 'bodySha256', 'url', 'method']);
const PLACEHOLDER = /\{([^{}]*)\}/g;

/** The template as literal and field parts, or the problems that make it unusable. */
export function compileTemplate(template: string): { parts: Part[]; problems: string[] } {
  const parts: Part[] = [];
  const problems: string[] = [];
  let at = 0;
  for (const match of template.matchAll(PLACEHOLDER)) {
    // Stryker disable next-line StringLiteral: the pattern's group matches every time (possibly empty), so match[1] is never undefined and the default is never taken
    const name = match[1] ?? '';
    if (match.index > at) parts.push({ literal: template.slice(at, match.index) });
    if (FIELDS.has(name)) parts.push({ field: name as Field });
    else problems.push(`signed content names an unknown part {${name}}`);
    at = match.index + match[0].length;
  }
  if (at < template.length) parts.push({ literal: template.slice(at) });
  const bodies = parts.filter((part) => 'field' in part && (part.field === 'body' || part.field === 'bodySha256'));
  if (bodies.length !== 1) problems.push('signed content must contain {body} (or {bodySha256}) exactly once');
  return { parts, problems };
}

export const signsField = (parts: readonly Part[], field: Field) =>
  parts.some((part) => 'field' in part && part.field === field);

/** The values a template's fields take for one delivery, the body aside; absent: not available. */
export type Fields = Readonly<Record<Exclude<Field, 'body'>, string | undefined>>;

function concat(chunks: readonly Bytes[]): Bytes {
  // The body alone (GitHub, Shopify, …) is signed as it is: no copy.
  if (chunks.length === 1 && chunks[0] !== undefined) return chunks[0];
  let length = 0;
  for (const chunk of chunks) length += chunk.byteLength;
  const joined = new Uint8Array(length);
  let at = 0;
  for (const chunk of chunks) {
    joined.set(chunk, at);
    at += chunk.byteLength;
  }
  return joined;
}

/**
 * The bytes the sender signed: the text around the body encoded once per run (`id.timestamp.` is
 * one encoding, not four), then the body as received. Null when a field it names is not available.
 */
export function signedContent(parts: readonly Part[], body: Bytes, fields: Fields): Bytes | null {
  const chunks: Bytes[] = [];
  let text = '';
  for (const part of parts) {
    if ('literal' in part) text += part.literal;
    else if (part.field === 'body') {
      if (text !== '') chunks.push(utf8(text));
      chunks.push(body);
      text = '';
    } else {
      const value = fields[part.field];
      if (value === undefined) return null;
      text += value;
    }
  }
  if (text !== '') chunks.push(utf8(text));
  return concat(chunks);
}

/** Every reason a description cannot work; empty when it can. Checked before its keys are imported. */
export function descriptionProblems(description: SenderDescription): string[] {
  const { signature, token, timestamp } = description;
  const problems: string[] = [];
  if (!/^[a-z0-9]{1,64}$/.test(description.name)) problems.push('name must be lower-case letters and digits');
  if (signature === undefined && token === undefined) problems.push('needs a signature or a token');
  if (signature === undefined && (description.signed !== undefined || timestamp !== undefined)) {
    problems.push('a token sender signs nothing: no signed content or timestamp');
  }
  if (signature !== undefined && token !== undefined) {
    const secrets = signature.methods.map((method) => (method.algorithm === 'HMAC' ? method.secret : undefined));
    if (!secrets.every((secret) => secret === 'whsec')) {
      problems.push('a token beside a signature needs whsec_ secrets, the form that tells them apart');
    }
  }
  if (signature !== undefined) {
    // Stryker disable next-line StringLiteral: any template without a {body} gives the same one problem and signs no field, so an absent one may read as '' or as any other text without braces
    const { parts, problems: templateProblems } = compileTemplate(description.signed ?? '');
    problems.push(...templateProblems);
    if (signature.headers.length === 0) problems.push('signature needs at least one header');
    const entries = signature.methods.map((method) => method.entry);
    if (signature.methods.length === 0) problems.push('signature needs at least one method');
    if (signature.list === undefined && (signature.methods.length !== 1 || entries[0] !== undefined)) {
      problems.push('a plain signature header takes exactly one method and no entry names');
    }
    if (signature.list !== undefined && (entries.includes(undefined) || new Set(entries).size !== entries.length)) {
      problems.push('a signature list needs a distinct entry name for each method');
    }
    const from = timestamp?.from;
    if (signature.list?.separator instanceof RegExp && signature.list.joins === undefined) {
      problems.push('a signature list read by a pattern needs the separator the sender writes (joins)');
    }
    if (from !== undefined && 'entry' in from && signature.list === undefined) {
      problems.push('a timestamp entry needs a signature list');
    }
    if (from !== undefined && !('path' in from) && !signsField(parts, 'timestamp')) {
      problems.push('a timestamp from a header or entry must be in the signed content');
    }
    if (signsField(parts, 'timestamp') && (from === undefined || 'path' in from)) {
      problems.push('{timestamp} is signed but no timestamp header or entry is described');
    }
    if (description.events !== undefined && !('path' in description.id && 'path' in description.type)) {
      problems.push('a batch reads its id and type from each event: both must be paths');
    }
    if (signsField(parts, 'id') && !('header' in description.id))
      problems.push('{id} is signed but the id is no header');
  }
  return problems;
}
