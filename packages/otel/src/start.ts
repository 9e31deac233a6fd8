import { ErrorCode, NervaError, parseOrThrow } from "@nerva/core";
import { z } from "zod";
import {
  defaultResource,
  detectResources,
  envDetector,
  hostDetector,
  processDetector,
  resourceFromAttributes,
} from "@opentelemetry/resources";
import { ATTR_SERVICE_NAME } from "@opentelemetry/semantic-conventions";
import { otlpExporter, protocolFromEnv, type OtlpProtocol } from "./exporter.js";
import type { OtelSinkOptions } from "./options.js";
import { createOtelSink, type OtelSink } from "./otel-sink.js";
import { load } from "./module-url.js";

/**
 * Options of {@link startNervaOtel}.
 *
 * @example
 * const options: StartNervaOtelOptions = { serviceName: "chat-api", url: "http://127.0.0.1:4318/v1/traces" };
 */
export interface StartNervaOtelOptions extends Pick<
  OtelSinkOptions,
  "spans" | "captureContent" | "includeUserId" | "onExportError"
> {
  /** `service.name` of every span, Nerva's and your instrumentations'. */
  serviceName: string;
  /**
   * The full OTLP/HTTP traces endpoint (`.../v1/traces`). Default: from `OTEL_EXPORTER_OTLP_*`,
   * else `http://localhost:4318/v1/traces`.
   */
  url?: string;
  /** Default: `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL` / `OTEL_EXPORTER_OTLP_PROTOCOL`, else protobuf. */
  protocol?: OtlpProtocol;
}

/** What {@link startNervaOtel} started. */
export interface NervaOtel {
  /** The trace sink for `ExecContext.create({ traceSink })` or a bridge's `traceSink` option. */
  readonly sink: OtelSink;
  /**
   * The started `NodeSDK` of `@opentelemetry/sdk-node` (global tracer provider, context manager
   * and propagator), typed by what Nerva needs of it so that apps which never call
   * `startNervaOtel` need not install that package.
   */
  readonly sdk: { shutdown(): Promise<void> };
  /** Flushes and stops both; rejects (UNAVAILABLE) if the last spans could not be exported. */
  shutdown(): Promise<void>;
}

const StartSchema = z
  .object({
    serviceName: z.string().min(1).max(256),
    url: z
      .string()
      .refine((u) => /^https?:\/\/[^/]/.test(u) && URL.canParse(u), "must be an http(s) URL")
      .optional(),
    protocol: z.enum(["http/protobuf", "http/json"]).optional(),
    spans: z.enum(["all", "genai"]).optional(),
    captureContent: z.boolean().optional(),
    includeUserId: z.boolean().optional(),
    onExportError: z.custom<(error: Error) => void>((v) => typeof v === "function").optional(),
  })
  .strict();

const FIX =
  'Pass { serviceName: string, url?: "http://host:4318/v1/traces", protocol?: "http/protobuf" | "http/json", spans?, captureContent?, includeUserId?, onExportError? }.';

/**
 * Starts OpenTelemetry's `NodeSDK` for traces and a Nerva sink on the same span processor, in
 * one call: one OTLP/HTTP exporter, one resource, so Nerva's spans and your instrumentations'
 * (HTTP, database) land in one tree. Registers the global tracer provider, the AsyncLocalStorage
 * context manager and the W3C propagator. Metrics and logs are left off: for those, build your
 * own `NodeSDK` and give its span processors to `createOtelSink({ spanProcessors })`.
 *
 * @example
 * const otel = startNervaOtel({ serviceName: "chat-api" });
 * app.use(nervaMiddleware({ traceSink: otel.sink, traceparentFrom: activeTraceparent }));
 * process.on("SIGTERM", () => void otel.shutdown());
 */
export function startNervaOtel(options: StartNervaOtelOptions): NervaOtel {
  const o = parseOrThrow(StartSchema, options, ErrorCode.INVALID_OPTIONS, "options", FIX);
  const resource = defaultResource()
    .merge(detectResources({ detectors: [envDetector, processDetector, hostDetector] }))
    .merge(resourceFromAttributes({ [ATTR_SERVICE_NAME]: o.serviceName }));
  const sink = createOtelSink({
    exporter: otlpExporter(o.protocol ?? protocolFromEnv(), o.url),
    resource,
    ...(o.spans === undefined ? {} : { spans: o.spans }),
    ...(o.captureContent === undefined ? {} : { captureContent: o.captureContent }),
    ...(o.includeUserId === undefined ? {} : { includeUserId: o.includeUserId }),
    ...(o.onExportError === undefined ? {} : { onExportError: o.onExportError }),
  });
  // @opentelemetry/sdk-node (~50 MB, every exporter it supports, ~180 ms to load) is an optional
  // peer dependency: only this function needs it.
  const { NodeSDK: SDK } = loadSdkNode();
  const sdk = new SDK({
    resource,
    autoDetectResources: false,
    spanProcessors: [...sink.spanProcessors],
    metricReaders: [],
    logRecordProcessors: [],
  });
  sdk.start();
  return {
    sink,
    sdk,
    async shutdown() {
      let failure: unknown = null;
      try {
        await sink.shutdown();
      } catch (err) {
        failure = err;
      }
      try {
        await sdk.shutdown();
      } catch (err) {
        failure ??= err;
      }
      if (failure !== null) throw failure;
    },
  };
}

/** The optional `@opentelemetry/sdk-node`, or MISSING_DEPENDENCY naming it. */
function loadSdkNode(): typeof import("@opentelemetry/sdk-node") {
  const name = "@opentelemetry/sdk-node";
  try {
    return load(name) as typeof import("@opentelemetry/sdk-node");
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    if (code !== "MODULE_NOT_FOUND" || !String((err as Error).message).includes(name)) throw err;
    const install = `npm install ${name}@0.223.0`;
    throw new NervaError(
      ErrorCode.MISSING_DEPENDENCY,
      `startNervaOtel needs the optional package "${name}", which is not installed. Install it next to @nerva/otel: ${install} (or use createOtelSink with your own tracer provider).`,
      { cause: err, details: { package: name, install } },
    );
  }
}
