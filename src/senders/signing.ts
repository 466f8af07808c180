// A delivery signed as its sender signs it, read from the sender's description: the sender's side
// of described.ts, with the same signed-content template. Behind the simulator of
// `webhook-inbox send`; the tests sign with the senders' own libraries instead, so a mistake shared
// by both sides here would show up there.
import { type AsymmetricAlgorithm, p1363ToDer } from './asymmetric.ts';
import { sha256Hex } from './content-digest.ts';
import { hmacKeyBytes } from './described.ts';
import {
  compileTemplate,
  type SenderDescription,
  type SignatureEncoding,
  type SignatureMethod,
  type Source,
  signedContent,
  type TimeFormat,
} from './description.ts';
import { type Bytes, encodeHex, utf8 } from './encoding.ts';
import { importHmacKey, signHmac } from './hmac.ts';
import type { VerifyKey } from './verify.ts';

/** One delivery as a sender sends it: the exact body, its event id and type. */
export interface Outgoing {
  eventId: string;
  body: string;
  /** For senders that name the type in a header (GitHub, Shopify). */
  eventType: string;
  /** Sent as they are, before those the description names. */
  headers?: Readonly<Record<string, string>>;
}

/**
 * What a delivery is signed with: the shared secret (or token) the server is configured with, or
 * the private key of a sender that signs with one, the server holding its public half.
 */
export type SigningKey = { secret: string } | { privateKey: VerifyKey };

/** Where the delivery goes, for senders that sign it: the public URL the server is configured with. */
export interface SigningTarget {
  url?: string;
}

type HmacMethod = Extract<SignatureMethod, { algorithm: 'HMAC' }>;
type AsymmetricMethod = Exclude<SignatureMethod, HmacMethod>;

/** The algorithm a sender's private key must be for, or none where it signs only with secrets. */
export function privateKeyAlgorithm(description: SenderDescription): AsymmetricAlgorithm | undefined {
  return description.signature?.methods.find((method): method is AsymmetricMethod => method.algorithm !== 'HMAC')
    ?.algorithm;
}

/** Whether the sender can be signed for with a shared secret (or sends one as a token). */
export const takesSecret = (description: SenderDescription): boolean =>
  description.token !== undefined ||
  description.signature?.methods.some((method) => method.algorithm === 'HMAC') === true;

function timeText(nowSeconds: number, format: TimeFormat): string {
  if (format === 'unix') return String(nowSeconds);
  return format === 'unix-ms' ? String(nowSeconds * 1000) : new Date(nowSeconds * 1000).toISOString();
}

function encodeSignature(bytes: Bytes, encoding: SignatureEncoding): string {
  if (encoding === 'hex') return encodeHex(bytes);
  const base64 = btoa(String.fromCharCode(...bytes));
  return encoding === 'base64' ? base64 : base64.replaceAll('+', '-').replaceAll('/', '_').replace(/=+$/, '');
}

/** The header a value is read from (the first name, where a sender uses several). */
const headerOf = (source: Source | { constant: string } | { bodyDigest: true }): string | undefined =>
  'header' in source ? [source.header].flat()[0] : undefined;

/** The signature over `content` by the method the key is for: HMAC, Ed25519, or ECDSA as DER. */
async function signatureBytes(
  name: string,
  key: SigningKey,
  methods: readonly SignatureMethod[],
  content: Bytes,
): Promise<{ method: SignatureMethod; bytes: Bytes }> {
  if ('secret' in key) {
    const method = methods.find((candidate): candidate is HmacMethod => candidate.algorithm === 'HMAC');
    if (method === undefined) throw new Error(`${name}: signs with a private key, not a secret`);
    const hmac = await importHmacKey(hmacKeyBytes(name, key.secret, method.secret), method.hash);
    return { method, bytes: await signHmac(hmac, content) };
  }
  const algorithm = key.privateKey.algorithm.name === 'ECDSA' ? 'ECDSA-P256' : key.privateKey.algorithm.name;
  const method = methods.find((candidate) => candidate.algorithm === algorithm);
  if (method === undefined) throw new Error(`${name}: signs with no ${algorithm} private key`);
  if (algorithm === 'Ed25519') {
    return { method, bytes: new Uint8Array(await crypto.subtle.sign('Ed25519', key.privateKey, content)) };
  }
  const raw = await crypto.subtle.sign({ name: 'ECDSA', hash: 'SHA-256' }, key.privateKey, content);
  return { method, bytes: p1363ToDer(new Uint8Array(raw)) };
}

/**
 * The headers `description`'s sender sends with `outgoing` at `nowSeconds`, in its first header
 * set: signed with the key by the method of its kind (a secret that is a token, for a sender that
 * also has one, is sent as it is). A sender that signs its URL needs `target.url`: refused, naming
 * the sender, when it is missing or the key is of a kind the sender does not sign with.
 */
export async function signAsSender(
  description: SenderDescription,
  outgoing: Outgoing,
  key: SigningKey,
  nowSeconds: number,
  target: SigningTarget = {},
): Promise<Record<string, string>> {
  const { name, signature: spec, timestamp, occurredAt, token } = description;
  const prefix = description.headerSets?.[0] ?? '';
  const headers: Record<string, string> = { 'content-type': 'application/json', ...outgoing.headers };
  const set = (header: string | undefined, value: string) => {
    if (header !== undefined) headers[`${prefix}${header}`] = value;
  };
  set(headerOf(description.id), outgoing.eventId);
  set(headerOf(description.type), outgoing.eventType);
  if (occurredAt !== undefined && occurredAt.from !== 'timestamp') {
    set(headerOf(occurredAt.from), timeText(nowSeconds, occurredAt.format));
  }
  // Secrets written whsec_… are signing keys, every other a token (descriptionProblems).
  if (token !== undefined && 'secret' in key && (spec === undefined || !key.secret.startsWith('whsec_'))) {
    set(token.header, key.secret);
    return headers;
  }
  if (spec === undefined) throw new Error(`${name}: signs nothing`);
  const { parts } = compileTemplate(description.signed ?? '');
  const time = timeText(nowSeconds, timestamp?.format ?? 'unix');
  const body = utf8(outgoing.body);
  const content = signedContent(parts, body, {
    timestamp: time,
    id: outgoing.eventId,
    bodySha256: await sha256Hex(body),
    url: target.url,
    method: 'POST',
  });
  if (content === null) throw new Error(`${name}: signs the URL it posts to: none given`);
  const { method, bytes } = await signatureBytes(name, key, spec.methods, content);
  const signature = encodeSignature(bytes, spec.encoding);
  const from = timestamp?.from;
  const entries = [...(from !== undefined && 'entry' in from ? [[from.entry, time]] : []), [method.entry, signature]];
  const list = spec.list;
  const joins = typeof list?.separator === 'string' ? list.separator : list?.joins;
  const signatureValue =
    list === undefined
      ? `${spec.prefix ?? ''}${signature}`
      : entries.map(([entry, value]) => `${entry}${list.assign}${value}`).join(joins);
  if (from !== undefined && 'header' in from) set(from.header, time);
  set(spec.headers[0], signatureValue);
  return headers;
}
