// A delivery's body as Node reads it, for the intake (inbox/body-reader.ts). Read through Hono's
// request, a body arrives as the HTTP parser's chunks (each a copy of a socket read, about 64 KiB),
// is concatenated into a second copy, then copied a third time into an ArrayBuffer for Web Crypto,
// and all three wait for the garbage collector. V8 counts that memory and starts a full collection
// once enough has built up: a 420 KB LINE batch replayed 6.4 times a second caused one every 1-2 s,
// and their pauses were the tail that genuine deliveries waited for
// (docs/decisions/0034-body-memory-given-back.md). Here the chunks are copied once into
// the body (a lone chunk is the body itself), freed at once, and the body is freed when the
// delivery is answered.
import { IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';
import type { BodyReader } from '../../inbox/body-reader.ts';

/** A request stream: an IncomingMessage, or a plain Readable in tests. */
export type BodyStream = Readable & {
  /** Whether the parser has seen the whole message (IncomingMessage's `complete`). */
  readonly complete?: boolean;
};

/** Whether `chunk` is the whole of its ArrayBuffer, so that freeing the buffer frees nothing else. */
const wholeBuffer = (chunk: Uint8Array): chunk is Uint8Array<ArrayBuffer> =>
  chunk.buffer instanceof ArrayBuffer && chunk.byteOffset === 0 && chunk.byteLength === chunk.buffer.byteLength;

/**
 * Frees an ArrayBuffer's memory now rather than at the next full collection: a zero-length transfer
 * detaches it, and every view of it reads as empty from then on. A buffer that cannot be detached
 * is left to the collector.
 */
function free(buffer: ArrayBuffer): void {
  try {
    buffer.transfer(0);
  } catch {
    // Not detachable: the collector frees it, as before.
  }
}

/**
 * The body of `declaredLength` bytes read from `stream`, or undefined when it ends, breaks or closes
 * first. A chunk that no other listener saw and that is the whole of its buffer is freed once
 * copied; a lone such chunk is the body itself, uncopied.
 */
export function readDeclaredBody(
  stream: BodyStream,
  declaredLength: number,
): Promise<Uint8Array<ArrayBuffer> | undefined> {
  return new Promise((resolve) => {
    const chunks: Uint8Array[] = [];
    let received = 0;
    let shared = false;
    const finish = (complete: boolean) => {
      stream.off('data', onData);
      stream.off('end', onEnd);
      stream.off('error', onBroken);
      stream.off('close', onBroken);
      if (!complete || received !== declaredLength) {
        resolve(undefined);
        return;
      }
      const [only] = chunks;
      if (chunks.length === 1 && only !== undefined && !shared && wholeBuffer(only)) {
        resolve(new Uint8Array(only.buffer));
        return;
      }
      const body = new Uint8Array(declaredLength);
      let at = 0;
      for (const chunk of chunks) {
        body.set(chunk, at);
        at += chunk.byteLength;
        if (!shared && wholeBuffer(chunk)) free(chunk.buffer);
      }
      resolve(body);
    };
    const onData = (chunk: Uint8Array) => {
      if (stream.listenerCount('data') > 1) shared = true;
      chunks.push(chunk);
      received += chunk.byteLength;
    };
    const onEnd = () => finish(true);
    // A sender that closed the connection right after its last byte still sent a whole body.
    const onBroken = () => finish(stream.complete === true);
    stream.on('data', onData);
    stream.on('end', onEnd);
    stream.on('error', onBroken);
    stream.on('close', onBroken);
  });
}

const DECIMAL = /^\d+$/;

/**
 * The Node reader: a request with a declared length (already checked against MAX_BODY_BYTES) whose
 * body nothing has read yet; any other is read through the request, as before.
 */
export function nodeBodyReader(): BodyReader {
  const read = new WeakSet<Uint8Array>();
  return {
    read(bindings, contentLength) {
      const incoming = (bindings as { incoming?: unknown } | undefined)?.incoming;
      // Already read, already gone (Hono's reader recovers a body that arrived whole just before the
      // sender closed), or decoded as text: left to the request.
      if (!(incoming instanceof IncomingMessage) || incoming.readableDidRead || incoming.destroyed) return null;
      if (incoming.readableEncoding !== null) return null;
      if (contentLength === undefined || !DECIMAL.test(contentLength)) return null;
      if (incoming.headers['transfer-encoding'] !== undefined) return null;
      return readDeclaredBody(incoming, Number(contentLength)).then((body) => {
        if (body !== undefined) read.add(body);
        return body;
      });
    },
    release(body) {
      if (read.delete(body)) free(body.buffer);
    },
  };
}
