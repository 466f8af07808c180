// Node's body reader (src/entry/setup/request-body.ts): a body copied once from the parser's chunks,
// the chunks and then the body freed as soon as nothing reads them, and the intake's answers unchanged
// when it reads the bodies.
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { serve } from '@hono/node-server';
import { describe, expect, it } from 'vitest';
import { nodeBodyReader, readDeclaredBody } from '../src/entry/setup/request-body.ts';
import { acmeEvent, signedHeaders, uniqueId } from './helpers/acme.ts';
import { buildTestApp } from './helpers/app.ts';
import { useTestDatabase } from './helpers/database.ts';
import { eventRow } from './helpers/facts.ts';

const { db, sql } = await useTestDatabase();

/** A chunk that is the whole of its own ArrayBuffer, as Node's HTTP parser hands them out. */
const ownChunk = (text: string) => new Uint8Array(new TextEncoder().encode(text));

/** A stream that has been sent `chunks` (and its end, unless `ended` is false). */
function streamOf(chunks: readonly Uint8Array[], ended = true): Readable {
  const stream = new Readable({ read() {} });
  for (const chunk of chunks) stream.push(chunk);
  if (ended) stream.push(null);
  return stream;
}

const text = (bytes: Uint8Array | undefined) => (bytes === undefined ? undefined : new TextDecoder().decode(bytes));

describe('a declared body read from its stream', () => {
  it('is the chunks in order, copied once, each chunk freed once copied', async () => {
    const chunks = [ownChunk('{"a":'), ownChunk('"bc",'), ownChunk('"d":1}')];
    const body = await readDeclaredBody(streamOf(chunks), 16);
    expect(text(body)).toBe('{"a":"bc","d":1}');
    expect(chunks.map((chunk) => chunk.byteLength)).toEqual([0, 0, 0]);
  });

  it('is a lone chunk itself, not a copy of it', async () => {
    const chunk = ownChunk('{"only":true}');
    const body = await readDeclaredBody(streamOf([chunk]), 13);
    expect(body?.buffer).toBe(chunk.buffer);
    expect(text(body)).toBe('{"only":true}');
  });

  it('leaves whole a chunk that shares its buffer with other bytes', async () => {
    const shared = new TextEncoder().encode('xx{"a":1}yy');
    const view = shared.subarray(2, 9);
    const body = await readDeclaredBody(streamOf([view, ownChunk(' ')]), 8);
    expect(text(body)).toBe('{"a":1} ');
    expect(new TextDecoder().decode(shared)).toBe('xx{"a":1}yy');
  });

  it('frees no chunk that another listener also received', async () => {
    const chunks = [ownChunk('ab'), ownChunk('cd')];
    const stream = streamOf(chunks);
    const seen: Uint8Array[] = [];
    stream.on('data', (chunk: Uint8Array) => seen.push(chunk));
    expect(text(await readDeclaredBody(stream, 4))).toBe('abcd');
    expect(seen.map((chunk) => text(chunk))).toEqual(['ab', 'cd']);
  });

  it('is undefined when the stream ends short of the declared length, or longer', async () => {
    expect(await readDeclaredBody(streamOf([ownChunk('abc')]), 4)).toBeUndefined();
    expect(await readDeclaredBody(streamOf([ownChunk('abcde')]), 4)).toBeUndefined();
  });

  it('is undefined when the stream breaks before its end', async () => {
    const stream = streamOf([ownChunk('ab')], false);
    const body = readDeclaredBody(stream, 4);
    stream.destroy(new Error('connection reset'));
    expect(await body).toBeUndefined();
  });

  it('is the body when the sender closed right after its last byte (the message complete)', async () => {
    const stream = Object.assign(streamOf([ownChunk('abcd')], false), { complete: true });
    const body = readDeclaredBody(stream, 4);
    stream.on('data', () => stream.destroy());
    expect(text(await body)).toBe('abcd');
  });
});

