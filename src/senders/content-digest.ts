// The content-digest second key, the subtlest rule of the inbox: when the SHA-256 of the signed
// bytes must key an event beside its id, so that a captured delivery sent again is a duplicate
// and not a new event. The intake stores the digest (`content_digest`) under a unique index.
import { type Bytes, encodeHex } from './encoding.ts';

/** What the signature of one delivery covered, as its authentication found it. */
export interface SignedCoverage {
  /** The event id is read from a header, not from the signed body (GitHub's `x-github-delivery`). */
  idInHeader: boolean;
  /** The signature covered that header (`{id}` in the signed content: Standard Webhooks). */
  idSigned: boolean;
  /** A time was signed: in a header or entry the signature covered, or inside the signed body. */
  timeSigned: boolean;
}

/**
 * Whether the digest of the signed bytes keys the event beside its id. It must wherever a captured
 * body could otherwise come back as new: under an id the signature does not cover (any id will do,
 * so the id keys nothing), or at any age where no time is signed (the tolerance refuses nothing, and
 * the inbox keeps digest-keyed rows past retention for that reason). An id inside the signed body,
 * or a signed header id, with a signed time, needs none: the id is as authentic as the body, and a
 * replay outside the tolerance is refused.
 */
export function keysByContentDigest(coverage: SignedCoverage): boolean {
  return (coverage.idInHeader && !coverage.idSigned) || !coverage.timeSigned;
}

/** Hex SHA-256 of exact bytes: the content digest, and the id of senders that send none. */
export async function sha256Hex(data: Bytes): Promise<string> {
  return encodeHex(new Uint8Array(await crypto.subtle.digest('SHA-256', data)));
}
