// One client holding the whole connection pool with slow uploads must not lock genuine senders out:
// at HTTP_MAX_CONNECTIONS the oldest connection that has not sent its whole request in time is
// closed to make room, and only when none has a new connection is refused. The policy on its own
// (injected clock), then the attack as it was measured against a real `npm start`: the same numbers
// (1,030 slow sockets, 20 genuine deliveries, the default pool of 1024), about 3 s. The test process
// and the service each hold about 1,050 sockets: the hard `ulimit -n` must allow that (Node raises
// its soft limit to the hard one; 20,000 where this was written).
// Needs a process: the built service's sockets and its shedding of idle connections, seen from outside.
import { connect, type Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { ConnectionShedder, SHED_GRACE_MS } from '../src/entry/setup/connection-shedding.ts';
import { acmeEvent, deliverAcme, TEST_SECRET } from './helpers/acme.ts';
import { useTestDatabase } from './helpers/database.ts';
import { WAIT_MS } from './helpers/patience.ts';
import { startListeningService } from './helpers/process.ts';

const { url } = await useTestDatabase();

describe('the shedding policy', () => {
  function shedder(capacity: number) {
    let now = 0;
    const policy = new ConnectionShedder<string>({ capacity, graceMs: 1000, now: () => now });
    return { policy, at: (ms: number) => (now = ms) };
  }
  const receiving = { complete: false };
  const received = { complete: true };

  it('admits below capacity and sheds nothing', () => {
    const { policy } = shedder(2);
    expect(policy.admit('a')).toEqual({ admitted: true, shed: undefined });
    expect(policy.admit('b')).toEqual({ admitted: true, shed: undefined });
    expect(policy.size).toBe(2);
  });

  it('at capacity closes the oldest incomplete connection past the grace, in its place', () => {
    const { policy, at } = shedder(3);
    policy.admit('old-headers');
    at(100);
    policy.admit('old-body');
    policy.requestArrived('old-body', receiving);
    at(200);
    policy.admit('young');
    at(1150);
    // Both old ones are overdue; the one waiting longest goes, whether it lacks headers or body.
    expect(policy.admit('new-1')).toEqual({ admitted: true, shed: 'old-headers' });
    expect(policy.admit('new-2')).toEqual({ admitted: true, shed: 'old-body' });
    expect(policy.size).toBe(3);
  });

  it('refuses the new connection when every incomplete one is still within the grace', () => {
    const { policy, at } = shedder(2);
    policy.admit('a');
    at(500);
    policy.admit('b');
    at(999);
    expect(policy.admit('c')).toEqual({ admitted: false });
    expect(policy.size).toBe(2);
    // A refused connection was never tracked: its events change nothing.
    policy.closed('c');
    expect(policy.size).toBe(2);
  });

  it('never sheds a connection whose request is in and being answered', () => {
    const { policy, at } = shedder(2);
    policy.admit('working');
    policy.requestArrived('working', received);
    at(10);
    policy.admit('slow');
    at(5000);
    expect(policy.admit('new')).toEqual({ admitted: true, shed: 'slow' });
    expect(policy.admit('newer')).toEqual({ admitted: false });
  });

  it('counts a body as received the moment it is, not when the request arrived', () => {
    const { policy, at } = shedder(1);
    const request = { complete: false };
    policy.admit('a');
    policy.requestArrived('a', request);
    request.complete = true;
    at(5000);
    expect(policy.admit('b')).toEqual({ admitted: false });
  });

  it('times an answered keep-alive connection from its answer, and forgets closed ones', () => {
    const { policy, at } = shedder(2);
    policy.admit('keep-alive');
    policy.requestArrived('keep-alive', received);
    at(10);
    policy.admit('slow');
    at(2000);
    policy.answered('keep-alive');
    at(2500);
    // Idle for 500 ms only: the slow one, waiting since 10 ms, goes first.
    expect(policy.admit('new')).toEqual({ admitted: true, shed: 'slow' });
    at(3100);
    expect(policy.admit('newer')).toEqual({ admitted: true, shed: 'keep-alive' });
    policy.closed('new');
    expect(policy.size).toBe(1);
    // Events of a connection already shed or closed do not bring it back.
    policy.answered('new');
    policy.requestArrived('slow', receiving);
    expect(policy.size).toBe(1);
  });

  it('makes room from the address holding the most connections first, whatever their age', () => {
    const { policy, at } = shedder(4);
    policy.admit('g1', 'genuine');
    at(5);
    for (const flood of ['f1', 'f2', 'f3']) policy.admit(flood, 'flooding');
    at(10);
    // Every connection is far within the grace: the newcomer from the lighter address still gets in.
    expect(policy.admit('g2', 'genuine')).toEqual({ admitted: true, shed: 'f1' });
    // Two against two: the flooding address is no longer heavier, the newcomer's own goes by age.
    expect(policy.admit('g3', 'genuine')).toEqual({ admitted: false });
    // A newcomer from the heaviest address takes its own address's oldest place, never an older one elsewhere.
    at(5000);
    expect(policy.admit('f4', 'flooding')).toEqual({ admitted: true, shed: 'f2' });
    expect(policy.size).toBe(4);
  });

  it('keeps an idle keep-alive connection of a light address while a heavy one reconnects at once', () => {
    const { policy, at } = shedder(3);
    policy.admit('keep-alive', 'genuine');
    policy.requestArrived('keep-alive', received);
    at(10);
    policy.answered('keep-alive');
    at(1000);
    policy.admit('f1', 'flooding');
    policy.admit('f2', 'flooding');
    // The keep-alive connection has been idle past the grace; the flood's are young: refused.
    at(1500);
    expect(policy.admit('f3', 'flooding')).toEqual({ admitted: false });
    // Once its own have waited past the grace, the flood takes their places, never the idle one's.
    at(2000);
    expect(policy.admit('f3', 'flooding')).toEqual({ admitted: true, shed: 'f1' });
    // A connection being answered is skipped on the heaviest address too.
    policy.requestArrived('f2', received);
    expect(policy.admit('g1', 'genuine')).toEqual({ admitted: true, shed: 'f3' });
    // An address whose connections all closed holds none: a newcomer from it is the lightest.
    policy.closed('g1');
    policy.closed('keep-alive');
    policy.admit('f4', 'flooding');
    policy.admit('f5', 'flooding');
    expect(policy.admit('g2', 'genuine')).toEqual({ admitted: true, shed: 'f4' });
  });
});

const ATTACK_SOCKETS = 1030;
const GENUINE_DELIVERIES = 20;

/** Connects, sends the headers of an unsigned delivery and one byte of its body, then holds. */
function slowUpload(origin: string): Promise<Socket> {
  const { hostname, port } = new URL(origin);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    socket.once('error', reject);
    socket.once('connect', () => {
      socket.off('error', reject);
      // The server closes some of them: that is the point, not an error.
      socket.on('error', () => {});
      socket.write(
        'POST /webhooks/acme HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{',
      );
      resolve(socket);
    });
  });
}

