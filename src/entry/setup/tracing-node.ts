// Tracing on Node: the SDK's own OTLP/HTTP exporters (node:http, with their retries, and the
// headers, timeout, compression and certificates they read from the process environment) behind
// the portable wiring of tracing-sdk.ts. `http/json` is the protobuf exporter's construction with
// the SDK's JSON serializer: exporter-trace-otlp-http has no release on this SDK's line
// (docs/decisions/0012-opentelemetry-behind-a-seam.md).
import { OTLPTraceExporter as ProtobufTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { OTLPExporterBase } from '@opentelemetry/otlp-exporter-base';
import { convertLegacyHttpOptions, createOtlpHttpExportDelegate } from '@opentelemetry/otlp-exporter-base/node-http';
import { JsonTraceSerializer, TraceExporterMetricsHelper } from '@opentelemetry/otlp-transformer';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace';
import { type ExporterFactory, type Tracing, type TracingEnv, tracingWith } from './tracing-sdk.ts';

class JsonTraceExporter extends OTLPExporterBase<ReadableSpan[]> implements SpanExporter {
  constructor(url: string) {
    super(
      createOtlpHttpExportDelegate(
        convertLegacyHttpOptions({ url }, 'TRACES', 'v1/traces', { 'Content-Type': 'application/json' }),
        JsonTraceSerializer,
        'otlp_http_span_exporter',
        TraceExporterMetricsHelper,
        undefined,
      ),
    );
  }
}

export const nodeTraceExporter: ExporterFactory = (url, protocol) =>
  protocol === 'http/json' ? new JsonTraceExporter(url) : new ProtobufTraceExporter({ url });

/** The Node process's tracing from its environment (see tracing-sdk.ts). */
export const tracingFromEnv = (env: TracingEnv): Tracing => tracingWith(env, nodeTraceExporter);
