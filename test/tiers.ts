// Which test files run where (vitest.config.ts reads this). Three tiers:
// - `node`: the app, the CLI's program and the relays inside the test's own process, against real
//   PostgreSQL and brokers: the fast tier (`npx vitest run --project node`);
// - `process`: files whose header says `Needs a process:` and why (the service or the CLI as a real
//   process, a signal, a child vitest, a browser); slower, and what a busy machine slows most;
// - `workers`: the Worker entry inside workerd (test/worker/, a project of its own in the config).
// The second Node line runs only NODE_LINE_FILES: what does not start a process on that line nor use
// its HTTP server, sockets, Web Crypto or JSON.parse's source text behaves the same on every line.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The header marker a process-level file carries, followed by its reason. */
export const PROCESS_MARKER = 'Needs a process:';

/** How many header lines are searched for the marker. */
const HEADER_LINES = 12;

const TEST_FOLDER = 'test';

/** Every Node-side test file (test/worker/ is workerd's), as `test/<name>.test.ts`. */
export function nodeTestFiles(root = '.'): string[] {
  return readdirSync(join(root, TEST_FOLDER))
    .filter((name) => name.endsWith('.test.ts'))
    .sort()
    .map((name) => `${TEST_FOLDER}/${name}`);
}

/** The reason a file gives for needing a process, or undefined for an in-process file. */
export function processReason(file: string, root = '.'): string | undefined {
  const header = readFileSync(join(root, file), 'utf8').split('\n').slice(0, HEADER_LINES).join('\n');
  const at = header.indexOf(PROCESS_MARKER);
  if (at === -1) return undefined;
  return header
    .slice(at + PROCESS_MARKER.length)
    .split('\n')[0]
    ?.trim();
}

export function processFiles(root = '.'): string[] {
  return nodeTestFiles(root).filter((file) => processReason(file, root) !== undefined);
}

/**
 * Files whose behaviour depends on the Node line, with why: `npm run test:node -- <line>` runs these.
 * Everything else runs on the pinned line only.
 */
export const NODE_LINE_FILES: Readonly<Record<string, string>> = {
  'test/node-line.test.ts': 'checks the line itself',
  'test/start.test.ts': 'npm start and db:migrate run on the line',
  'test/start-refusals.test.ts': 'the service process on the line',
  'test/start-promises.test.ts': 'the service process on the line: signals, shutdown',
  'test/production-start.test.ts': 'the service and the CLI processes on the line',
  'test/build.test.ts': 'the bundles esbuild made, run on the line',
  'test/db-start.test.ts': 'the embedded server started from the line',
  'test/exit-status.test.ts': "npm test's exit status on the line",
  'test/cli-process.test.ts': 'the built CLI on the line',
  'test/async-service.test.ts': 'the async service process on the line',
  'test/async-crash.test.ts': 'a worker process killed on the line',
  'test/outbox-crash.test.ts': 'a relay process killed on the line',
  'test/chaos.test.ts': 'service processes killed and cut off on the line',
  'test/hostile-senders.test.ts': "the line's HTTP server under slow and malformed clients",
  'test/connection-shedding.test.ts': "the line's HTTP server and sockets",
  'test/security.test.ts': "the line's HTTP server",
  'test/limits.test.ts': "the line's HTTP server and body streams",
  'test/signature.test.ts': "the line's Web Crypto",
  'test/sender-vectors.test.ts': "the line's Web Crypto (HMAC, Ed25519, ECDSA) on published vectors",
  'test/senders.test.ts': "every sender's signature on the line's Web Crypto",
  'test/exact-payloads.test.ts': "exact numbers read through the line's JSON.parse (its source text)",
  'test/postgres-patch.test.ts': "the patched postgres.js over the line's sockets",
  'test/outbox-target.test.ts': "the line's fetch and undici",
  'test/outbox-nats.test.ts': "the NATS client over the line's sockets",
  'test/outbox-rabbitmq.test.ts': "the AMQP client over the line's sockets",
  'test/outbox-redis.test.ts': "the Redis client over the line's sockets",
};
