import { ErrorCode, NervaError } from "@nerva/core";
import type { SpanExporter } from "@opentelemetry/sdk-trace-base";
import { NervaOtlpExporter } from "./otlp-proto.js";
import { load } from "./module-url.js";

/** The OTLP encodings over HTTP this package sends. */
export type OtlpProtocol = "http/protobuf" | "http/json";

interface ExporterModule {
  OTLPTraceExporter: new (config?: { url?: string; timeoutMillis?: number }) => SpanExporter;
}

/**
 * The protocol named by `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL` or `OTEL_EXPORTER_OTLP_PROTOCOL`
 * (default `http/protobuf`). INVALID_OPTIONS for one this package does not send.
 */
export function protocolFromEnv(env: NodeJS.ProcessEnv = process.env): OtlpProtocol {
  const name = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL
    ? "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
    : "OTEL_EXPORTER_OTLP_PROTOCOL";
  const value = env[name]?.trim() || "http/protobuf";
  if (value === "http/protobuf" || value === "http/json") return value;
  throw new NervaError(
    ErrorCode.INVALID_OPTIONS,
    `Invalid ${name}: "${value}" is not sent by @nerva/otel. Use "http/protobuf" or "http/json", or pass your own exporter (createOtelSink({ exporter })).`,
    { issues: [{ path: name, message: 'must be "http/protobuf" or "http/json"' }] },
  );
}

/**
 * An OTLP/HTTP trace exporter. Without `url`, the exporter reads its endpoint, headers and
 * timeout from the `OTEL_EXPORTER_OTLP_*` variables (default `http://localhost:4318/v1/traces`).
 * Protobuf: {@link NervaOtlpExporter} (Nerva's spans written directly, the official transport);
 * JSON: OpenTelemetry's exporter.
 */
export function otlpExporter(protocol: OtlpProtocol, url?: string): SpanExporter {
  if (protocol === "http/protobuf") return new NervaOtlpExporter(url);
  // Loaded here, not imported: the exporters take ~70 ms to load, and only this path needs one.
  const mod = load("@opentelemetry/exporter-trace-otlp-http") as ExporterModule;
  return new mod.OTLPTraceExporter(url === undefined ? {} : { url });
}
