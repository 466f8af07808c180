// The tracing seam: what the intake, the async worker and the relay call to make spans, passed in
// like the logger. Spans are parented explicitly (a parent span or a W3C traceparent), never through
// an ambient context, so the same code runs on Node and in workerd. `noTracing` (OTEL endpoint unset)
// does no tracing work at all: its spans only carry the parent's traceparent through, so the outbox
// still hands a sender's trace on to consumers. The SDK behind `Tracer` lives in src/entry/setup/tracing-sdk.ts.
export type SpanKind = 'server' | 'internal' | 'producer' | 'consumer';
export type SpanAttributes = Record<string, string | number | boolean>;

export interface Span {
  /** This span's W3C traceparent (with tracing off: the parent's, if any): what the outbox stores. */
  readonly traceparent: string | undefined;
  /** A child of this span. */
  child(name: string, attributes?: SpanAttributes): Span;
  setAttributes(attributes: SpanAttributes): void;
  /** Marks the span failed with the error's class name (never its message: it may hold payload text). */
  fail(error: unknown): void;
  end(): void;
}

export interface SpanOptions {
  /** A W3C traceparent to continue (a sender's, or one stored with an outbox message); invalid: a new trace. */
  parent?: string | null | undefined;
  kind?: SpanKind;
  attributes?: SpanAttributes;
  /** When it began (epoch ms), for a span made after the fact; else now. */
  startedAt?: number;
  /** Spans this one is related to without being their child (a claim batch). */
  links?: readonly (string | undefined)[];
}

export interface Tracer {
  /** False for `noTracing`: callers may skip building attributes. */
  readonly enabled: boolean;
  start(name: string, options?: SpanOptions): Span;
  /** Sends what is buffered (shutdown, the end of a Worker's request). */
  flush(): Promise<void>;
}

const W3C_TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
const INVALID_TRACE_ID = '0'.repeat(32);
const INVALID_SPAN_ID = '0'.repeat(16);

/** A version-00 traceparent's parts, or undefined when it is malformed or all-zero (W3C: then ignore it). */
export function parseTraceparent(
  value: string | null | undefined,
): { traceId: string; spanId: string; flags: number } | undefined {
  if (value === undefined || value === null) return undefined;
  const match = W3C_TRACEPARENT.exec(value);
  if (match === null) return undefined;
  const [, traceId = '', spanId = '', flags = '00'] = match;
  if (traceId === INVALID_TRACE_ID || spanId === INVALID_SPAN_ID) return undefined;
  return { traceId, spanId, flags: Number.parseInt(flags, 16) };
}

/** A span that records nothing; its children are itself, so an untraced delivery allocates nothing more. */
class PassThroughSpan implements Span {
  constructor(readonly traceparent: string | undefined) {}
  child(): Span {
    return this;
  }
  setAttributes(): void {}
  fail(): void {}
  end(): void {}
}

const NO_PARENT = new PassThroughSpan(undefined);

export const noTracing: Tracer = {
  enabled: false,
  start: (_name, options) =>
    parseTraceparent(options?.parent) === undefined ? NO_PARENT : new PassThroughSpan(options?.parent ?? undefined),
  flush: async () => {},
};

/** Runs `work` in a child of `parent`, ending it however `work` settles and marking a throw. */
export async function inSpan<T>(
  parent: Span,
  name: string,
  work: (span: Span) => Promise<T>,
  attributes?: SpanAttributes,
): Promise<T> {
  const span = parent.child(name, attributes);
  try {
    return await work(span);
  } catch (error) {
    span.fail(error);
    throw error;
  } finally {
    span.end();
  }
}
