// A real HTTP target for the relay: node:http on 127.0.0.1 (port 0), recording every request with
// its headers and body, answering as the test says (including holding a request open), and noting
// when one message is being delivered twice at the same moment.
import { createServer, type IncomingHttpHeaders } from 'node:http';
import { type AddressInfo, createServer as createTcpServer } from 'node:net';
import { afterAll } from 'vitest';
import { WAIT_MS } from './patience.ts';

export interface SinkRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** The body's `id`, when it is JSON with one. */
  messageId: string | undefined;
}

export interface SinkAnswer {
  status: number;
  headers?: Record<string, string>;
  body?: string;
}

export type Responder = (request: SinkRequest, index: number) => SinkAnswer | Promise<SinkAnswer>;

export interface Sink {
  url: string;
  requests: SinkRequest[];
  /** Deliveries of a message that arrived while another delivery of it was still open. */
  overlaps: string[];
  respond(responder: Responder): void;
  /** Holds every request open until the returned function is called, then answers 200. */
  hold(): () => void;
  /** Resolves when the sink has received `count` requests in all. */
  waitForRequests(count: number, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

function messageIdOf(body: string): string | undefined {
  try {
    const parsed: unknown = JSON.parse(body);
    if (typeof parsed === 'object' && parsed !== null && 'id' in parsed && typeof parsed.id === 'string') {
      return parsed.id;
    }
  } catch {
    // Not JSON: recorded as is.
  }
  return undefined;
}

/** Starts a sink answering 200 `{}` until told otherwise; closed when the file is done. */
export async function startSink(): Promise<Sink> {
  let responder: Responder = () => ({ status: 200, body: '{}' });
  const requests: SinkRequest[] = [];
  const overlaps: string[] = [];
  const open = new Map<string, number>();
  const waiters: Array<{ count: number; resolve: () => void }> = [];

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', async () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const request: SinkRequest = {
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        body,
        messageId: messageIdOf(body),
      };
      const index = requests.push(request) - 1;
      for (const waiter of [...waiters]) {
        if (requests.length >= waiter.count) {
          waiters.splice(waiters.indexOf(waiter), 1);
          waiter.resolve();
        }
      }
      const id = request.messageId;
      if (id !== undefined) {
        if ((open.get(id) ?? 0) > 0) overlaps.push(id);
        open.set(id, (open.get(id) ?? 0) + 1);
      }
      try {
        const answer = await responder(request, index);
        res.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers });
        res.end(answer.body ?? '');
      } finally {
        if (id !== undefined) open.set(id, (open.get(id) ?? 1) - 1);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  };
  afterAll(close);

  return {
    url: `http://127.0.0.1:${port}/outbox`,
    requests,
    overlaps,
    respond: (next) => {
      responder = next;
    },
    hold: () => {
      let release: () => void = () => {};
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      responder = async () => {
        await held;
        return { status: 200 };
      };
      return release;
    },
    waitForRequests: (count, timeoutMs = WAIT_MS) =>
      new Promise((resolve, reject) => {
        if (requests.length >= count) return resolve();
        const timer = setTimeout(
          () => reject(new Error(`sink got ${requests.length} of ${count} requests`)),
          timeoutMs,
        );
        waiters.push({
          count,
          resolve: () => {
            clearTimeout(timer);
            resolve();
          },
        });
      }),
    close,
  };
}

/** A URL on 127.0.0.1 where nothing listens (a port that was free a moment ago): connections are refused. */
export async function refusingUrl(): Promise<string> {
  const server = createTcpServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return `http://127.0.0.1:${port}/outbox`;
}
