// The OpenTelemetry SDK behind the tracing seam (src/lib/tracing.ts), imported only by the entries
// and the tests: a BasicTracerProvider with a BatchSpanProcessor and an OTLP/HTTP exporter, built
// from the standard OTEL_* variables. Without OTEL_EXPORTER_OTLP_ENDPOINT (or its _TRACES_ twin)
// nothing is built and `noTracing` is answered: no provider, no exporter, nothing sent. No global
// provider is registered either: spans are made through the seam, parented explicitly. Portable:
// the exporter is the runtime's (tracing-node.ts on Node; `fetchTraceExporter` in workerd).
import {
  type Link,
  type Span as OtelSpan,
  type Tracer as OtelTracer,
  ROOT_CONTEXT,
  type SpanContext,
  SpanKind,
  SpanStatusCode,
  trace,
} from '@opentelemetry/api';
import { type ExportResult, ExportResultCode, parseKeyPairsIntoRecord } from '@opentelemetry/core';
import { JsonTraceSerializer, ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  TracerProvider as BasicTracerProvider,
  BatchSpanProcessor,
  type ReadableSpan,
  type SpanExporter,
} from '@opentelemetry/sdk-trace';
import { ConfigError } from '../../config.ts';
import { errorName } from '../../lib/errors.ts';
import {
  noTracing,
  parseTraceparent,
  type Span,
  type SpanAttributes,
  type SpanOptions,
  type Tracer,
} from '../../lib/tracing.ts';

export type TracingEnv = Readonly<Record<string, string | undefined>>;

export const DEFAULT_SERVICE_NAME = 'webhook-inbox';
const OTLP_PROTOCOLS = ['http/protobuf', 'http/json'] as const;
export type OtlpProtocol = (typeof OTLP_PROTOCOLS)[number];

/** Makes the runtime's exporter for the traces URL, protocol and variables. */
export type ExporterFactory = (url: string, protocol: OtlpProtocol, env: TracingEnv) => SpanExporter;

const set = (env: TracingEnv, name: string) => {
  const value = env[name]?.trim();
  return value === undefined || value === '' ? undefined : value;
};

