// How a runtime may read a delivery's body itself instead of through its Request, and give the body's
// memory back once the delivery is answered (Node: entry/setup/request-body.ts). An ArrayBuffer's
// memory is outside V8's heap but counted by it: left to the collector, each large body waits for a
// full collection, whose pause genuine deliveries then wait for
// (docs/decisions/0034-body-memory-given-back.md).

export interface BodyReader {
  /**
   * The whole body; undefined when the sender went away or broke the stream before all of it had
   * arrived; null when this reader does not read this request (the intake then reads it through the
   * request). `bindings` is what the runtime passed the app with the request (`c.env`);
   * `contentLength` the declared length, if any.
   */
  read(bindings: unknown, contentLength: string | undefined): Promise<Uint8Array<ArrayBuffer> | undefined> | null;
  /**
   * The delivery is answered and nothing reads `body` again: its memory may be freed now. A body this
   * reader did not read is left alone.
   */
  release(body: Uint8Array<ArrayBuffer>): void;
}
