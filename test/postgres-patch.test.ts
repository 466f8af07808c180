// What patches/postgres+3.4.9.patch buys (docs/decisions/0006-postgres-js-write-after-close-patch.md):
// a query on a connection whose backend is gone is rejected with CONNECTION_CLOSED, never thrown from
// postgres.js's deferred write as an uncaught TypeError that ends the process (porsager/postgres#1208,
// its own reproduction). Unpatched 3.4.9 fails this file with that uncaught error. A postgres.js
// release that passes it, and test/chaos.test.ts's "connections cut", without the patch lets it go.
import postgres from 'postgres';
import { afterAll, expect, it } from 'vitest';
import { useTestDatabase } from './helpers/database.ts';
import { deferred } from './helpers/facts.ts';

const { url } = await useTestDatabase();
/** Resolved when postgres.js has seen a connection close: the terminated backend's socket ended. */
const closed = deferred();
const client = postgres(url, { max: 2, fetch_types: false, onnotice: () => {}, onclose: () => closed.resolve() });
afterAll(() => client.end({ timeout: 1 }));

it('rejects queries on a reserved connection whose backend was terminated, and the process lives on', async () => {
  // reserve() waits for an open connection: open one first.
  await client`select 1`;
  const reserved = await client.reserve();
  const [row] = await reserved<{ pid: number }[]>`select pg_backend_pid() as pid`;
  await client`select pg_terminate_backend(${row?.pid ?? 0})`;
  await closed.promise;

  const codeOf = (query: Promise<unknown>) =>
    query.then(
      () => 'answered',
      (error: unknown) => (error as { code?: string }).code,
    );
  expect(await codeOf(reserved`select 1`)).toBe('CONNECTION_CLOSED');
  // Unpatched, this one throws from setImmediate: a TypeError no caller can catch.
  expect(await codeOf(reserved`select 1`)).toBe('CONNECTION_CLOSED');
  reserved.release();
  expect(await client`select 1 as one`).toEqual([{ one: 1 }]);
});
