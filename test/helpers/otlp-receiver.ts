// An OTLP/HTTP trace receiver for the tests: node:http on 127.0.0.1 (port 0) taking POST /v1/traces
// as a collector would, decoding what the SDK sends (http/json by JSON.parse, http/protobuf by the
// small wire-format reader below, no generated code) into one flat list of spans. Tests in workerd
// cannot read Node's memory: they read the same lists from GET /received.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll } from 'vitest';

export type AttributeValue = string | number | boolean;

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  /** Undefined for a root span. */
  parentSpanId: string | undefined;
  name: string;
  /** OTLP's SpanKind: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  attributes: Record<string, AttributeValue>;
  links: { traceId: string; spanId: string }[];
  /** OTLP's StatusCode: 0 unset, 1 ok, 2 error. */
  statusCode: number;
  /** The resource's service.name. */
  service: string | undefined;
}

export interface OtlpReceiver {
  /** The base URL, as OTEL_EXPORTER_OTLP_ENDPOINT takes it. */
  endpoint: string;
  spans: ReceivedSpan[];
  /** Each export's path, content type and authorization header, in arrival order. */
  requests: ReceivedExport[];
}

export interface ReceivedExport {
  path: string;
  contentType: string | undefined;
  authorization: string | undefined;
}

/** What GET /received answers. */
export interface ReceivedTraces {
  spans: ReceivedSpan[];
  requests: ReceivedExport[];
}

// --- protobuf wire format: varints, fixed64/32 and length-delimited fields, which is all OTLP uses.

type Field = { number: number; varint?: bigint; bytes?: Uint8Array; fixed?: Uint8Array };

function readFields(buffer: Uint8Array): Field[] {
  const fields: Field[] = [];
  let at = 0;
  const varint = (): bigint => {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      const byte = buffer[at++];
      if (byte === undefined) throw new Error('protobuf: truncated varint');
      result |= BigInt(byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) return result;
      shift += 7n;
    }
  };
  while (at < buffer.length) {
    const tag = Number(varint());
    const number = tag >> 3;
    const wire = tag & 7;
    if (wire === 0) fields.push({ number, varint: varint() });
    else if (wire === 1 || wire === 5) {
      const size = wire === 1 ? 8 : 4;
      fields.push({ number, fixed: buffer.subarray(at, at + size) });
      at += size;
    } else if (wire === 2) {
      const length = Number(varint());
      fields.push({ number, bytes: buffer.subarray(at, at + length) });
      at += length;
    } else throw new Error(`protobuf: wire type ${wire} is not used by OTLP`);
  }
  return fields;
}

const hex = (bytes: Uint8Array | undefined) => Buffer.from(bytes ?? new Uint8Array()).toString('hex');
const text = (bytes: Uint8Array | undefined) => Buffer.from(bytes ?? new Uint8Array()).toString('utf8');
const all = (fields: Field[], number: number) =>
  fields
    .filter((field) => field.number === number && field.bytes !== undefined)
    .map((field) => field.bytes as Uint8Array);
const one = (fields: Field[], number: number) => fields.find((field) => field.number === number);

function protoAttributes(fields: Field[], number: number): Record<string, AttributeValue> {
  const attributes: Record<string, AttributeValue> = {};
  for (const keyValue of all(fields, number).map(readFields)) {
    const value = readFields(one(keyValue, 2)?.bytes ?? new Uint8Array());
    const [first] = value;
    if (first === undefined) continue;
    const key = text(one(keyValue, 1)?.bytes);
    if (first.number === 1) attributes[key] = text(first.bytes);
    else if (first.number === 2) attributes[key] = first.varint === 1n;
    else if (first.number === 3) attributes[key] = Number(BigInt.asIntN(64, first.varint ?? 0n));
    else if (first.number === 4 && first.fixed !== undefined) {
      attributes[key] = Buffer.from(first.fixed).readDoubleLE(0);
    }
  }
  return attributes;
}