/** Where spans go: the traces endpoint as given, else the base endpoint + `/v1/traces` (the spec's rule). */
export function tracesUrl(env: TracingEnv): string | undefined {
  const specific = set(env, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT');
  if (specific !== undefined) return specific;
  const base = set(env, 'OTEL_EXPORTER_OTLP_ENDPOINT');
  return base === undefined ? undefined : `${base.replace(/\/+$/, '')}/v1/traces`;
}

function protocolOf(env: TracingEnv): OtlpProtocol {
  const value = set(env, 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL') ?? set(env, 'OTEL_EXPORTER_OTLP_PROTOCOL');
  if (value === undefined) return 'http/protobuf';
  const known = OTLP_PROTOCOLS.find((protocol) => protocol === value);
  if (known === undefined) {
    throw new ConfigError([
      `OTEL_EXPORTER_OTLP_PROTOCOL must be http/protobuf or http/json (grpc is not supported), got ${value}`,
    ]);
  }
  return known;
}

/** OTEL_BSP_* as the spec names them; the SDK's own defaults where one is unset. */
function batchOptions(env: TracingEnv) {
  const count = (name: string) => {
    const value = set(env, name);
    if (value === undefined) return undefined;
    const parsed = Number(value);
    if (!Number.isInteger(parsed) || parsed <= 0)
      throw new ConfigError([`${name} must be a positive integer, got ${value}`]);
    return parsed;
  };
  const options = {
    maxQueueSize: count('OTEL_BSP_MAX_QUEUE_SIZE'),
    maxExportBatchSize: count('OTEL_BSP_MAX_EXPORT_BATCH_SIZE'),
    scheduledDelayMillis: count('OTEL_BSP_SCHEDULE_DELAY'),
    exportTimeoutMillis: count('OTEL_BSP_EXPORT_TIMEOUT'),
  };
  return Object.fromEntries(Object.entries(options).filter(([, value]) => value !== undefined));
}

/**
 * OTLP/HTTP over `fetch`, for workerd (where the SDK's Node exporter has no `node:http` and its
 * browser one asks for `keepalive`): one POST per batch, with OTEL_EXPORTER_OTLP_HEADERS, and no
 * retry (a lost batch of spans is not worth a request's time). The Worker flushes after each
 * request inside `waitUntil`, so the export runs in a request's context.
 */
export const fetchTraceExporter: ExporterFactory = (url, protocol, env) => {
  const serializer = protocol === 'http/json' ? JsonTraceSerializer : ProtobufTraceSerializer;
  const headers = {
    ...parseKeyPairsIntoRecord(set(env, 'OTEL_EXPORTER_OTLP_TRACES_HEADERS') ?? set(env, 'OTEL_EXPORTER_OTLP_HEADERS')),
    'content-type': protocol === 'http/json' ? 'application/json' : 'application/x-protobuf',
  };
  const pending = new Set<Promise<void>>();
  const send = async (spans: ReadableSpan[]): Promise<ExportResult> => {
    const body = serializer.serializeRequest(spans);
    if (body === undefined) return { code: ExportResultCode.FAILED };
    try {
      const response = await fetch(url, { method: 'POST', headers, body });
      await response.body?.cancel();
      return { code: response.ok ? ExportResultCode.SUCCESS : ExportResultCode.FAILED };
    } catch (error) {
      return { code: ExportResultCode.FAILED, error: error instanceof Error ? error : new Error(String(error)) };
    }
  };
  return {
    export(spans, done) {
      const sent = send(spans).then(done);
      pending.add(sent);
      void sent.finally(() => pending.delete(sent));
    },
    forceFlush: async () => {
      await Promise.all(pending);
    },
    shutdown: async () => {
      await Promise.all(pending);
    },
  };
};

const KINDS = {
  server: SpanKind.SERVER,
  internal: SpanKind.INTERNAL,
  producer: SpanKind.PRODUCER,
  consumer: SpanKind.CONSUMER,
} as const;

function traceparentOf(context: SpanContext): string {
  return `00-${context.traceId}-${context.spanId}-${(context.traceFlags & 1).toString(16).padStart(2, '0')}`;
}

function remoteContext(traceparent: string | null | undefined): SpanContext | undefined {
  const parsed = parseTraceparent(traceparent);
  return parsed === undefined
    ? undefined
    : { traceId: parsed.traceId, spanId: parsed.spanId, traceFlags: parsed.flags, isRemote: true };
}

class SdkSpan implements Span {
  readonly traceparent: string;
  constructor(
    private readonly tracer: OtelTracer,
    private readonly span: OtelSpan,
  ) {
    this.traceparent = traceparentOf(span.spanContext());
  }
  child(name: string, attributes?: SpanAttributes): Span {
    const parent = trace.setSpan(ROOT_CONTEXT, this.span);
    return new SdkSpan(
      this.tracer,
      this.tracer.startSpan(name, attributes === undefined ? {} : { attributes }, parent),
    );
  }
  setAttributes(attributes: SpanAttributes): void {
    this.span.setAttributes(attributes);
  }
  fail(error: unknown): void {
    this.span.setStatus({ code: SpanStatusCode.ERROR, message: errorName(error) });
  }
  end(): void {
    this.span.end();
  }
}

/** The SDK's tracer behind the seam, for a provider the caller owns (and shuts down). */
export function sdkTracer(provider: BasicTracerProvider): Tracer {
  const tracer = provider.getTracer(DEFAULT_SERVICE_NAME);
  return {
    enabled: true,
    start(name: string, options: SpanOptions = {}) {
      const parent = remoteContext(options.parent);
      const context = parent === undefined ? ROOT_CONTEXT : trace.setSpanContext(ROOT_CONTEXT, parent);
      const links: Link[] = [];
      for (const link of options.links ?? []) {
        const linked = remoteContext(link);
        if (linked !== undefined) links.push({ context: linked });
      }
      const span = tracer.startSpan(
        name,
        {
          kind: KINDS[options.kind ?? 'internal'],
          ...(options.attributes === undefined ? {} : { attributes: options.attributes }),
          ...(options.startedAt === undefined ? {} : { startTime: options.startedAt }),
          links,
        },
        context,
      );
      return new SdkSpan(tracer, span);
    },
    flush: () => provider.forceFlush(),
  };
}

export interface Tracing {
  tracer: Tracer;
  /** Flushes what is buffered and stops the exporter: the process's last step. */
  shutdown(): Promise<void>;
}

/**
 * The tracer the standard variables ask for: `noTracing` when no OTLP endpoint is set, else the SDK
 * exporting over OTLP/HTTP (`http/protobuf` unless OTEL_EXPORTER_OTLP_PROTOCOL says `http/json`)
 * through the runtime's exporter.
 */
export function tracingWith(env: TracingEnv, exporterFor: ExporterFactory): Tracing {
  const url = tracesUrl(env);
  if (url === undefined) return { tracer: noTracing, shutdown: async () => {} };
  const exporter = exporterFor(url, protocolOf(env), env);
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': set(env, 'OTEL_SERVICE_NAME') ?? DEFAULT_SERVICE_NAME }),
    spanProcessors: [new BatchSpanProcessor({ exporter, ...batchOptions(env) })],
  });
  return { tracer: sdkTracer(provider), shutdown: () => provider.shutdown() };
}
