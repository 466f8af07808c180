// The shared delivery suite (test/shared/delivery-contract.ts) inside workerd: each request goes to
// the Worker entry (src/entry/worker.ts), which reaches this file's own database through Hyperdrive.
import { env, exports } from 'cloudflare:workers';
import postgres from 'postgres';
import { afterAll } from 'vitest';
import { describeDeliveryContract } from '../shared/delivery-contract.ts';

// Facts are read through the same binding the Worker uses, so they come from the same database.
const sql = postgres(env.HYPERDRIVE.connectionString, { max: 2, fetch_types: false, onnotice: () => {} });
afterAll(() => sql.end());

describeDeliveryContract('workerd through Hyperdrive', () => ({
  request: (path, init) => exports.default.fetch(new Request(new URL(path, 'https://inbox.test'), init)),
  sql,
}));
