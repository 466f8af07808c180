// HTTP_MAX_CONNECTIONS without a lock-out: Node's `maxConnections` refuses every new connection once
// the pool is full, so one client holding 1,030 slow uploads (one body byte each) made 20 of 20
// genuine deliveries fail with ECONNRESET. Here a full pool first makes room: the connection that has
// waited longest for its client (no complete headers or body yet, or idle between keep-alive
// requests) is closed for the new one, provided it has waited at least the grace; only when none
// has is the new connection refused. A genuine sender sends its request within milliseconds of
// connecting and is never shed while it is being answered; an attacker must open more than the whole
// pool per grace period to lock it out, and that rate is for a proxy's per-client limits to stop
// (docs/security.md). The policy is plain data (`ConnectionShedder`, tested with its own clock);
// `shedAtCapacity` attaches it to a Node server.
import { type IncomingMessage, Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/**
 * How long a connection may wait for its client's request before a full pool may close it: far
 * above a genuine upload's milliseconds, and far below the headers and request timeouts (10 s and
 * 30 s by default) that otherwise decide when a slow client's connection ends.
 */
export const SHED_GRACE_MS = 1000;

/** What the policy needs of a request: whether all of it (headers and body) has arrived. */
export interface Arriving {
  readonly complete: boolean;
}

interface Waiting {
  /** When the connection began to wait for its client: opened, or its last answer sent. */
  since: number;
  /** The request being received, once its headers are in. */
  request: Arriving | undefined;
}

export type Admission<C> = { admitted: true; shed: C | undefined } | { admitted: false };

export class ConnectionShedder<C> {
  /** Every open connection, in the order they began to wait (a Map keeps insertion order). */
  readonly #connections = new Map<C, Waiting>();
  readonly #capacity: number;
  readonly #graceMs: number;
  readonly #now: () => number;

  /** `now`: a monotonic millisecond clock. */
  constructor(options: { capacity: number; graceMs: number; now?: () => number }) {
    this.#capacity = options.capacity;
    this.#graceMs = options.graceMs;
    this.#now = options.now ?? (() => performance.now());
  }

  get size(): number {
    return this.#connections.size;
  }

  /** A new connection: admitted (with the one to close for it, at capacity) or refused. */
  admit(connection: C): Admission<C> {
    const now = this.#now();
    let shed: C | undefined;
    if (this.#connections.size >= this.#capacity) {
      shed = this.#overdue(now);
      if (shed === undefined) return { admitted: false };
      this.#connections.delete(shed);
    }
    this.#connections.set(connection, { since: now, request: undefined });
    return { admitted: true, shed };
  }

  /** Its request's headers are in; `request.complete` says when its body is too. */
  requestArrived(connection: C, request: Arriving): void {
    const waiting = this.#connections.get(connection);
    if (waiting !== undefined) waiting.request = request;
  }

  /** Its answer is sent: a keep-alive connection waits for its client again, from now. */
  answered(connection: C): void {
    if (!this.#connections.delete(connection)) return;
    this.#connections.set(connection, { since: this.#now(), request: undefined });
  }

  closed(connection: C): void {
    this.#connections.delete(connection);
  }

  /** The longest-waiting connection without its whole request, if it has waited past the grace. */
  #overdue(now: number): C | undefined {
    for (const [connection, waiting] of this.#connections) {
      // Being answered: the request is in, the client waits for us.
      if (waiting.request?.complete === true) continue;
      // Ordered by `since`: every later one has waited less.
      return now - waiting.since >= this.#graceMs ? connection : undefined;
    }
    return undefined;
  }
}

/**
 * Keeps `server` to `capacity` connections by the policy above; used instead of `maxConnections`.
 * Only a Node HTTP/1 server has the events it needs.
 */
export function shedAtCapacity(server: unknown, capacity: number): ConnectionShedder<Socket> {
  if (!(server instanceof Server)) throw new TypeError('connection shedding needs a node:http server');
  const shedder = new ConnectionShedder<Socket>({ capacity, graceMs: SHED_GRACE_MS });
  server.on('connection', (socket: Socket) => {
    const admission = shedder.admit(socket);
    if (!admission.admitted) {
      socket.destroy();
      return;
    }
    admission.shed?.destroy();
    socket.once('close', () => shedder.closed(socket));
  });
  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    shedder.requestArrived(request.socket, request);
    response.once('finish', () => shedder.answered(request.socket));
  });
  return shedder;
}
