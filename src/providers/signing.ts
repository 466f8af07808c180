// A delivery signed as its sender signs it, read from the sender's description: the sender's side
// of described.ts, with the same signed-content template. Behind the simulator of
// `webhook-inbox send`; the tests sign with the senders' own libraries instead, so a mistake shared
// by both sides here would show up there.
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

/** One delivery as a sender sends it: the exact body, its event id and type. */
export interface Outgoing {
  eventId: string;
  body: string;
  /** For senders that name the type in a header (GitHub, Shopify). */
  eventType: string;
}

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

/**
 * The headers `description`'s sender sends with `outgoing`, signed with `secret` at `nowSeconds`
 * by its first HMAC method, in its first header set. A sender that signs with a private key, signs
 * its URL or lists entries by a pattern cannot be simulated: refused, naming it.
 */
export async function signAsSender(
  description: SenderDescription,
  outgoing: Outgoing,
  secret: string,
  nowSeconds: number,
): Promise<Record<string, string>> {
  const { name, signature: spec, timestamp, occurredAt } = description;
  const method = spec?.methods.find(
    (candidate): candidate is Extract<SignatureMethod, { algorithm: 'HMAC' }> => candidate.algorithm === 'HMAC',
  );
  const separator = spec?.list?.separator;
  if (spec === undefined || method === undefined || separator instanceof RegExp) {
    throw new Error(`${name}: cannot be simulated`);
  }
  const time = timeText(nowSeconds, timestamp?.format ?? 'unix');
  const body = utf8(outgoing.body);
  const content = signedContent(compileTemplate(description.signed ?? '').parts, body, {
    timestamp: time,
    id: outgoing.eventId,
    bodySha256: undefined,
    url: undefined,
    method: 'POST',
  });
  if (content === null) throw new Error(`${name}: cannot be simulated`);
  const key = await importHmacKey(hmacKeyBytes(name, secret, method.secret), method.hash);
  const signature = encodeSignature(await signHmac(key, content), spec.encoding);
  const from = timestamp?.from;
  const entries = [...(from !== undefined && 'entry' in from ? [[from.entry, time]] : []), [method.entry, signature]];
  const signatureValue =
    spec.list === undefined
      ? `${spec.prefix ?? ''}${signature}`
      : entries.map(([entry, value]) => `${entry}${spec.list?.assign}${value}`).join(separator);

  const prefix = description.headerSets?.[0] ?? '';
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  const set = (header: string | undefined, value: string) => {
    if (header !== undefined) headers[`${prefix}${header}`] = value;
  };
  set(headerOf(description.id), outgoing.eventId);
  set(headerOf(description.type), outgoing.eventType);
  if (from !== undefined && 'header' in from) set(from.header, time);
  if (occurredAt !== undefined && occurredAt.from !== 'timestamp') {
    set(headerOf(occurredAt.from), timeText(nowSeconds, occurredAt.format));
  }
  set(spec.headers[0], signatureValue);
  return headers;
}
