// An inbox event whose payload holds numbers a JavaScript number cannot: an id beyond 2^53 (as
// Shopify's and Discord's are), a decimal with more digits than a double keeps, and a string with a
// line break; stored from its text, as intake stores a sender's bytes. The operator surfaces must
// show these digits as they are stored.
import type postgres from 'postgres';
import { uniqueId } from './acme.ts';

/** The number tokens as jsonb prints them back (it keeps a numeric's digits and scale). */
export const EXACT_NUMBERS = ['12345678901234567891', '1.0000000000000000001', '-98765432109876543210.5'] as const;

export async function insertExactEvent(sql: postgres.Sql): Promise<{ eventId: string }> {
  const eventId = uniqueId('evt_exact');
  const [big, decimal, negative] = EXACT_NUMBERS;
  const text = `{"id": "${eventId}", "type": "order.paid", "data": {"order_id": ${big}, "rate": ${decimal},
    "refunds": [${negative}, ${big}], "note": "line one\\nline two"}}`;
  await sql`insert into webhook_events (provider, event_id, event_type, status, payload)
    values ('acme', ${eventId}, 'order.paid', 'failed', ${text}::text::jsonb)`;
  return { eventId };
}
