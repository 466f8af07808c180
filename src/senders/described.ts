// The one engine that runs every sender description (description.ts): it reads the signature
// headers, builds the signed content, verifies, and reads the event's id, type and time. The shared
// guarantees live here once, so every sender has them alike: strict decoding, at most
// MAX_SIGNATURES signatures, a signed time within the tolerance past and future, every configured
// key tried (rotation), one reason-free 401, and a digest of the signed body backing any id the
// signature does not cover.
import type { z } from 'zod';
import { refusedField } from '../lib/errors.ts';
import { arrayElementTexts, type ExactJson, LosslessNumber, parseJsonText, payloadText } from '../lib/json.ts';
import { occurrenceTime } from '../lib/occurrence.ts';
import { derToP1363, importPublicKey } from './asymmetric.ts';
import { keysByContentDigest, type SignedCoverage, sha256Hex } from './content-digest.ts';
import {
  compileTemplate,
  descriptionProblems,
  type Part,
  type Path,
  type ProtocolReply,
  type SecretFormat,
  type SenderDescription,
  type SignatureEncoding,
  type SignatureMethod,
  type SignatureSpec,
  type Source,
  signedContent,
  signsField,
  type TimeFormat,
} from './description.ts';
import { afterPrefix, type Bytes, decodeBase64, decodeBase64Url, decodeHex, encodeHex, utf8 } from './encoding.ts';
import { HMAC_BYTES, importHmacKey, signHmac } from './hmac.ts';
import { anyObject, MAX_SIGNATURES, parseEntries, tokenHeader } from './scheme.ts';
import type {
  AuthenticatedEvent,
  BatchedEvent,
  Credentials,
  Delivery,
  RefusedEvent,
  Sender,
  UnauthorizedReason,
  Verification,
  VerificationTime,
} from './types.ts';
import { type Signature, type VerifyKey, verifiedSignature, verifyWithAnyKey } from './verify.ts';

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
  // Stryker disable next-line ConditionalExpression: parseTime refuses null itself: 'null' matches no time format
  const milliseconds = text === null ? null : parseTime(text, format);
  // Stryker disable next-line ConditionalExpression: a null time counts as 0, never within the tolerance of a real clock
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
  // Stryker disable next-line EqualityOperator: a bigint is read only for an integer beyond 2^53, so `> 0n` and `>= 0n` part the same values
  if (typeof value === 'bigint') return value >= 0n && String(value).length <= 255 ? String(value) : null;
  // Stryker disable next-line ConditionalExpression: Number.isSafeInteger checks the type itself
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? String(value) : null;
}

