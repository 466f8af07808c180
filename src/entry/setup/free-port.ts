// A TCP port that is free right now: for the embedded server, and for benchmarks starting the service.
import { createServer } from 'node:net';

/** A TCP port free right now on 127.0.0.1 (another process could still take it before we bind). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address !== null ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}
