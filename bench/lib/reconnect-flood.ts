// A reconnect flood: sockets from one loopback address (127.0.0.2) that send half a request's
// headers and reconnect a few milliseconds after each close, the attack connection shedding must
// survive. Shared by `npm run bench:reconnect` and test/connection-shedding-reconnect.test.ts; the
// bench may spread it over processes of its own (FLOOD_PROCESSES) to reach a higher rate.
import { type ChildProcess, spawn } from 'node:child_process';
import { connect, type Socket } from 'node:net';
import { fileURLToPath } from 'node:url';

/** The flood's address; genuine senders connect from 127.0.0.1. Linux routes all of 127/8 to loopback. */
export const FLOODING_ADDRESS = '127.0.0.2';
export const GENUINE_ADDRESS = '127.0.0.1';

/**
 * The flood's address for its `index`-th socket: FLOODING_ADDRESS when it comes from one address,
 * else one of `addresses` in 127.0.2.1–127.0.2.254 (a flood spread so that no address holds more
 * than a genuine sender).
 */
export function floodAddress(index: number, addresses: number): string {
  return addresses <= 1 ? FLOODING_ADDRESS : `127.0.2.${(index % Math.min(254, addresses)) + 1}`;
}

export function startReconnectFlood(options: {
  port: number;
  sockets: number;
  reconnectMs: number;
  addresses?: number;
}) {
  let stopped = false;
  let opened = 0;
  const open = new Set<Socket>();
  const start = (index: number) => {
    if (stopped) return;
    const localAddress = floodAddress(index, options.addresses ?? 1);
    const socket = connect({ host: GENUINE_ADDRESS, port: options.port, localAddress });
    opened += 1;
    open.add(socket);
    socket.on('error', () => {});
    socket.once('connect', () => socket.write('POST /webhooks/acme HTTP/1.1\r\nhost: x\r\n'));
    socket.once('close', () => {
      open.delete(socket);
      setTimeout(() => start(index), options.reconnectMs);
    });
  };
  for (let index = 0; index < options.sockets; index += 1) start(index);
  return {
    opened: () => opened,
    stop: async () => {
      stopped = true;
      const closing = [...open].map((socket) => new Promise((resolve) => socket.once('close', resolve)));
      for (const socket of open) socket.destroy();
      await Promise.all(closing);
    },
  };
}

/** This module run as a flood process of its own (`startFloodProcesses`): the flood the parent asked for, counted on request. */
const FLOOD_CHILD = '--flood-child';

if (process.argv.includes(FLOOD_CHILD) && process.send !== undefined) {
  const attack = startReconnectFlood({
    port: Number(process.env.FLOOD_PORT),
    sockets: Number(process.env.FLOOD_CHILD_SOCKETS),
    reconnectMs: Number(process.env.FLOOD_RECONNECT_MS),
    addresses: Number(process.env.FLOOD_ADDRESSES ?? 1),
  });
  process.on('message', (message) => {
    if (message === 'stop') void attack.stop().then(() => process.exit(0));
    else process.send?.({ opened: attack.opened() });
  });
}

/**
 * The flood spread over `processes` processes (one event loop opens only so many connections a
 * second; several push the rate at which the service stops coping). `opened` sums their counts.
 */
export function startFloodProcesses(options: {
  port: number;
  sockets: number;
  reconnectMs: number;
  processes: number;
}) {
  const children = Array.from({ length: options.processes }, (_, index) => {
    const share =
      Math.floor(options.sockets / options.processes) + (index < options.sockets % options.processes ? 1 : 0);
    return spawn(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), FLOOD_CHILD], {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      env: {
        ...process.env,
        FLOOD_PORT: String(options.port),
        FLOOD_CHILD_SOCKETS: String(share),
        FLOOD_RECONNECT_MS: String(options.reconnectMs),
      },
    });
  });
  const ask = (child: ChildProcess) =>
    new Promise<number>((resolve) => {
      child.once('message', (message) => resolve((message as { opened: number }).opened));
      child.send('count');
    });
  return {
    opened: async () => (await Promise.all(children.map(ask))).reduce((sum, count) => sum + count, 0),
    stop: async () => {
      await Promise.all(
        children.map(
          (child) =>
            new Promise((resolve) => {
              if (child.exitCode !== null) return resolve(undefined);
              child.once('exit', resolve);
              child.send('stop');
            }),
        ),
      );
    },
  };
}
