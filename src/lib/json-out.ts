// JSON written back out to operators (the admin API, the CLI, the dashboard) with every number as it
// was stored. jsonb keeps a payload's numbers exact, but reading it through JSON.parse rounds any
// beyond 2^53 (Shopify's and Discord's ids) and any with more digits than a double holds; so stored
// documents are read as jsonb's text, parsed exactly (lib/json.ts), and written with lossless-json,
// which prints a bigint or a LosslessNumber as its digits where JSON.stringify would round or throw.
import { parse, stringify } from 'lossless-json';
import { type ExactJson, parseJsonText } from './json.ts';

/** jsonb's text of a stored document as a value that keeps every number; null (purged) stays null. */
export function storedJson(text: string | null): ExactJson | null {
  if (text === null) return null;
  // parseJsonText refuses what intake would (deeper than its bound, say): a stored row is shown anyway.
  return parseJsonText(text) ?? (parse(text) as ExactJson);
}

/**
 * `value` as JSON text, numbers held as bigint or LosslessNumber written digit for digit; everything
 * else as JSON.stringify writes it (strings escaped alike, `indent` alike).
 */
export function exactJsonText(value: unknown, indent?: number): string {
  return stringify(value, null, indent) ?? 'null';
}
