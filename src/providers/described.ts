// The one engine that runs every sender description (description.ts): it reads the signature
// headers, builds the signed content, verifies, and reads the event's id, type and time. The shared
// guarantees live here once, so every sender has them alike: strict decoding, at most
// MAX_SIGNATURES signatures, a signed time within the tolerance past and future, every configured
// key tried (rotation), one reason-free 401, and a digest of the signed body backing any id the
// signature does not cover.
import { refusedField } from '../lib/errors.ts';
import { arrayElementTexts, type ExactJson, LosslessNumber, parseJsonText, payloadText } from '../lib/json.ts';
import { occurrenceTime } from '../lib/occurrence.ts';
import { derToP1363, importPublicKey } from './asymmetric.ts';
import {
  compileTemplate,
  descriptionProblems,
  type Field,
  type Part,
  type Path,
  type SecretFormat,
  type SenderDescription,
  type SignatureEncoding,
  type SignatureMethod,
  type SignatureSpec,
  type Source,
  signsField,
  type TimeFormat,
} from './description.ts';
import {
  afterPrefix,
  type Bytes,
  decodeBase64,
  decodeBase64Url,
  decodeHex,
  encodeHex,
  HMAC_BYTES,
  importHmacKey,
  type Signature,
  sha256Hex,
  signHmac,
  utf8,
  type VerifyKey,
  verifyWithAnyKey,
} from './hmac.ts';
import { anyObject, MAX_SIGNATURES, parseEntries, tokenHeader } from './scheme.ts';
import type {
  AuthenticatedEvent,
  BatchedEvent,
  Credentials,
  Delivery,
  UnauthorizedReason,
  Verification,
  VerificationTime,
  WebhookProvider,
} from './types.ts';

const UNIX = /^[0-9]{1,12}$/;
const UNIX_MS = /^[0-9]{1,15}$/;
const RFC3339 = /^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?([Zz]|[+-][0-9]{2}:[0-9]{2})$/;

/** Milliseconds since the epoch that `text` writes in `format`, or null when it is not exactly that. */
function parseTime(text: string, format: TimeFormat): number | null {
  if (format === 'unix') return UNIX.test(text) ? Number(text) * 1000 : null;
  if (format === 'unix-ms') return UNIX_MS.test(text) ? Number(text) : null;
  if (!RFC3339.test(text)) return null;
  const milliseconds = Date.parse(text);
  return Number.isFinite(milliseconds) ? milliseconds : null;
}

function isFresh(text: string | null, format: TimeFormat, time: VerificationTime): boolean {
  const milliseconds = text === null ? null : parseTime(text, format);
  return milliseconds !== null && Math.abs(time.nowSeconds - Math.floor(milliseconds / 1000)) <= time.toleranceSeconds;
}

/** The value at `path`, own members only (a payload's `constructor` is not Object's). */
export function valueAt(value: ExactJson | undefined, path: Path): ExactJson | undefined {
  let current = value;
  for (const key of path) {
    if (typeof key === 'number') current = Array.isArray(current) ? current[key] : undefined;
    else if (
      current !== null &&
      typeof current === 'object' &&
      !Array.isArray(current) &&
      !(current instanceof LosslessNumber) &&
      Object.hasOwn(current, key)
    ) {
      current = current[key];
    } else current = undefined;
  }
  return current;
}

/**
 * An id, type or time as text: a 1..255-character string or a non-negative integer (a bigint beyond
 * 2^53, written exactly).
 */
function textOf(value: ExactJson | undefined): string | null {
  if (typeof value === 'string') return value.length >= 1 && value.length <= 255 ? value : null;
  if (typeof value === 'bigint') return value >= 0n && String(value).length <= 255 ? String(value) : null;
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? String(value) : null;
}

/** Where an id or a type is read, named for the log line of a refusal: a payload path or a header. */
function sourceName(source: Source | { constant: string } | { bodyDigest: true }, prefix: string): string | undefined {
  if ('path' in source) return source.path.join('.');
  if ('header' in source) {
    const names = [source.header].flat().map((name) => `${prefix}${name}`);
    return `header ${names.join('|')}`;
  }
  return undefined;
}