/** Where an id or a type is read, named for the log line of a refusal: a payload path or a header. */
function sourceName(source: Source | { constant: string } | { bodyDigest: true }, prefix: string): string | undefined {
  if ('path' in source) return source.path.join('.');
  // Stryker disable next-line ConditionalExpression: only a path or a header source is ever refused (a digest id is always there outside batches, which take none; a constant type is always there)
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

/** The HMAC key bytes of a configured secret of sender `name`, or a rejection naming it, never the value. */
export function hmacKeyBytes(name: string, secret: string, format: SecretFormat): Bytes {
  const bytes = secretBytes(secret, format);
  // Named by sender, never echoed: the value is a secret.
  if (bytes === null || bytes.byteLength === 0) {
    throw new Error(`${name}: every secret must be ${SECRET_SHAPE[format]}`);
  }
  return bytes;
}

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

/** The bytes of a signature written in `encoding` (strictly: see encoding.ts); hex of `length` bytes only. */
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
    // Stryker disable next-line MethodExpression: values come from Headers, which strips surrounding whitespace, so a blank header arrives empty
    if (value === null || value.trim() === '') continue;
    if (spec.list === undefined) {
      const text = spec.prefix === undefined ? value : afterPrefix(value, spec.prefix);
      const method = spec.methods[0];
      // Stryker disable next-line ConditionalExpression,LogicalOperator: decodeSignature refuses a null text itself ('null' is no signature in any encoding), and a plain header has exactly one method (descriptionProblems)
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

/**
 * A delivery authenticated, with the signature that verified it where one signs its content (none
 * for a shared token, which is the same on every delivery).
 */
type Authentication =
  | { failure: UnauthorizedReason }
  | { timestamp: string | null; idSigned: boolean; signature?: Signature };

/** A header of the delivery by the name the description gives it (its header set's prefix added). */
type Header = (name: string) => string | null;

type HmacMethod = Extract<SignatureMethod, { algorithm: 'HMAC' }>;
type PublicKeyMethod = Exclude<SignatureMethod, HmacMethod>;

/** What a description says, worked out once per provider rather than once per delivery. */
interface Compiled {
  description: SenderDescription;
  parts: readonly Part[];
  hmacMethods: readonly HmacMethod[];
  publicKeyMethods: readonly PublicKeyMethod[];
  /** The signature list's entry that carries the signed time, for a time described as an entry. */
  timestampEntry: string | undefined;
  /** Where a signed id is read (`{id}` in the signed content). */
  idHeader: string | readonly string[] | undefined;
  idSigned: boolean;
  schema: z.ZodType<unknown>;
}

function compile(description: SenderDescription): Compiled {
  // Stryker disable next-line StringLiteral: only a token-only description has no template (one with a signature and none is refused at import), and its parts are only asked which fields they sign: literal text signs none
  const parts = compileTemplate(description.signed ?? '').parts;
  const methods = description.signature?.methods ?? [];
  const from = description.timestamp?.from;
  return {
    description,
    parts,
    hmacMethods: methods.filter((method): method is HmacMethod => method.algorithm === 'HMAC'),
    publicKeyMethods: methods.filter((method): method is PublicKeyMethod => method.algorithm !== 'HMAC'),
    timestampEntry: from !== undefined && 'entry' in from ? from.entry : undefined,
    idHeader: 'header' in description.id ? description.id.header : undefined,
    idSigned: signsField(parts, 'id'),
    schema: description.payload ?? anyObject,
  };
}

function credentialsOf(compiled: Compiled): Credentials {
  return {
    secret: compiled.description.token !== undefined || compiled.hmacMethods.length > 0,
    publicKey: compiled.publicKeyMethods.length > 0,
    url: signsField(compiled.parts, 'url'),
  };
}

/**
 * The keys of one configured secret: a shared token's (its digest, kept apart in TOKEN_KEYS) for a
 * token sender, unless a signature is described too and the secret is written `whsec_…`; else one
 * HMAC key per method.
 */
async function secretKeys(compiled: Compiled, secret: string): Promise<VerifyKey[]> {
  const { name, token } = compiled.description;
  if (token !== undefined && (compiled.hmacMethods.length === 0 || !secret.startsWith('whsec_'))) {
    const key = await importHmacKey(await digest(utf8(secret)));
    TOKEN_KEYS.add(key);
    return [key];
  }
  const keys: VerifyKey[] = [];
  for (const method of compiled.hmacMethods) {
    keys.push(await importHmacKey(hmacKeyBytes(name, secret, method.secret), method.hash));
  }
  return keys;
}

async function publicKeyKeys(compiled: Compiled, publicKey: string): Promise<VerifyKey[]> {
  const keys: VerifyKey[] = [];
  for (const method of compiled.publicKeyMethods) {
    try {
      keys.push(await importPublicKey(publicKey, method.algorithm, method.publicKey));
    } catch (error) {
      throw new Error(`${compiled.description.name}: ${(error as Error).message}`);
    }
  }
  return keys;
}

/** Every configured key, once; an invalid description is refused here, before any delivery. */
async function importKeys(
  compiled: Compiled,
  secrets: readonly string[],
  publicKeys: readonly string[] = [],
): Promise<VerifyKey[]> {
  const problems = descriptionProblems(compiled.description);
  if (problems.length > 0) {
    throw new Error(`${compiled.description.name}: invalid description: ${problems.join('; ')}`);
  }
  const keys: VerifyKey[] = [];
  for (const secret of secrets) keys.push(...(await secretKeys(compiled, secret)));
  for (const publicKey of publicKeys) keys.push(...(await publicKeyKeys(compiled, publicKey)));
  return keys;
}

/**
 * The delivery's headers as the description names them: with header sets, the first set whose
 * first signature (or token) header is present, else the last set.
 */
function headersOf(description: SenderDescription, headers: Headers): { header: Header; prefix: string } {
  const sets = description.headerSets;
  // Stryker disable next-line OptionalChaining,StringLiteral: without a signature a description must have a token, or its keys are never imported and nothing is verified (descriptionProblems)
  const first = description.signature?.headers[0] ?? description.token?.header ?? '';
  // Stryker disable next-line UnaryOperator: every description with header sets has two, so `at(1)` is `at(-1)`; the fallback set serves only a delivery without its first signature header, refused under any prefix
  const prefix = sets === undefined ? '' : (sets.find((set) => headers.has(`${set}${first}`)) ?? sets.at(-1) ?? '');
  return { header: (name) => headers.get(`${prefix}${name}`), prefix };
}

/** A shared token (GitLab's secret token), compared with every token key: no time, no signed id. */
async function authenticateToken(tokenHeaderName: string, header: Header, keys: readonly VerifyKey[]) {
  const received = header(tokenHeaderName);
  if (received === null) return { failure: 'headers_missing' as const };
  // Stryker disable next-line MethodExpression: a signing key verifies a token's MAC only if its bytes were the token's SHA-256, which whoever holds the signing secret cannot arrange
  const tokenKeys = keys.filter((key) => TOKEN_KEYS.has(key));
  const valid = await verifyWithAnyKey(tokenKeys, [await tokenSignature(received)], TOKEN_CHECK);
  // Stryker disable next-line ObjectLiteral,BooleanLiteral: a token signs no time, so the body digest keys its event whatever `idSigned` says, and an empty object reads as no time, no signed id (the failure object is pinned by the token tests)
  return valid ? { timestamp: null, idSigned: false } : { failure: 'signature_mismatch' as const };
}

/**
 * The signed time of a header or signature entry, fresh within the tolerance; null where none is
 * described in headers (a time in the body is checked once the body is read).
 */
function signedTimeOf(
  compiled: Compiled,
  timestamps: readonly string[],
  header: Header,
  time: VerificationTime,
): { time: string | null } | { failure: UnauthorizedReason } {
  const timestamp = compiled.description.timestamp;
  if (timestamp === undefined || 'path' in timestamp.from) return { time: null };
  const from = timestamp.from;
  // Exactly one: a second would leave it open which of them was signed.
  const text = 'entry' in from ? (timestamps.length === 1 ? (timestamps[0] ?? null) : null) : header(from.header);
  // Stryker disable next-line ObjectLiteral: an empty object leaves the time undefined, and the signed content, which names the time, is then refused as headers missing all the same
  if (text === null) return { failure: 'headers_missing' };
  return isFresh(text, timestamp.format, time) ? { time: text } : { failure: 'timestamp_outside_tolerance' };
}

/** What a delivery presents for authentication, with the keys and the clock it is checked against. */
interface Presented {
  delivery: Delivery;
  header: Header;
  keys: readonly VerifyKey[];
  time: VerificationTime;
}

/** Signatures present, few enough, time fresh, then every signature under every signing key. */
async function authenticateSignature(
  compiled: Compiled,
  { delivery, header, keys, time }: Presented,
): Promise<Authentication> {
  const spec = compiled.description.signature;
  // Stryker disable next-line ConditionalExpression,ObjectLiteral,StringLiteral: never true, for the types only: authenticate sends every description without a signature to the token check
  if (spec === undefined) return { failure: 'signature_malformed' };
  const read = readSignatures(spec, header, compiled.timestampEntry);
  if (read === null || read.signatures.length === 0 || read.signatures.length > MAX_SIGNATURES) {
    return { failure: 'signature_malformed' };
  }
  const signedTime = signedTimeOf(compiled, read.timestamps, header, time);
  if ('failure' in signedTime) return signedTime;
  const { idSigned, idHeader, parts } = compiled;
  // Stryker disable next-line ConditionalExpression: `{id}` is signed only where the id is a header (descriptionProblems), so `idHeader !== undefined` is there for the types
  const id = idSigned && idHeader !== undefined ? tokenHeader(header, idHeader) : undefined;
  if (id === null) return { failure: 'headers_missing' };
  const content = signedContent(parts, delivery.body, {
    bodySha256: signsField(parts, 'bodySha256') ? await sha256Hex(delivery.body) : undefined,
    timestamp: signedTime.time ?? undefined,
    id,
    url: delivery.url,
    method: delivery.method ?? 'POST',
  });
  if (content === null) return { failure: 'headers_missing' };
  // Stryker disable next-line ConditionalExpression: without a token no key is a token key, so filtering them out changes nothing
  const signingKeys = compiled.description.token === undefined ? keys : keys.filter((key) => !TOKEN_KEYS.has(key));
  const signature = await verifiedSignature(signingKeys, read.signatures, content);
  return signature === undefined
    ? { failure: 'signature_mismatch' }
    : { timestamp: signedTime.time, idSigned, signature };
}

/** By token where the sender has one and the delivery carries no signature header, else by signature. */
function authenticate(compiled: Compiled, presented: Presented): Promise<Authentication> {
  const { token, signature } = compiled.description;
  const { header } = presented;
  if (token !== undefined && signature?.headers.some((name) => header(name) !== null) !== true) {
    return authenticateToken(token.header, header, presented.keys);
  }
  return authenticateSignature(compiled, presented);
}

function readSource(source: Source, header: Header, payload: ExactJson): string | null {
  return 'header' in source ? tokenHeader(header, source.header) : textOf(valueAt(payload, source.path));
}

function occurredAt(
  description: SenderDescription,
  header: Header,
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

/**
 * What `event` (the body, or one event of a batch) says: its id, type, time and schema version,
 * or the field that is missing or unusable. `bodyDigest` is the id where the description says so.
 */
function eventOf(
  description: SenderDescription,
  event: ExactJson,
  headers: { header: Header; prefix: string },
  signedTime: string | null,
  bodyDigest?: string,
): AuthenticatedEvent | { field: string | undefined } {
  const { header, prefix } = headers;
  const source = description.id;
  const eventId = 'bodyDigest' in source ? (bodyDigest ?? null) : readSource(source, header, event);
  const typeSource = description.type;
  const baseType = 'constant' in typeSource ? typeSource.constant : readSource(typeSource, header, event);
  const suffix = description.typeSuffix === undefined ? null : textOf(valueAt(event, description.typeSuffix));
  const eventType = baseType === null || suffix === null ? baseType : `${baseType}.${suffix}`;
  if (eventId === null) return { field: sourceName(source, prefix) };
  if (eventType === null || eventType.length > 255) return { field: sourceName(typeSource, prefix) };
  const parkReason = unknownVersionReason(description, event);
  const read: AuthenticatedEvent = {
    eventId,
    eventType,
    occurredAt: occurredAt(description, header, event, signedTime),
    payload: event,
    unknownSchemaVersion: parkReason !== undefined,
  };
  if (parkReason !== undefined) read.parkReason = parkReason;
  return read;
}

/** Longest version value a park reason quotes: the reason is stored in a bounded column. */
const SHOWN_VERSION_MAX = 64;
const PLAIN_VERSION = /^[\w.:+-]+$/;

/**
 * Why an event is parked, when its schema version is not one this code knows: the rule (the field
 * and the versions known) and the value it met. Undefined when the version is known or none is
 * described. Worded only on the way to parking, so an event that is applied pays for none of it.
 */
function unknownVersionReason(description: SenderDescription, payload: ExactJson): string | undefined {
  const version = description.schemaVersion;
  if (version === undefined) return undefined;
  const value = valueAt(payload, version.path);
  const text = textOf(value);
  if (text !== null && version.known.has(text)) return undefined;
  const field = version.path.join('.');
  const known = `(known: ${[...version.known].join(', ')})`;
  if (text !== null) {
    const cut = text.length > SHOWN_VERSION_MAX ? `${text.slice(0, SHOWN_VERSION_MAX)}…` : text;
    // As it is when it reads as a version; else quoted, so that spaces or controls cannot blur the rule.
    return `unknown ${field} ${PLAIN_VERSION.test(cut) ? cut : JSON.stringify(cut)} ${known}`;
  }
  return value === undefined ? `no ${field} ${known}` : `${field} is not a version string ${known}`;
}

/** Why a stored payload would be parked now (parkReasonOf in Sender); undefined when it would not. */
function parkReasonOf(compiled: Compiled, payload: ExactJson): string | undefined {
  const { description } = compiled;
  if (description.schemaVersion === undefined) return undefined;
  const unknown = unknownVersionReason(description, payload);
  if (unknown !== undefined) return unknown;
  return compiled.schema.safeParse(payload).success
    ? undefined
    : `the payload no longer matches the ${description.name} schema of its version`;
}

/** The sender's protocol message in an authentic payload, answered with what its description says. */
function protocolReply(
  description: SenderDescription,
  payload: ExactJson,
  keys: readonly VerifyKey[],
): ProtocolReply | undefined | Promise<ProtocolReply | undefined> {
  return description.answer?.(payload, {
    hmacHex: async (text) => {
      const key = keys.find((candidate) => candidate.algorithm.name === 'HMAC');
      // Stryker disable next-line StringLiteral: Zoom's is the one answer that signs, and Zoom is enabled by its secrets only, so an HMAC key is always there
      if (key === undefined) throw new Error(`${description.name}: no secret to answer with`);
      return encodeHex(await signHmac(key, utf8(text)));
    },
  });
}

/** What the signature of an authentic delivery covered, for the content-digest rule. */
function coverageOf(description: SenderDescription, authentication: { timestamp: string | null; idSigned: boolean }) {
  const from = description.timestamp?.from;
  const coverage: SignedCoverage = {
    idInHeader: 'header' in description.id,
    idSigned: authentication.idSigned,
    // A time inside the body was checked once the body was read: signed, as the body is.
    timeSigned: authentication.timestamp !== null || (from !== undefined && 'path' in from),
  };
  return coverage;
}

async function verify(
  compiled: Compiled,
  delivery: Delivery,
  keys: readonly VerifyKey[],
  time: VerificationTime,
): Promise<Verification> {
  const headers = headersOf(compiled.description, delivery.headers);
  const authentication = await authenticate(compiled, { delivery, header: headers.header, keys, time });
  if ('failure' in authentication) return { outcome: 'unauthorized', reason: authentication.failure };
  const fingerprint = fingerprintOf(compiled, authentication.signature);
  // A copy of a delivery answered in full is answered before its body is read again: a sender that
  // signs no time leaves a captured delivery valid forever, and parsing, cutting and hashing a
  // 1,000-event batch at each copy spent 60-70 ms of the event loop
  // (docs/decisions/0033-answered-deliveries-remembered.md).
  if (fingerprint !== undefined && time.answered?.(fingerprint) === true) return { outcome: 'repeated' };
  const read = await readDelivery(compiled, delivery, keys, time, headers, authentication);
  return fingerprint !== undefined && (read.outcome === 'verified' || read.outcome === 'verified_batch')
    ? { ...read, fingerprint }
    : read;
}

/**
 * What names one delivery: the sender and the signature that verified it. An HMAC is a digest of the
 * signed content, and a public-key signature is the captured delivery's own bytes, so a copy of the
 * delivery has the same fingerprint and one changed byte of the signed content fails verification
 * first. None where nothing signs the content (a shared token), and none where the signed time is in
 * the body: that is checked only once the body is parsed, and a stale copy must stay a 401.
 */
function fingerprintOf(compiled: Compiled, signature: Signature | undefined): string | undefined {
  const from = compiled.description.timestamp?.from;
  if (signature === undefined || (from !== undefined && 'path' in from)) return undefined;
  return `${compiled.description.name} ${signature.algorithm} ${encodeHex(signature.bytes)}`;
}

/** An authentic delivery's body: its events, a protocol answer, or what is wrong with it. */
async function readDelivery(
  compiled: Compiled,
  delivery: Delivery,
  keys: readonly VerifyKey[],
  time: VerificationTime,
  headers: { header: Header; prefix: string },
  authentication: { timestamp: string | null; idSigned: boolean },
): Promise<Verification> {
  const { description, schema } = compiled;
  const bodyText = payloadText(delivery.body);
  const payload = bodyText === undefined ? undefined : parseJsonText(bodyText);
  if (bodyText === undefined || payload === undefined) return { outcome: 'invalid_payload' };
  const checked = schema.safeParse(payload);
  // A batch's schema may refuse some of its events and still take the rest (refusedEvents).
  const refusedAt = checked.success ? undefined : refusedEvents(description, checked.error);
  if (!checked.success && refusedAt === undefined) {
    return { outcome: 'invalid_payload', field: refusedField(checked.error) };
  }
  const timestamp = description.timestamp;
  if (timestamp !== undefined && 'path' in timestamp.from) {
    // A time inside the body is read only now, but refused the same way as a header's.
    if (!isFresh(textOf(valueAt(payload, timestamp.from.path)), timestamp.format, time)) {
      return { outcome: 'unauthorized', reason: 'timestamp_outside_tolerance' };
    }
  }
  const reply = await protocolReply(description, payload, keys);
  if (reply !== undefined) return { outcome: 'respond', ...reply };

  const secondKey = keysByContentDigest(coverageOf(description, authentication));
  if (description.events !== undefined) {
    const read = (event: ExactJson) => eventOf(description, event, headers, authentication.timestamp);
    return batchOf(description.events.path, bodyText, payload, read, secondKey, refusedAt);
  }
  // Hashed only where it keys the event, or is the id itself.
  // Stryker disable next-line ConditionalExpression: hashing every body only costs time: the digest keys the event only where secondKey says so (below)
  const bodyDigest = secondKey || 'bodyDigest' in description.id ? await sha256Hex(delivery.body) : undefined;
  const read = eventOf(description, payload, headers, authentication.timestamp, bodyDigest);
  if ('field' in read) return { outcome: 'invalid_payload', field: read.field };
  return {
    outcome: 'verified',
    // Stryker disable next-line ConditionalExpression: the body is hashed whenever secondKey is true, so `bodyDigest !== undefined` is there for the types (a digest where secondKey is false is pinned by the webflow test)
    event: { ...read, ...(secondKey && bodyDigest !== undefined ? { contentDigest: bodyDigest } : {}) },
  };
}

/** The provider that runs `description`. Problems with it surface when its keys are imported. */
export function describedSender(description: SenderDescription): Sender {
  const compiled = compile(description);
  return {
    name: description.name,
    credentials: credentialsOf(compiled),
    importKeys: (secrets, publicKeys) => importKeys(compiled, secrets, publicKeys),
    verify: (delivery, keys, time) => verify(compiled, delivery, keys, time),
    parkReasonOf: (payload) => parkReasonOf(compiled, payload),
  };
}

/**
 * The events a batch's schema refused, each with the field it names, when every issue lies inside
 * one event of the batch; undefined when any is about the delivery as a whole (its envelope, or an
 * events array that is none), or the sender sends no batch. Read only from a failed parse: the
 * all-good path never comes here.
 */
function refusedEvents(description: SenderDescription, error: z.ZodError): ReadonlyMap<number, string> | undefined {
  const path = description.events?.path;
  if (path === undefined) return undefined;
  const byEvent = new Map<number, z.core.$ZodIssue[]>();
  for (const issue of error.issues) {
    const at = issue.path[path.length];
    const inside = issue.path.length > path.length && path.every((name, n) => issue.path[n] === name);
    if (!inside || typeof at !== 'number') return undefined;
    const own = byEvent.get(at);
    if (own === undefined) byEvent.set(at, [issue]);
    else own.push(issue);
  }
  const refused = new Map<number, string>();
  // Stryker disable next-line ArrayDeclaration: each issue's path reaches its event's position, so the field is never undefined
  for (const [at, issues] of byEvent) refused.set(at, refusedField({ issues }) ?? [...path, at].join('.'));
  return refused;
}

/**
 * Every event of a batch, each read as `read` reads one, with its own exact text from the body. An
 * unusable event (refused by the schema, `refusedAt`, or without an id or a type) is set aside as
 * refused, and the others go on without it; when none is usable, the delivery is refused. An empty
 * batch (LINE's check of a new URL) is answered and stores nothing.
 */
async function batchOf(
  path: readonly string[],
  text: string,
  payload: ExactJson,
  read: (event: ExactJson) => AuthenticatedEvent | { field: string | undefined },
  secondKey: boolean,
  refusedAt: ReadonlyMap<number, string> | undefined,
): Promise<Verification> {
  const items = valueAt(payload, path);
  const texts = arrayElementTexts(text, path);
  // Stryker disable next-line ConditionalExpression,LogicalOperator: the same body read twice: texts is undefined exactly where items is no array, and as long as it otherwise
  if (!Array.isArray(items) || texts === undefined || texts.length !== items.length) {
    return { outcome: 'invalid_payload', ...(path.length > 0 ? { field: path.join('.') } : {}) };
  }
  if (items.length === 0) return { outcome: 'respond', body: '{"received":true}', reason: 'empty_batch' };
  const events: BatchedEvent[] = [];
  let refused: RefusedEvent[] | undefined;
  for (const [index, item] of items.entries()) {
    const schemaField = refusedAt?.get(index);
    const event = schemaField === undefined ? read(item) : { field: schemaField };
    const eventText = texts[index];
    // Stryker disable next-line ConditionalExpression: texts has an entry for every item (checked above), so eventText is always there
    if ('field' in event || eventText === undefined) {
      const field = 'field' in event ? event.field : undefined;
      refused ??= [];
      refused.push({
        field:
          schemaField ??
          // Stryker disable next-line ConditionalExpression,ArrayDeclaration: a batch reads its id and type at paths (descriptionProblems), and a path is always named, so field is never undefined here
          [...path, index, ...(field === undefined ? [] : [field])].join('.'),
      });
      continue;
    }
    // A sender that signs no time leaves a captured batch valid forever, and only stored keys keep
    // it from being applied again: each event's row carries the digest of its signed id, which keys
    // nothing the id does not, but keeps the row past retention as every digest-backed row is kept.
    const contentDigest = secondKey ? await sha256Hex(utf8(event.eventId)) : undefined;
    // Stryker disable next-line ConditionalExpression: an undefined digest is stored as none, as an absent one
    events.push({ ...event, payloadText: eventText, ...(contentDigest === undefined ? {} : { contentDigest }) });
  }
  const [firstRefused] = refused ?? [];
  if (events.length === 0) {
    return { outcome: 'invalid_payload', ...(firstRefused === undefined ? {} : { field: firstRefused.field }) };
  }
  return { outcome: 'verified_batch', events, ...(refused === undefined ? {} : { refused }) };
}
