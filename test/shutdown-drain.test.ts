// SIGTERM drains within its budget even while a client stalls in its upload. Node's server.close()
// also stops its checks of the headers and request timeouts, so such a client held the service open
// until the platform's SIGKILL: in the production image, `docker stop -t 90` took 91 s and ended in
// exit 137 (docs/production.md#graceful-shutdown). The service now closes what is left once the
// longest a request may still take has passed.
// Needs a process: the built service receives SIGTERM while a socket of this test holds a request open.
import { once } from 'node:events';
import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { useTestDatabase } from './helpers/database.ts';
import { patience } from './helpers/patience.ts';
import { startListeningService } from './helpers/process.ts';

const { url } = await useTestDatabase();
const REQUEST_TIMEOUT_MS = 3000;
const DEADLINE_MS = 1000;

describe('shutdown', () => {
  it('closes an upload stalled past its bounds and exits 0, instead of waiting for SIGKILL', async () => {
    const service = await startListeningService({
      DATABASE_URL: url,
      NODE_ENV: 'production',
      ACME_WEBHOOK_SECRET: 'shutdown-drain-secret-0123456789',
      HTTP_REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS),
      HTTP_HEADERS_TIMEOUT_MS: '1000',
      HANDLER_DEADLINE_MS: String(DEADLINE_MS),
      RELAY_INTERVAL_MS: '0',
    });
    const { port } = new URL(service.origin);
    const socket = connect(Number(port), '127.0.0.1');
    try {
      await once(socket, 'connect');
      // Headers asking to continue: Node answers 100 once it holds the request, then a few body bytes.
      socket.write(
        'POST /webhooks/acme HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n' +
          'Content-Length: 100\r\nExpect: 100-continue\r\n\r\n',
      );
      const [continued] = (await once(socket, 'data')) as [Buffer];
      expect(continued.toString('latin1')).toMatch(/^HTTP\/1\.1 100 /);
      socket.write('{"id":');
      const closed = once(socket, 'close');
      const stoppedAt = Date.now();
      service.child.kill('SIGTERM');
      await service.waitForLine(/"msg":"shutting down"/);
      // A hang is a failure with a message, not a wait for the test runner's own limit.
      const hang = new Promise<'hung'>((resolve) => setTimeout(() => resolve('hung'), patience(30_000)).unref());
      const exit = await Promise.race([service.exited, hang]);
      expect(exit, service.output()).toEqual({ code: 0, signal: null });
      // Not before the request's own bounds: a slow genuine upload gets its whole time.
      expect(Date.now() - stoppedAt).toBeGreaterThanOrEqual(REQUEST_TIMEOUT_MS + DEADLINE_MS - 100);
      await closed;
    } finally {
      socket.destroy();
      service.child.kill('SIGKILL');
    }
  });
});
