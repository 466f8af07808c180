// Credentials taken out of text that came from elsewhere before it is kept: a refused delivery's
// header values (inbox/rejections.ts) and the first bytes of an outbox target's answer
// (outbox/publishers/publisher.ts). Redaction goes by name (a query parameter's, a JSON field's) or by
// scheme (`Bearer …`), never by guessing at values: a redacted ordinary value costs little, a kept
// secret is a leak.

export const REDACTED = '[redacted]';

/**
 * The words of a parameter's or field's name that mark its value as a credential, each also at the
 * end of a longer word (`apikey`, `accesstoken`, `clientsecret`, `oauth`) and plural. Matched per word,
 * not anywhere in the name: query strings and answers carry ordinary names (`author`, `design`,
 * `keyword`) whose values must stay readable.
 */
const CREDENTIAL_WORD =
  /(token|key|secret|signature|sig|password|passwd|pwd|auth|authorization|credential|session|sessionid|jwt|hmac|cookie)s?$/;

/** True when a name (`access_token`, `x-amz-signature`, `client.secret`, `apiKey`) names a credential. */
export function isCredentialName(rawName: string): boolean {
  let name = rawName;
  try {
    name = decodeURIComponent(rawName);
  } catch {
    // Not valid percent-encoding: judged as sent.
  }
  // Words split at anything but a letter or digit, and where camelCase starts a word.
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .some((word) => CREDENTIAL_WORD.test(word));
}

/**
 * A `name=value` pair of a query string or fragment, wherever it stands in a text: at its start (a
 * value that is a query string), after `?` or `#` (a URL's query, an OAuth fragment), after `&` or `;`
 * (the next pair) or after whitespace; the value runs to the next separator or whitespace.
 */
const QUERY_PARAMETER = /(^|[?#&;\s])([^=?#&;\s]+)=([^#&;\s]*)/g;

/**
 * `value` with the value of every credential-like query parameter redacted and the rest as sent
 * (`https://host/cb?code=1&access_token=[redacted]#state=2`). An ordinary parameter's value is looked
 * into too: it may itself be a URL (`?next=https://host/?token=…`).
 */
export function withQueryCredentialsRedacted(value: string): string {
  return value.replace(QUERY_PARAMETER, (_pair, separator: string, name: string, parameterValue: string) =>
    isCredentialName(name)
      ? `${separator}${name}=${REDACTED}`
      : `${separator}${name}=${withQueryCredentialsRedacted(parameterValue)}`,
  );
}

/**
 * A JSON (or JSON-like) string field: `"name": "value"`, the value running to its closing quote or to
 * the end of the text (an answer cut in the middle of a value).
 */
const JSON_STRING_FIELD = /("([^"\\]{1,100})"\s*:\s*")((?:[^"\\]|\\.)*)("|$)/g;
/** An HTTP authentication scheme and its credentials, as an answer may echo them. */
const AUTH_SCHEME = /\b(Bearer|Basic|Digest|Token)(\s+)[A-Za-z0-9\-._~+/=]+/gi;

/**
 * Free text (an answer's body) with the credentials it shows redacted: the values of credential-like
 * JSON string fields and query parameters, and what follows `Bearer`, `Basic`, `Digest` or `Token`.
 */
export function withCredentialsRedacted(text: string): string {
  return withQueryCredentialsRedacted(
    text
      .replace(JSON_STRING_FIELD, (field, opening: string, name: string, _value: string, closing: string) =>
        isCredentialName(name) ? `${opening}${REDACTED}${closing}` : field,
      )
      .replace(AUTH_SCHEME, (_match, scheme: string, space: string) => `${scheme}${space}${REDACTED}`),
  );
}