/** The HMAC key bytes of a configured secret, or null when it is not written as `format` expects. */
export function secretBytes(secret: string, format: SecretFormat): Bytes | null {
  switch (format) {
    case 'utf8':
      return utf8(secret);
    case 'nfkd':
      return utf8(secret.normalize('NFKD'));
    case 'base64':
      return decodeBase64(secret);
    case 'whsec':
      return decodeBase64(afterPrefix(secret, 'whsec_') ?? secret);
  }
}

const SECRET_SHAPE: Readonly<Record<SecretFormat, string>> = {
  utf8: 'text',
  nfkd: 'text',
  base64: 'base64',
  whsec: '"whsec_" followed by base64',
};

/** What a token check signs: any fixed text; the token's digest is the key (see tokenSignature). */
const TOKEN_CHECK = utf8('webhook-inbox shared token');

/** Keys imported for a shared token: never used to check a signature, nor signing keys a token. */
const TOKEN_KEYS = new WeakSet<VerifyKey>();

/**
 * A shared token compared in constant time without comparing secrets directly: the configured
 * token's SHA-256 is an HMAC key, and the received token's SHA-256 keys a MAC over fixed text that
 * only the same token reproduces. Digests make every key 32 bytes, so no padding can alias two.
 */
async function tokenSignature(token: string): Promise<Signature> {
  const key = await importHmacKey(await digest(utf8(token)));
  return { algorithm: 'HMAC', bytes: await signHmac(key, TOKEN_CHECK) };
}

async function digest(data: Bytes): Promise<Bytes> {
  return new Uint8Array(await crypto.subtle.digest('SHA-256', data));
}

/** The bytes of a signature written in `encoding` (strictly: see hmac.ts); hex of `length` bytes only. */
function decodeText(text: string, encoding: SignatureEncoding, length?: number): Bytes | null {
  if (encoding === 'hex') return decodeHex(text, length);
  return encoding === 'base64' ? decodeBase64(text) : decodeBase64Url(text);
}

function decodeSignature(text: string, encoding: SignatureEncoding, method: SignatureMethod): Signature | null {
  if (method.algorithm === 'HMAC') {
    const length = HMAC_BYTES[method.hash];
    const bytes = decodeText(text, encoding, length);
    return bytes?.byteLength === length ? { algorithm: 'HMAC', bytes } : null;
  }
  const bytes = decodeText(text, encoding);
  if (bytes === null) return null;
  if (method.algorithm === 'Ed25519') return bytes.byteLength === 64 ? { algorithm: 'Ed25519', bytes } : null;
  const raw = derToP1363(bytes);
  return raw === null ? null : { algorithm: 'ECDSA', bytes: raw };
}

interface SignedHeaders {
  signatures: Signature[];
  /** The signature list's timestamp entries, for a timestamp described as an entry. */
  timestamps: string[];
}

/** Every signature the headers carry, strictly decoded; null when any of ours is malformed. */
function readSignatures(spec: SignatureSpec, header: (name: string) => string | null, timestampEntry?: string) {
  const read: SignedHeaders = { signatures: [], timestamps: [] };
  for (const name of spec.headers) {
    const value = header(name);
    // An empty or blank header carries no signature, as an absent one: Box sends an empty
    // `box-signature-secondary` beside a valid primary. A delivery left with none is still refused.
    if (value === null || value.trim() === '') continue;
    if (spec.list === undefined) {
      const text = spec.prefix === undefined ? value : afterPrefix(value, spec.prefix);
      const method = spec.methods[0];
      const signature = text === null || method === undefined ? null : decodeSignature(text, spec.encoding, method);
      if (signature === null) return null;
      read.signatures.push(signature);
      continue;
    }
    const entries = parseEntries(value, spec.list.separator, spec.list.assign);
    if (entries === null) return null;
    for (const [entry, text] of entries) {
      if (entry === timestampEntry) read.timestamps.push(text);
      const method = spec.methods.find((candidate) => candidate.entry === entry);
      // Versions this description does not speak are skipped: a scheme's later additions are not errors.
      if (method === undefined) continue;
      const signature = decodeSignature(text, spec.encoding, method);
      if (signature === null) return null;
      read.signatures.push(signature);
    }
  }
  return read;
}

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

