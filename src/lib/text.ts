// Text the database can hold exactly, checked before any statement sees it. PostgreSQL's `text`
// refuses U+0000 (the statement fails, which a request would answer 503), and a string that is not
// well-formed UTF-16 (a lone surrogate) is stored as U+FFFD, so it would name or record something
// else than what was sent.

/** True when `value` can be stored and compared as it is: no NUL, no lone surrogate. */
export function isStorableText(value: string): boolean {
  return !value.includes('\u0000') && value.isWellFormed();
}
