// Bounding a transaction's statements by the time its caller has left, below the connection's own
// statement_timeout (which is the whole request deadline): a statement stuck on a lock then fails
// while there is still time to do something else.
import { sql } from 'drizzle-orm';
import type { Transaction } from './client.ts';
import { executePrepared } from './prepared.ts';

/**
 * Sets statement_timeout for the rest of the transaction (`set_config(…, true)` is `SET LOCAL`, and
 * unlike it takes a parameter, so the statement's text is the same on every call and stays prepared).
 * Not awaited before the next statement by callers that want it pipelined: on one connection
 * statements run in the order sent, so whatever is sent after it is bounded.
 */
export async function limitStatements(tx: Transaction, milliseconds: number): Promise<void> {
  await executePrepared(
    tx,
    sql`select set_config('statement_timeout', ${String(Math.max(1, Math.floor(milliseconds)))}, true)`,
  );
}
