// Connection shedding against a client that reconnects at once (src/entry/setup/connection-shedding.ts):
// one address (127.0.0.2; Linux routes all of 127/8 to loopback) holds more sockets than the server's
// cap with incomplete requests and reconnects 5 ms after each close, so its own connections never
// grow older than the grace. Genuine senders from 127.0.0.1, on fresh connections and on one
// keep-alive connection idle past the grace between requests, are all answered: the full pool makes
// room from the flooding address first, and refuses that address's newcomers rather than closing
// another address's idle connection. The shedding as `npm start` attaches it, on a plain node:http
// server in this process, at a smaller cap.
import { Agent, createServer, request, type Server } from 'node:http';
import { afterAll, describe, expect, it } from 'vitest';
import { GENUINE_ADDRESS, startReconnectFlood } from '../bench/lib/reconnect-flood.ts';
import { SHED_GRACE_MS, shedAtCapacity } from '../src/entry/setup/connection-shedding.ts';
import { until } from './helpers/patience.ts';

const CAPACITY = 64;
const FLOOD_SOCKETS = 100;
const RECONNECT_MS = 5;
/** Fresh genuine deliveries, one every GAP_MS, across more than two graces of flood. */
const FRESH = 50;
const GAP_MS = 50;

const server: Server = createServer((incoming, response) => {
  incoming.resume();
  incoming.once('end', () => response.end('ok'));
});
const shedder = shedAtCapacity(server, CAPACITY);
await new Promise<void>((resolve) => server.listen(0, GENUINE_ADDRESS, resolve));
const address = server.address();
if (address === null || typeof address === 'string') throw new Error('the server listens on a port');
const { port } = address;
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

/** One genuine delivery from 127.0.0.1: its status, or the error's code when the connection was refused or cut. */
function deliver(agent: Agent | false): Promise<number | string> {
  return new Promise((resolve) => {
    const sent = request(
      { host: GENUINE_ADDRESS, port, localAddress: GENUINE_ADDRESS, method: 'POST', path: '/webhooks/acme', agent },
      (response) => {
        response.resume();
        response.once('end', () => resolve(response.statusCode ?? 0));
      },
    );
    sent.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
    sent.end('{}');
  });
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('a full pool under a flood that reconnects 5 ms after each close', () => {
  it('answers every genuine delivery, fresh or on an idle keep-alive connection', async () => {
    const keepAlive = new Agent({ keepAlive: true, maxSockets: 1 });
    // Opened before the flood: an idle keep-alive connection is the oldest in the pool.
    expect(await deliver(keepAlive)).toBe(200);
    const attack = startReconnectFlood({ port, sockets: FLOOD_SOCKETS, reconnectMs: RECONNECT_MS });
    try {
      await until(async () => shedder.size >= CAPACITY);
      const fresh: Promise<number | string>[] = [];
      const reused: Array<number | string> = [];
      const started = performance.now();
      for (let index = 0; index < FRESH; index += 1) {
        fresh.push(deliver(false));
        await pause(GAP_MS);
        // Idle past the grace between its requests, while the flood's connections are all younger.
        if (performance.now() - started > (reused.length + 1) * (SHED_GRACE_MS + 200)) {
          reused.push(await deliver(keepAlive));
        }
      }
      const answers = await Promise.all(fresh);
      expect(answers.filter((status) => status !== 200)).toEqual([]);
      expect(reused.length).toBeGreaterThanOrEqual(1);
      expect(reused.filter((status) => status !== 200)).toEqual([]);
      // The flood was busy all along: far more reconnects than sockets.
      expect(attack.opened()).toBeGreaterThan(FLOOD_SOCKETS + FRESH);
    } finally {
      keepAlive.destroy();
      await attack.stop();
    }
  });
});
