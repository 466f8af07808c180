// The CLI's human output: plain aligned columns, and text that cannot act on the terminal. Event ids,
// types and payloads are chosen by senders, so a signed id holding an escape sequence or a newline
// could rewrite the screen or forge rows; human output shows such characters as C-style escapes
// (git's quoting of unusual path names), while `--json` keeps every value exact.
import { exactJsonText } from '../lib/json-out.ts';

/**
 * Characters that act on a terminal or reorder what it shows: C0 and C1 controls and DEL, line and
 * paragraph separators, bidirectional controls; and lone surrogates (not text at all).
 */
const UNSAFE = /[\p{Cc}\u2028\u2029\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]|\p{Cs}/gu;
const NEEDS_QUOTES = /[\p{Cc}\u2028\u2029\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"\\]|\p{Cs}/u;
const NAMED: Readonly<Record<string, string>> = { '\t': '\\t', '\n': '\\n', '\r': '\\r', '"': '\\"', '\\': '\\\\' };

function escapeOne(char: string): string {
  const named = NAMED[char];
  if (named !== undefined) return named;
  const code = char.charCodeAt(0);
  return code < 0x100 ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
}

/**
 * A value as human output shows it: as it is when it is plain, else in double quotes with C-style
 * escapes (`"evt\x1b[31m"`), so no value can pass for another or act on the terminal.
 */
export function terminalText(value: string): string {
  if (!NEEDS_QUOTES.test(value)) return value;
  return `"${value.replace(/["\\]/g, escapeOne).replace(UNSAFE, escapeOne)}"`;
}

/** A message of several lines whose unsafe characters are escaped in place (usage errors quoting arguments). */
export function terminalLines(text: string): string {
  return text
    .split('\n')
    .map((line) => line.replace(UNSAFE, escapeOne))
    .join('\n');
}

/**
 * JSON for a human to read, indented, every number as stored (lib/json-out.ts). JSON.stringify leaves
 * DEL, C1 and bidi controls raw in strings; here they are \u escapes. It escapes every C0 control in
 * a string itself, so a raw line break is the indentation's own and stays one.
 */
export function terminalJson(value: unknown, indent = 2): string {
  return exactJsonText(value, indent).replace(UNSAFE, (char) =>
    char === '\n' ? char : `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

/** Aligned columns, every cell through terminalText. */
export function formatTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const cells = rows.map((row) => row.map(terminalText));
  const widths = header.map((title, column) =>
    Math.max(title.length, ...cells.map((row) => (row[column] ?? '').length)),
  );
  const line = (values: readonly string[]) =>
    values
      .map((cell, column) => cell.padEnd(widths[column] ?? 0))
      .join('  ')
      .trimEnd();
  return [line(header), ...cells.map(line)].join('\n');
}