type Fields = Readonly<Record<Exclude<Field, 'body'>, string | undefined>>;

/**
 * The bytes the sender signed: the text around the body encoded once per run (`id.timestamp.` is
 * one encoding, not four), then the body as received.
 */
function signedContent(parts: readonly Part[], body: Bytes, fields: Fields): Bytes | null {
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

type Authentication = { failure: UnauthorizedReason } | { timestamp: string | null; idSigned: boolean };

/** The provider that runs `description`. Problems with it surface when its keys are imported. */
export function describedProvider(description: SenderDescription): WebhookProvider {
  const { name, signature: spec, token, timestamp } = description;
  const parts = compileTemplate(description.signed ?? '').parts;
  const methods = spec?.methods ?? [];
  const hmacMethods = methods.flatMap((method) => (method.algorithm === 'HMAC' ? [method] : []));
  const publicKeyMethods = methods.flatMap((method) => (method.algorithm === 'HMAC' ? [] : [method]));
  const from = timestamp?.from;
  const timestampEntry = from !== undefined && 'entry' in from ? from.entry : undefined;
  const idHeader = 'header' in description.id ? description.id.header : undefined;
  const idSigned = signsField(parts, 'id');
  const schema = description.payload ?? anyObject;
  const credentials: Credentials = {
    secret: token !== undefined || hmacMethods.length > 0,
    publicKey: publicKeyMethods.length > 0,
    url: signsField(parts, 'url'),
  };

  async function importKeys(secrets: readonly string[], publicKeys: readonly string[] = []): Promise<VerifyKey[]> {
    const problems = descriptionProblems(description);
    if (problems.length > 0) throw new Error(`${name}: invalid description: ${problems.join('; ')}`);
    const keys: VerifyKey[] = [];
    for (const secret of secrets) {
      if (token !== undefined && (hmacMethods.length === 0 || !secret.startsWith('whsec_'))) {
        const key = await importHmacKey(await digest(utf8(secret)));
        TOKEN_KEYS.add(key);
        keys.push(key);
        continue;
      }
      for (const method of hmacMethods) {
        const bytes = secretBytes(secret, method.secret);
        // Named by provider, never echoed: the value is a secret.
        if (bytes === null || bytes.byteLength === 0) {
          throw new Error(`${name}: every secret must be ${SECRET_SHAPE[method.secret]}`);
        }
        keys.push(await importHmacKey(bytes, method.hash));
      }
    }
    for (const publicKey of publicKeys) {
      for (const method of publicKeyMethods) {
        try {
          keys.push(await importPublicKey(publicKey, method.algorithm, method.publicKey));
        } catch (error) {
          throw new Error(`${name}: ${(error as Error).message}`);
        }
      }
    }
    return keys;
  }

  /** Signatures present, few enough, time fresh, then every signature under every key. */
  async function authenticate(
    delivery: Delivery,
    header: (name: string) => string | null,
    keys: readonly VerifyKey[],
    time: VerificationTime,
  ): Promise<Authentication> {
    if (token !== undefined && spec?.headers.some((name) => header(name) !== null) !== true) {
      const received = header(token.header);
      if (received === null) return { failure: 'headers_missing' };
      const tokenKeys = keys.filter((key) => TOKEN_KEYS.has(key));
      const valid = await verifyWithAnyKey(tokenKeys, [await tokenSignature(received)], TOKEN_CHECK);
      return valid ? { timestamp: null, idSigned: false } : { failure: 'signature_mismatch' };
    }
    if (spec === undefined) return { failure: 'signature_malformed' };
    const read = readSignatures(spec, header, timestampEntry);
    if (read === null || read.signatures.length === 0 || read.signatures.length > MAX_SIGNATURES) {
      return { failure: 'signature_malformed' };
    }
    let signedTime: string | null = null;
    if (from !== undefined && !('path' in from)) {
      // Exactly one: a second would leave it open which of them was signed.
      signedTime =
        'entry' in from ? (read.timestamps.length === 1 ? (read.timestamps[0] ?? null) : null) : header(from.header);
      if (signedTime === null) return { failure: 'headers_missing' };
      if (timestamp !== undefined && !isFresh(signedTime, timestamp.format, time)) {
        return { failure: 'timestamp_outside_tolerance' };
      }
    }
    const id = idSigned && idHeader !== undefined ? tokenHeader(header, idHeader) : undefined;
    if (id === null) return { failure: 'headers_missing' };
    const content = signedContent(parts, delivery.body, {
      bodySha256: signsField(parts, 'bodySha256') ? await sha256Hex(delivery.body) : undefined,
      timestamp: signedTime ?? undefined,
      id,
      url: delivery.url,
      method: delivery.method ?? 'POST',
    });
    if (content === null) return { failure: 'headers_missing' };
    const signingKeys = token === undefined ? keys : keys.filter((key) => !TOKEN_KEYS.has(key));
    const valid = await verifyWithAnyKey(signingKeys, read.signatures, content);
    return valid ? { timestamp: signedTime, idSigned } : { failure: 'signature_mismatch' };
  }

  function readSource(source: Source, header: (name: string) => string | null, payload: ExactJson) {
    return 'header' in source ? tokenHeader(header, source.header) : textOf(valueAt(payload, source.path));
  }

  function occurredAt(
    header: (name: string) => string | null,
    payload: ExactJson,
    signedTime: string | null,
  ): Date | null {
    const occurred = description.occurredAt;
    if (occurred === undefined) return null;
    const text = occurred.from === 'timestamp' ? signedTime : readSource(occurred.from, header, payload);
    // Informational: read every way senders write it (Clerk's milliseconds where the specification
    // says RFC 3339), and no time at all when it states none the database can hold.
    return occurrenceTime(text, occurred.format === 'unix' ? 'seconds' : 'seconds-or-milliseconds');
  }

  async function verify(delivery: Delivery, keys: readonly VerifyKey[], time: VerificationTime): Promise<Verification> {
    const { headers, body } = delivery;
    const sets = description.headerSets;
    const first = spec?.headers[0] ?? token?.header ?? '';
    const prefix = sets === undefined ? '' : (sets.find((set) => headers.has(`${set}${first}`)) ?? sets.at(-1) ?? '');
    const header = (headerName: string) => headers.get(`${prefix}${headerName}`);

    const authentication = await authenticate(delivery, header, keys, time);
    if ('failure' in authentication) return { outcome: 'unauthorized', reason: authentication.failure };

    const bodyText = payloadText(body);
    const payload = bodyText === undefined ? undefined : parseJsonText(bodyText);
    if (bodyText === undefined || payload === undefined) return { outcome: 'invalid_payload' };
    const checked = schema.safeParse(payload);
    if (!checked.success) return { outcome: 'invalid_payload', field: refusedField(checked.error) };
    if (from !== undefined && 'path' in from && timestamp !== undefined) {
      // A time inside the body is read only now, but refused the same way as a header's.
      if (!isFresh(textOf(valueAt(payload, from.path)), timestamp.format, time)) {
        return { outcome: 'unauthorized', reason: 'timestamp_outside_tolerance' };
      }
    }
    const reply = await description.answer?.(payload, {
      hmacHex: async (text) => {
        const key = keys.find((candidate) => candidate.algorithm.name === 'HMAC');
        if (key === undefined) throw new Error(`${name}: no secret to answer with`);
        return encodeHex(await signHmac(key, utf8(text)));
      },
    });
    if (reply !== undefined) return { outcome: 'respond', ...reply };

    // The body's digest is a second key where a captured body could otherwise come back: under
    // an id the signature does not cover, or at any age where no time is signed (the inbox keeps
    // such rows past retention). Hashed only where it keys the event, or is the id itself.
    const timeSigned = authentication.timestamp !== null || (from !== undefined && 'path' in from);
    const source = description.id;
    const secondKey = ('header' in source && !authentication.idSigned) || !timeSigned;
    if (description.events !== undefined) {
      const read = (event: ExactJson) => eventOf(event, header, prefix, authentication.timestamp);
      return batchOf(description.events.path, bodyText, payload, read, secondKey);
    }
    const bodyDigest = secondKey || 'bodyDigest' in source ? await sha256Hex(body) : undefined;
    const read = eventOf(payload, header, prefix, authentication.timestamp, bodyDigest);
    if ('field' in read) return { outcome: 'invalid_payload', field: read.field };
    return {
      outcome: 'verified',
      event: { ...read, ...(secondKey && bodyDigest !== undefined ? { contentDigest: bodyDigest } : {}) },
    };
  }

  /**
   * What `event` (the body, or one event of a batch) says: its id, type, time and schema version,
   * or the field that is missing or unusable. `bodyDigest` is the id where the description says so.
   */
  function eventOf(
    event: ExactJson,
    header: (name: string) => string | null,
    prefix: string,
    signedTime: string | null,
    bodyDigest?: string,
  ): AuthenticatedEvent | { field: string | undefined } {
    const source = description.id;
    const eventId = 'bodyDigest' in source ? (bodyDigest ?? null) : readSource(source, header, event);
    const typeSource = description.type;
    const baseType = 'constant' in typeSource ? typeSource.constant : readSource(typeSource, header, event);
    const suffix = description.typeSuffix === undefined ? null : textOf(valueAt(event, description.typeSuffix));
    const eventType = baseType === null || suffix === null ? baseType : `${baseType}.${suffix}`;
    if (eventId === null) return { field: sourceName(source, prefix) };
    if (eventType === null || eventType.length > 255) return { field: sourceName(typeSource, prefix) };
    const version = description.schemaVersion;
    const versionText = version === undefined ? null : textOf(valueAt(event, version.path));
    return {
      eventId,
      eventType,
      occurredAt: occurredAt(header, event, signedTime),
      payload: event,
      unknownSchemaVersion: version !== undefined && (versionText === null || !version.known.has(versionText)),
    };
  }

  const knowsSchemaOf = (payload: ExactJson) => {
    const version = description.schemaVersion;
    if (version === undefined) return true;
    const text = textOf(valueAt(payload, version.path));
    return text !== null && version.known.has(text) && schema.safeParse(payload).success;
  };

  return { name, credentials, importKeys, verify, knowsSchemaOf };
}

/**
 * Every event of a batch, each read as `read` reads one, with its own exact text from the body; one
 * unusable event refuses the whole delivery, so nothing of it is stored. An empty batch (LINE's check
 * of a new URL) is answered and stores nothing.
 */
async function batchOf(
  path: readonly string[],
  text: string,
  payload: ExactJson,
  read: (event: ExactJson) => AuthenticatedEvent | { field: string | undefined },
  secondKey: boolean,
): Promise<Verification> {
  const items = valueAt(payload, path);
  const texts = arrayElementTexts(text, path);
  if (!Array.isArray(items) || texts === undefined || texts.length !== items.length) {
    return { outcome: 'invalid_payload', ...(path.length > 0 ? { field: path.join('.') } : {}) };
  }
  if (items.length === 0) return { outcome: 'respond', body: '{"received":true}', reason: 'empty_batch' };
  const events: BatchedEvent[] = [];
  for (const [index, item] of items.entries()) {
    const event = read(item);
    const eventText = texts[index];
    if ('field' in event || eventText === undefined) {
      const field = 'field' in event ? event.field : undefined;
      return { outcome: 'invalid_payload', field: [...path, index, ...(field === undefined ? [] : [field])].join('.') };
    }
    // A sender that signs no time leaves a captured batch valid forever, and only stored keys keep
    // it from being applied again: each event's row carries the digest of its signed id, which keys
    // nothing the id does not, but keeps the row past retention as every digest-backed row is kept.
    const contentDigest = secondKey ? await sha256Hex(utf8(event.eventId)) : undefined;
    events.push({ ...event, payloadText: eventText, ...(contentDigest === undefined ? {} : { contentDigest }) });
  }
  return { outcome: 'verified_batch', events };
}
