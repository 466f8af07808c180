// The database handle: postgres.js underneath Drizzle, one driver for Node, Workers (Hyperdrive)
// and the embedded server. Built by the entry points and passed in; no module-level connection.
import { drizzle } from 'drizzle-orm/postgres-js';
import postgres from 'postgres';
import * as schema from './schema.ts';

export type Database = ReturnType<typeof createDrizzle>;
export type Transaction = Parameters<Parameters<Database['transaction']>[0]>[0];
/** A database or a transaction: what domain functions accept. */
export type Executor = Database | Transaction;

/**
 * What a route finds in its Hono context: `c.get('db')`, the database of the request it serves. The app
 * is built once per process or Workers isolate; the database is bound per request (src/app.ts).
 */
export type DatabaseEnv = { Bindings: RequestBindings; Variables: { db: Database } };

/** What `app.fetch(request, bindings)` may carry: a database opened for that request alone (Workers). */
export interface RequestBindings {
  db?: Database;
}

export interface DatabaseOptions {
  url: string;
  maxConnections: number;
  /** Server-side bound on one statement, and on a transaction left idle. */
  statementTimeoutMs: number;
  /**
   * postgres.js's array-type lookup on every new connection. Off by default: nothing here binds or
   * reads arrays of custom types, it costs a round trip per connection (every request on Workers),
   * and in 3.4.9 its promise is left unhandled when the server ends the connection during the lookup
   * (ReadyForQuery `return fetchArrayTypes()` in src/connection.js), which crashes a Node process on a
   * database restart (seen in test/chaos.test.ts "connections cut").
   */
  fetchTypes?: boolean;
  /** Named prepared statements (postgres.js's default); poolers that cannot hold them need false. */
  prepare?: boolean;
}

export interface DatabaseHandle {
  db: Database;
  sql: postgres.Sql;
  close(): Promise<void>;
}

function createDrizzle(sql: postgres.Sql) {
  return drizzle({ client: sql, schema, casing: 'snake_case' });
}

export function connectDatabase(options: DatabaseOptions): DatabaseHandle {
  const sql = postgres(options.url, {
    max: options.maxConnections,
    connect_timeout: Math.max(1, Math.ceil(options.statementTimeoutMs / 1000)),
    fetch_types: options.fetchTypes ?? false,
    prepare: options.prepare ?? true,
    onnotice: () => {},
    connection: {
      application_name: 'webhook-inbox',
      statement_timeout: options.statementTimeoutMs,
      idle_in_transaction_session_timeout: options.statementTimeoutMs,
      // Every statement here reads or writes a few rows through an index. A plan whose estimate
      // looks large gets compiled (JIT) and handed to parallel workers, each costing more than the
      // work: the overview's backlog did 0.3 ms of it in 120 ms of starting workers, 250 ms with JIT.
      jit: 'off',
      max_parallel_workers_per_gather: 0,
    },
  });
  return { db: createDrizzle(sql), sql, close: () => sql.end({ timeout: 5 }) };
}
