// Turning signed bytes into a JSON value we are willing to store: strict UTF-8, JSON, bounded
// nesting, no strings PostgreSQL's jsonb would refuse (a NUL, a lone surrogate) and no numbers its
// numeric type would refuse, so a sender's mistake is a 400 and never a database error. Numbers stay
// exact: the received text is what is stored (jsonb keeps numbers as numeric), and the value handed
// to validation and handlers holds every number a JavaScript number cannot as a bigint (integers) or
// a LosslessNumber (the rest), rebuilt from the number's own text (JSON.parse hands a reviver each
// value's source text), or read by lossless-json where a token may be beyond the bound
// (docs/decisions/0040-exact-numbers-read-by-json-parse.md).
import { isSafeNumber, LosslessNumber, parse as parseLossless, splitNumber } from 'lossless-json';
import { isStorableText } from './text.ts';

export { LosslessNumber };

export const MAX_JSON_DEPTH = 32;

/**
 * Digits a number may have before and after its decimal point once its exponent is applied. jsonb
 * stores numbers as numeric, which refuses more than 131072 and 16383 and prints every digit: `1e400`
 * is 401 characters when read back, so the bound also bounds what one short token can grow into.
 */
export const MAX_NUMBER_DIGITS = 1000;

// ignoreBOM: false is the default (a leading BOM is dropped), spelled out because workerd's typings
// require the field.
const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

/** Plain JSON, as this service writes it itself (outbox messages). */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** JSON as a sender wrote it, every number exact: what payloads are parsed into. */
export type ExactJson =
  | null
  | boolean
  | number
  | bigint
  | LosslessNumber
  | string
  | ExactJson[]
  | { [key: string]: ExactJson };

/** The received text, strictly decoded (a leading BOM dropped): what is stored as the payload. */
export function payloadText(body: Uint8Array): string | undefined {
  try {
    return strictUtf8.decode(body);
  } catch {
    return undefined;
  }
}

/** The parsed document, or undefined when the bytes are not JSON we accept. */
export function parseJsonPayload(body: Uint8Array): ExactJson | undefined {
  const text = payloadText(body);
  return text === undefined ? undefined : parseJsonText(text);
}

/**
 * A number token JSON.parse may round: one with an exponent, or of 16 digits or more (a double holds
 * every decimal of 15 significant digits). Strings that merely look like one only cost the exact
 * parse below; a number that matches neither alternative is exact as a JavaScript number.
 */