describe('npm start under a slow-connection flood', () => {
  it(`takes ${GENUINE_DELIVERIES} genuine deliveries while one client holds ${ATTACK_SOCKETS} slow uploads`, async () => {
    // The default HTTP_MAX_CONNECTIONS (1024) and timeouts: the attack as measured.
    const service = await startListeningService({ DATABASE_URL: url, ACME_WEBHOOK_SECRET: TEST_SECRET });
    const sockets: Socket[] = [];
    let attackersClosed = 0;
    try {
      for (let opened = 0; opened < ATTACK_SOCKETS; opened += 100) {
        const batch = Math.min(100, ATTACK_SOCKETS - opened);
        const connected = await Promise.all(Array.from({ length: batch }, () => slowUpload(service.origin)));
        for (const socket of connected) {
          socket.once('close', () => (attackersClosed += 1));
          sockets.push(socket);
        }
      }
      // The server is at its cap: what came over it was closed at once.
      await expect.poll(() => attackersClosed, { timeout: WAIT_MS }).toBeGreaterThanOrEqual(ATTACK_SOCKETS - 1024);
      // Every slow upload is now overdue for shedding. The pause is the subject (the service's own
      // grace, on its clock); a busy machine only makes them more overdue.
      await new Promise((resolve) => setTimeout(resolve, SHED_GRACE_MS + 500));

      const nowSeconds = Math.floor(Date.now() / 1000);
      const answers = await Promise.all(
        Array.from({ length: GENUINE_DELIVERIES }, () =>
          deliverAcme(service.origin, acmeEvent({ created: nowSeconds }), {
            secret: TEST_SECRET,
            timestamp: nowSeconds,
          }).then(
            (response) => response.status,
            (error: unknown) => String((error as Error).cause ?? error),
          ),
        ),
      );
      expect(answers).toEqual(Array.from({ length: GENUINE_DELIVERIES }, () => 200));
      // Room was made one connection at a time: the attack's overflow and one per genuine delivery at
      // most, never the whole pool.
      expect(attackersClosed).toBeGreaterThanOrEqual(ATTACK_SOCKETS - 1024);
      expect(attackersClosed).toBeLessThanOrEqual(ATTACK_SOCKETS - 1024 + GENUINE_DELIVERIES);
      expect(service.output()).not.toContain('"level":"error"');
    } finally {
      const closed = sockets.map((socket) =>
        socket.closed ? undefined : new Promise((resolve) => socket.once('close', resolve)),
      );
      for (const socket of sockets) socket.destroy();
      await Promise.all(closed);
      service.child.kill('SIGTERM');
      await service.exited;
    }
  });
});
