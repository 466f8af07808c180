// Text the database can hold exactly, and text from elsewhere (an error's message, a sender's header)
// made safe to store and log. PostgreSQL's `text` refuses U+0000 (the statement fails, which a request
// would answer 503), and a string that is not well-formed UTF-16 (a lone surrogate) is stored as
// U+FFFD, so it would name or record something else than what was sent.

/** True when `value` can be stored and compared as it is: no NUL, no lone surrogate. */
export function isStorableText(value: string): boolean {
  return !value.includes('\u0000') && value.isWellFormed();
}

/** Control characters, line separators, lone surrogates, and the backslash that starts an escape. */
const UNPRINTABLE = /[\p{Cc}\p{Cs}\u2028\u2029\\]/u;
const SHORT_ESCAPES: Readonly<Record<string, string>> = { '\n': '\\n', '\r': '\\r', '\t': '\\t', '\\': '\\\\' };

function escaped(char: string): string {
  if (!UNPRINTABLE.test(char)) return char;
  return SHORT_ESCAPES[char] ?? `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`;
}

/**
 * `text` as one storable line of at most `max` UTF-16 units (so at most `max` characters for a
 * `varchar(max)`): control characters and lone surrogates escaped as in JSON (`\n`, `\u001b`), the
 * backslash doubled so an escape is never ambiguous, and `…` at the end when it was cut, never
 * inside an escape or a surrogate pair.
 */
export function printableLine(text: string, max: number): string {
  const pieces: string[] = [];
  let length = 0;
  for (const char of text) {
    const piece = escaped(char);
    if (length + piece.length > max) {
      // Whole pieces only, so the cut never splits an escape or a surrogate pair.
      while (length + 1 > max) {
        const last = pieces.pop();
        if (last === undefined) break;
        length -= last.length;
      }
      return `${pieces.join('')}…`;
    }
    pieces.push(piece);
    length += piece.length;
  }
  return pieces.join('');
}