const INEXACT_NUMBER = /(?:^|[:,[])\s*-?(?:[0-9.]{16}|[0-9.]+[eE])/;

/**
 * A token that may be beyond MAX_NUMBER_DIGITS: an exponent of 100 or more, or a run of 900 digits.
 * Without one, no token can be (899 digits moved by at most 99 places). Text inside strings may match
 * too; that only sends the document to the slower reader.
 */
const LONG_NUMBER = /[eE][+-]?0*[1-9][0-9]{2}|[0-9.]{900}/;

/** What JSON.parse gives a reviver beside each value: a primitive's text as it stood in the document. */
interface ReviverContext {
  source?: string;
}

/**
 * Every number rebuilt from its own text. JSON.parse hands a reviver each primitive's source text
 * (ES2025; Node 22 and later, workerd), so the document is parsed natively, in well under half the
 * time lossless-json's parser took (docs/benchmarks.md, "Signature verification"). A runtime that does
 * not hand it over gets a refusal, never a rounded number.
 */
function exactNumbers(_key: string, value: unknown, context?: ReviverContext): unknown {
  if (typeof value !== 'number') return value;
  if (context?.source === undefined) throw new TypeError('JSON.parse gave no source text');
  return exactNumber(context.source);
}

/**
 * `text` (received, or jsonb read back as text) as a document, or undefined when it is not one we
 * accept. JSON.parse first: it is fast and iterative, so syntax and nesting are checked before the
 * exact parse runs, which runs only when some number may need it. A repeated key keeps its last value,
 * as JSON.parse and jsonb both do. The reviver sees only that last value, so a document where some token
 * may be beyond the bound is read by lossless-json instead, which reads every token, a repeated key's
 * earlier one included: jsonb parses that one too, and one beyond its numeric type would otherwise be a
 * database error rather than the sender's 400.
 */
export function parseJsonText(text: string): ExactJson | undefined {
  let value: JsonValue;
  try {
    value = JSON.parse(text) as JsonValue;
  } catch {
    return undefined;
  }
  if (!isStorable(value)) return undefined;
  if (!INEXACT_NUMBER.test(text)) return value;
  try {
    if (!LONG_NUMBER.test(text)) return JSON.parse(text, exactNumbers) as ExactJson;
    return parseLossless(text, null, {
      parseNumber: exactNumber,
      onDuplicateKey: (info) => info.newValue,
    }) as ExactJson;
  } catch {
    return undefined;
  }
}

/** A number token as the value handlers see; throws (refused) beyond MAX_NUMBER_DIGITS. */
function exactNumber(token: string): number | bigint | LosslessNumber {
  const { sign, digits, exponent } = splitNumber(token);
  const integerDigits = exponent + 1;
  const fractionDigits = digits.length - 1 - exponent;
  if (integerDigits > MAX_NUMBER_DIGITS || fractionDigits > MAX_NUMBER_DIGITS) throw new RangeError('number bound');
  if (isSafeNumber(token)) return Number(token);
  // Integer-valued: a bigint, whichever way it was written (`1e400` is read back from jsonb as
  // 401 digits, and must be the same value on a replay as on arrival).
  if (fractionDigits <= 0) return BigInt(`${sign}${digits}${'0'.repeat(-fractionDigits)}`);
  return new LosslessNumber(token);
}

/** Walks the document without recursion, so a hostile nesting cannot overflow the stack. */
function isStorable(root: JsonValue): boolean {
  const stack: Array<{ value: JsonValue; depth: number }> = [{ value: root, depth: 0 }];
  for (let item = stack.pop(); item !== undefined; item = stack.pop()) {
    const { value, depth } = item;
    if (typeof value === 'string') {
      if (!isStorableText(value)) return false;
    } else if (typeof value === 'object' && value !== null) {
      if (depth >= MAX_JSON_DEPTH) return false;
      if (Array.isArray(value)) {
        for (const element of value) stack.push({ value: element, depth: depth + 1 });
      } else {
        for (const [key, element] of Object.entries(value)) {
          if (!isStorableText(key)) return false;
          stack.push({ value: element, depth: depth + 1 });
        }
      }
    }
  }
  return true;
}

/** A slice of a JSON text: [start, end). */
interface Span {
  start: number;
  end: number;
}

const isJsonSpace = (code: number) => code === 0x20 || code === 0x09 || code === 0x0a || code === 0x0d;

function trimmed(text: string, start: number, end: number): Span {
  let from = start;
  let to = end;
  while (from < to && isJsonSpace(text.charCodeAt(from))) from += 1;
  while (to > from && isJsonSpace(text.charCodeAt(to - 1))) to -= 1;
  return { start: from, end: to };
}

/**
 * The direct members of the container `span` holds in `text`, which must be valid JSON: each value's
 * span, with its member name for an object (null for an array's elements). One pass, no recursion:
 * brackets inside strings are skipped, and only commas and colons at the container's own level split.
 */
function members(text: string, span: Span): Array<{ key: string | null; value: Span }> {
  const isObject = text.charCodeAt(span.start) === 0x7b;
  const found: Array<{ key: string | null; value: Span }> = [];
  let depth = 0;
  let inString = false;
  let partStart = span.start + 1;
  let colon = -1;
  const close = (at: number) => {
    const whole = trimmed(text, partStart, at);
    if (whole.start === whole.end) return;
    if (!isObject) found.push({ key: null, value: whole });
    else found.push({ key: JSON.parse(text.slice(partStart, colon)) as string, value: trimmed(text, colon + 1, at) });
  };
  for (let at = span.start + 1; at < span.end - 1; at += 1) {
    const code = text.charCodeAt(at);
    if (inString) {
      if (code === 0x5c) at += 1;
      else if (code === 0x22) inString = false;
    } else if (code === 0x22) inString = true;
    else if (code === 0x7b || code === 0x5b) depth += 1;
    else if (code === 0x7d || code === 0x5d) depth -= 1;
    else if (depth === 0 && code === 0x3a && colon < partStart) colon = at;
    else if (depth === 0 && code === 0x2c) {
      close(at);
      partStart = at + 1;
    }
  }
  close(span.end - 1);
  return found;
}

/**
 * The exact text of each element of the array at `path` (object member names; empty: the document
 * itself) in the JSON `text`, as the sender wrote it: what an event of a batch is stored as, so its
 * numbers stay exact without re-serialising anything. A repeated member name means its last
 * occurrence, as JSON.parse and jsonb read it. Undefined when `text` has no array there.
 */
export function arrayElementTexts(text: string, path: readonly string[]): string[] | undefined {
  let span: Span | undefined = trimmed(text, 0, text.length);
  for (const name of path) {
    if (text.charCodeAt(span.start) !== 0x7b) return undefined;
    span = members(text, span).findLast((member) => member.key === name)?.value;
    if (span === undefined) return undefined;
  }
  if (text.charCodeAt(span.start) !== 0x5b) return undefined;
  return members(text, span).map((member) => text.slice(member.value.start, member.value.end));
}
