// A reconnect flood: sockets from one loopback address (127.0.0.2) that send half a request's
// headers and reconnect a few milliseconds after each close, the attack connection shedding must
// survive. Shared by `npm run bench:reconnect` and test/connection-shedding-reconnect.test.ts.
import { connect, type Socket } from 'node:net';

/** The flood's address; genuine senders connect from 127.0.0.1. Linux routes all of 127/8 to loopback. */
export const FLOODING_ADDRESS = '127.0.0.2';
export const GENUINE_ADDRESS = '127.0.0.1';

export function startReconnectFlood(options: { port: number; sockets: number; reconnectMs: number }) {
  let stopped = false;
  let opened = 0;
  const open = new Set<Socket>();
  const start = () => {
    if (stopped) return;
    const socket = connect({ host: GENUINE_ADDRESS, port: options.port, localAddress: FLOODING_ADDRESS });
    opened += 1;
    open.add(socket);
    socket.on('error', () => {});
    socket.once('connect', () => socket.write('POST /webhooks/acme HTTP/1.1\r\nhost: x\r\n'));
    socket.once('close', () => {
      open.delete(socket);
      setTimeout(start, options.reconnectMs);
    });
  };
  for (let index = 0; index < options.sockets; index += 1) start();
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
