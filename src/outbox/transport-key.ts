// The deduplication key as it travels where only a restricted alphabet fits: the HTTP
// `Idempotency-Key` header, NATS `Nats-Msg-Id`, RabbitMQ `message_id` (an AMQP short string, under
// 256 bytes) and the Redis dedup marker's name. The key holds a sender's event id, which may carry
// CR/LF, control characters, any Unicode, or run to hundreds of bytes; the JSON body always keeps the
// exact key, and these places get one deterministic form, documented for consumers in
// docs/outbox-brokers.md:
//
//   the key itself            when it is 1..200 printable ASCII characters (0x21-0x7E, no space) and
//                             does not start with `sha256:`;
//   `sha256:` + base64url     otherwise: the unpadded base64url SHA-256 of the key's UTF-8 bytes
//                             (50 characters in all).
//
// A key that starts with `sha256:` is always hashed, so a sender cannot choose an id whose key reads
// as another key's digest: the two forms never meet. Every key has a form, so no message is ever
// refused for its key. Web Crypto only (Node and Workers alike); hashing is async, so the relay works
// the form out once per claimed message (message-rows.ts) and every publisher reads it from there.

/** What the digest form starts with; a key that starts with it is hashed too. */
export const TRANSPORT_KEY_DIGEST_PREFIX = 'sha256:';

/** Longest key carried as it is: well under AMQP's 255-byte short string, and one header line. */
export const TRANSPORT_KEY_MAX_CHARS = 200;

const CARRIED_AS_IS = new RegExp(`^[\\x21-\\x7e]{1,${TRANSPORT_KEY_MAX_CHARS}}$`);

/** True when `key` travels unchanged (the common case: `acme:evt_…:subscription.changed`). */
export function carriedAsIs(key: string): boolean {
  return CARRIED_AS_IS.test(key) && !key.startsWith(TRANSPORT_KEY_DIGEST_PREFIX);
}

const encoder = new TextEncoder();

function base64url(bytes: Uint8Array): string {
  let binary = '';
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/** The key's transport-safe form (see above): the same for the same key, on every try and every relay. */
export async function transportKey(key: string): Promise<string> {
  if (carriedAsIs(key)) return key;
  const digest = await crypto.subtle.digest('SHA-256', encoder.encode(key));
  return `${TRANSPORT_KEY_DIGEST_PREFIX}${base64url(new Uint8Array(digest))}`;
}
