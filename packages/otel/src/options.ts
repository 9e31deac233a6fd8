import { z } from "zod";
import { ErrorCode, parseOrThrow } from "@nerva/core";
import type { Resource } from "@opentelemetry/resources";
import type { SpanExporter, SpanProcessor } from "@opentelemetry/sdk-trace-base";

/**
 * Options of {@link createOtelSink}.
 *
 * @example
 * const options: OtelSinkOptions = { serviceName: "chat-api", spans: "genai" };
 */
export interface OtelSinkOptions {
  /**
   * Where spans go, in batches (the sink's own queue: 2048 spans, 512 per export, at least every
   * 5 s; a full batch leaves on the next turn of the event loop). Default: OTLP/HTTP protobuf configured by the
   * `OTEL_EXPORTER_OTLP_*` variables (`http://localhost:4318/v1/traces` without them).
   */
  exporter?: SpanExporter;
  /** Or: these span processors (e.g. the ones given to `NodeSDK`), instead of `exporter`. */
  spanProcessors?: SpanProcessor[];
  /** `service.name` of the resource. Default: `OTEL_SERVICE_NAME`, else OTel's default. */
  serviceName?: string;
  /** The resource of every span. Default: OTel's default resource plus `OTEL_RESOURCE_ATTRIBUTES`. */
  resource?: Resource;
  /**
   * `"all"` (default): every Nerva span. `"genai"`: only workflow, agent, tool and model spans,
   * each re-parented to its nearest exported ancestor.
   */
  spans?: "all" | "genai";
  /** Export prompts, answers and tool arguments recorded on spans. Default `false`. */
  captureContent?: boolean;
  /** Put the request's user id on spans as `enduser.id`. Default `false`. */
  includeUserId?: boolean;
  /**
   * Told about every failed export. Default: one line on stderr at most once a minute (with the
   * number of failures in between).
   */
  onExportError?: (error: Error) => void;
}

const isFn = (v: unknown): boolean => typeof v === "function";
const hasMethods =
  (...names: string[]) =>
  (v: unknown): boolean =>
    typeof v === "object" &&
    v !== null &&
    names.every((n) => isFn((v as Record<string, unknown>)[n]));

const OtelSinkOptionsSchema = z
  .object({
    exporter: z
      .custom<SpanExporter>(
        hasMethods("export", "shutdown"),
        "must be a SpanExporter (export(spans, done) and shutdown())",
      )
      .optional(),
    spanProcessors: z
      .array(
        z.custom<SpanProcessor>(
          hasMethods("onStart", "onEnd", "forceFlush", "shutdown"),
          "must be a SpanProcessor (onStart, onEnd, forceFlush, shutdown)",
        ),
      )
      .min(1)
      .optional(),
    serviceName: z.string().min(1).max(256).optional(),
    resource: z
      .custom<Resource>(hasMethods("merge"), "must be a Resource (resourceFromAttributes(...))")
      .optional(),
    spans: z.enum(["all", "genai"]).default("all"),
    captureContent: z.boolean().default(false),
    includeUserId: z.boolean().default(false),
    onExportError: z.custom<(error: Error) => void>(isFn, "must be a function").optional(),
  })
  .strict()
  .refine((o) => o.exporter === undefined || o.spanProcessors === undefined, {
    path: ["spanProcessors"],
    message: "give either exporter or spanProcessors, not both",
  });

export type OtelSinkSettings = z.output<typeof OtelSinkOptionsSchema>;

const FIX =
  'Pass { exporter?: SpanExporter, spanProcessors?: SpanProcessor[], serviceName?: string, resource?: Resource, spans?: "all" | "genai", captureContent?: boolean, includeUserId?: boolean, onExportError?: (error) => void }.';

/** Validates the options of `createOtelSink`; INVALID_OPTIONS names each bad field. */
export function parseSinkOptions(options: unknown): OtelSinkSettings {
  return parseOrThrow(
    OtelSinkOptionsSchema,
    options ?? {},
    ErrorCode.INVALID_OPTIONS,
    "options",
    FIX,
  );
}
