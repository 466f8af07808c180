// HTTP_MAX_CONNECTIONS without a lock-out: Node's `maxConnections` refuses every new connection once
// the pool is full, so one client holding 1,030 slow uploads (one body byte each) made 20 of 20
// genuine deliveries fail with ECONNRESET. Here a full pool first makes room, by remote address
// first, then by age. A newcomer from an address holding fewer connections than some other address
// takes the place of that heaviest address's longest-waiting connection (no complete request yet, or
// idle between keep-alive requests), whatever its age: one client reconnecting the moment it is
// closed (1,100 sockets, 5 ms later) kept every connection of its own younger than any grace and so
// locked genuine senders out again. A newcomer from the heaviest address itself may only take the
// place of its own address's longest-waiting connection, and only once that one has waited at least
// the grace; otherwise it is refused. A genuine sender sends its request within milliseconds of
// connecting and is never shed while it is being answered; an attacker must spread its connections
// over many addresses, or open more than the whole pool per grace period from one, to lock it out, and
// that is for a proxy's per-client limits to stop (docs/security.md). The policy is plain data
// (`ConnectionShedder`, tested with its own clock); `shedAtCapacity` attaches it to a Node server.
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
  /** Its remote address ('' when unknown). */
  address: string;
}

export type Admission<C> = { admitted: true; shed: C | undefined } | { admitted: false };

export class ConnectionShedder<C> {
  /** Every open connection. */
  readonly #connections = new Map<C, Waiting>();
  /** The open connections of each remote address, in the order they began to wait (a Map keeps insertion order). */
  readonly #byAddress = new Map<string, Map<C, Waiting>>();
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

  /**
   * A new connection from `address` (its remote address; connections without one count as one
   * address): admitted (with the one to close for it, at capacity) or refused.
   */
  admit(connection: C, address = ''): Admission<C> {
    const now = this.#now();
    let shed: C | undefined;
    if (this.#connections.size >= this.#capacity) {
      shed = this.#victim(address, now);
      if (shed === undefined) return { admitted: false };
      this.closed(shed);
    }
    this.#wait(connection, { since: now, request: undefined, address });
    return { admitted: true, shed };
  }

  /** Its request's headers are in; `request.complete` says when its body is too. */
  requestArrived(connection: C, request: Arriving): void {
    const waiting = this.#connections.get(connection);
    if (waiting !== undefined) waiting.request = request;
  }

  /** Its answer is sent: a keep-alive connection waits for its client again, from now. */
  answered(connection: C): void {
    const waiting = this.#connections.get(connection);
    if (waiting === undefined) return;
    this.closed(connection);
    this.#wait(connection, { since: this.#now(), request: undefined, address: waiting.address });
  }

  closed(connection: C): void {
    const waiting = this.#connections.get(connection);
    if (waiting === undefined) return;
    this.#connections.delete(connection);
    const peers = this.#byAddress.get(waiting.address);
    peers?.delete(connection);
    if (peers?.size === 0) this.#byAddress.delete(waiting.address);
  }

  #wait(connection: C, waiting: Waiting): void {
    this.#connections.set(connection, waiting);
    const peers = this.#byAddress.get(waiting.address);
    if (peers === undefined) this.#byAddress.set(waiting.address, new Map([[connection, waiting]]));
    else peers.set(connection, waiting);
  }

  /**
   * The connection to close for a newcomer from `address`: the longest-waiting one of the address
   * holding the most connections, when that is another address holding more than the newcomer's;
   * else the newcomer's own address's longest-waiting one, once past the grace.
   */
  #victim(address: string, now: number): C | undefined {
    const own = this.#byAddress.get(address);
    let heaviest: Map<C, Waiting> | undefined;
    for (const [other, peers] of this.#byAddress) {
      if (other !== address && peers.size > ((heaviest ?? own)?.size ?? 0)) heaviest = peers;
    }
    return (
      (heaviest === undefined ? undefined : this.#longestWaiting(heaviest, now, 0)) ??
      (own === undefined ? undefined : this.#longestWaiting(own, now, this.#graceMs))
    );
  }

  /** Of `peers`, the longest-waiting connection without its whole request, if it has waited `atLeastMs`. */
  #longestWaiting(peers: Map<C, Waiting>, now: number, atLeastMs: number): C | undefined {
    for (const [connection, waiting] of peers) {
      // Being answered: the request is in, the client waits for us.
      if (waiting.request?.complete === true) continue;
      // Ordered by `since`: every later one has waited less.
      return now - waiting.since >= atLeastMs ? connection : undefined;
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
    const admission = shedder.admit(socket, socket.remoteAddress);
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