describe("Node's body reader", () => {
  /** Reads each request's body with `reader` and keeps it, as the intake would. */
  async function readingServer(reader: ReturnType<typeof nodeBodyReader>) {
    const bodies: (Uint8Array<ArrayBuffer> | undefined | null)[] = [];
    const server = createServer(async (request: IncomingMessage, response) => {
      const read = reader.read({ incoming: request }, request.headers['content-length']);
      bodies.push(read === null ? null : await read);
      response.end('ok');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    return { bodies, origin: `http://127.0.0.1:${port}`, close: () => new Promise((done) => server.close(done)) };
  }

  it('reads a declared body of several socket reads, and frees it on release but no other', async () => {
    const reader = nodeBodyReader();
    const server = await readingServer(reader);
    try {
      const sent = JSON.stringify({ note: 'x'.repeat(300_000) });
      await (await fetch(server.origin, { method: 'POST', body: sent })).text();
      const [body] = server.bodies;
      expect(text(body ?? undefined)).toBe(sent);
      const other = new Uint8Array(8);
      reader.release(other);
      expect(other.byteLength).toBe(8);
      if (body) reader.release(body);
      expect(body?.byteLength).toBe(0);
    } finally {
      await server.close();
    }
  });

  it('leaves a body without a declared length to the request', async () => {
    const server = await readingServer(nodeBodyReader());
    try {
      const chunked = new ReadableStream({
        start(controller) {
          controller.enqueue(new TextEncoder().encode('{}'));
          controller.close();
        },
      });
      const init = { method: 'POST', body: chunked, duplex: 'half' } as RequestInit;
      await (await fetch(server.origin, init)).text();
      expect(server.bodies).toEqual([null]);
    } finally {
      await server.close();
    }
  });
});

describe('the intake reading bodies with it', () => {
  it('stores a delivery of several socket reads, answers its copy from memory, and frees both bodies', async () => {
    const reader = nodeBodyReader();
    const read: Uint8Array<ArrayBuffer>[] = [];
    const test = await buildTestApp(db, {
      bodyReader: {
        read: (bindings, contentLength) =>
          reader.read(bindings, contentLength)?.then((body) => {
            if (body !== undefined) read.push(body);
            return body;
          }) ?? null,
        release: (body) => reader.release(body),
      },
    });
    const served = await servedByNode(test.app.fetch);
    try {
      const event = acmeEvent({ data: { id: uniqueId('sub'), status: 'active', note: 'n'.repeat(200_000) } });
      const body = JSON.stringify(event);
      const init = { method: 'POST', body, headers: await signedHeaders(body) };
      const first = await fetch(`${served.origin}/webhooks/acme`, init);
      expect([first.status, await first.text()]).toEqual([200, '{"received":true}']);
      const copy = await fetch(`${served.origin}/webhooks/acme`, init);
      expect([copy.status, await copy.text()]).toEqual([200, '{"received":true,"duplicate":true}']);
      const row = await eventRow(sql, event.id);
      expect((row?.payload as { data?: { note?: string } } | undefined)?.data?.note).toHaveLength(200_000);
      expect(read.map((bytes) => bytes.byteLength)).toEqual([0, 0]);
    } finally {
      await served.close();
    }
  });

  it('stores a chunked delivery, whose body the reader leaves to the request', async () => {
    const test = await buildTestApp(db, { bodyReader: nodeBodyReader() });
    const served = await servedByNode(test.app.fetch);
    try {
      const event = acmeEvent({ data: { id: uniqueId('sub'), status: 'active' } });
      const body = JSON.stringify(event);
      const chunked = new ReadableStream({
        start(controller) {
          controller.enqueue(new TextEncoder().encode(body));
          controller.close();
        },
      });
      const init = { method: 'POST', body: chunked, duplex: 'half', headers: await signedHeaders(body) } as RequestInit;
      const answer = await fetch(`${served.origin}/webhooks/acme`, init);
      expect([answer.status, await answer.text()]).toEqual([200, '{"received":true}']);
      expect(await eventRow(sql, event.id)).toMatchObject({ status: 'completed' });
    } finally {
      await served.close();
    }
  });
});

/** An app served by Node on a port of its own, as `npm start` serves the intake. */
async function servedByNode(fetchApp: Parameters<typeof serve>[0]['fetch']) {
  const server = serve({ fetch: fetchApp, port: 0, hostname: '127.0.0.1' });
  await new Promise((resolve) => server.once('listening', resolve));
  const { port } = server.address() as AddressInfo;
  return { origin: `http://127.0.0.1:${port}`, close: () => new Promise((resolve) => server.close(resolve)) };
}