function decodeProtobuf(body: Uint8Array): ReceivedSpan[] {
  const spans: ReceivedSpan[] = [];
  for (const resourceSpans of all(readFields(body), 1).map(readFields)) {
    const resource = readFields(one(resourceSpans, 1)?.bytes ?? new Uint8Array());
    const service = protoAttributes(resource, 1)['service.name'];
    for (const scopeSpans of all(resourceSpans, 2).map(readFields)) {
      for (const span of all(scopeSpans, 2).map(readFields)) {
        const parent = hex(one(span, 4)?.bytes);
        const status = readFields(one(span, 15)?.bytes ?? new Uint8Array());
        spans.push({
          traceId: hex(one(span, 1)?.bytes),
          spanId: hex(one(span, 2)?.bytes),
          parentSpanId: parent === '' ? undefined : parent,
          name: text(one(span, 5)?.bytes),
          kind: Number(one(span, 6)?.varint ?? 0n),
          attributes: protoAttributes(span, 9),
          links: all(span, 13)
            .map(readFields)
            .map((link) => ({ traceId: hex(one(link, 1)?.bytes), spanId: hex(one(link, 2)?.bytes) })),
          statusCode: Number(one(status, 3)?.varint ?? 0n),
          service: typeof service === 'string' ? service : undefined,
        });
      }
    }
  }
  return spans;
}

// --- OTLP/JSON: ids are hex strings, enums numbers, 64-bit integers numbers or decimal strings.

interface JsonKeyValue {
  key: string;
  value: { stringValue?: string; boolValue?: boolean; intValue?: number | string; doubleValue?: number };
}
interface JsonSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: JsonKeyValue[];
  links?: { traceId: string; spanId: string }[];
  status?: { code?: number };
}
interface JsonRequest {
  resourceSpans?: { resource?: { attributes?: JsonKeyValue[] }; scopeSpans?: { spans?: JsonSpan[] }[] }[];
}

function jsonAttributes(list: JsonKeyValue[] | undefined): Record<string, AttributeValue> {
  const attributes: Record<string, AttributeValue> = {};
  for (const { key, value } of list ?? []) {
    const found = value.stringValue ?? value.boolValue ?? value.doubleValue ?? value.intValue;
    if (found !== undefined) attributes[key] = value.intValue === undefined ? found : Number(value.intValue);
  }
  return attributes;
}

function decodeJson(body: Uint8Array): ReceivedSpan[] {
  const request = JSON.parse(text(body)) as JsonRequest;
  return (request.resourceSpans ?? []).flatMap((resourceSpans) => {
    const service = jsonAttributes(resourceSpans.resource?.attributes)['service.name'];
    return (resourceSpans.scopeSpans ?? []).flatMap((scope) =>
      (scope.spans ?? []).map(
        (span): ReceivedSpan => ({
          traceId: span.traceId,
          spanId: span.spanId,
          parentSpanId: span.parentSpanId === undefined || span.parentSpanId === '' ? undefined : span.parentSpanId,
          name: span.name,
          kind: span.kind,
          attributes: jsonAttributes(span.attributes),
          links: (span.links ?? []).map((link) => ({ traceId: link.traceId, spanId: link.spanId })),
          statusCode: span.status?.code ?? 0,
          service: typeof service === 'string' ? service : undefined,
        }),
      ),
    );
  });
}

/**
 * Starts a receiver answering 200 `{}` to every export, except under `/unavailable/`: a collector
 * that is down, answering 503 and keeping no span. `close` stops it.
 */
export async function listenOtlpReceiver(): Promise<OtlpReceiver & { close(): Promise<void> }> {
  const spans: ReceivedSpan[] = [];
  const requests: ReceivedExport[] = [];
  const server = createServer((req, res) => {
    if (req.method === 'GET' && req.url === '/received') {
      const received: ReceivedTraces = { spans, requests };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(received));
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const contentType = req.headers['content-type'];
      requests.push({ path: req.url ?? '', contentType, authorization: req.headers.authorization });
      if (req.url?.startsWith('/unavailable/') === true) {
        res.writeHead(503).end();
        return;
      }
      const body = new Uint8Array(Buffer.concat(chunks));
      spans.push(...(contentType?.startsWith('application/json') === true ? decodeJson(body) : decodeProtobuf(body)));
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    spans,
    requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** A receiver for one test file, closed when the file is done. */
export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const receiver = await listenOtlpReceiver();
  afterAll(() => receiver.close());
  return receiver;
}
