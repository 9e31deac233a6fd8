import { context, createContextKey, ROOT_CONTEXT } from "@opentelemetry/api";
import {
  defaultResource,
  detectResources,
  envDetector,
  resourceFromAttributes,
  type Resource,
} from "@opentelemetry/resources";
import type { ReadableSpan, SpanProcessor } from "@opentelemetry/sdk-trace-base";
import { ATTR_SERVICE_NAME } from "@opentelemetry/semantic-conventions";
import { ExportResultCode } from "@opentelemetry/core";
import { isSpan, type ContextEvent, type Span } from "@nerva/core/context";
import { type TraceSink } from "@nerva/core/tracing";
import {
  GATHERED_BATCH_SIZE,
  MAX_EXPORT_BATCH_SIZE,
  MAX_QUEUE_SIZE,
  SpanBatcher,
} from "./batcher.js";
import { ExportWatch, WatchedExporter, droppedError, stderrReporter } from "./export-watch.js";
import { otlpExporter, protocolFromEnv } from "./exporter.js";
import { operationOf } from "./mapping.js";
import { NervaOtlpExporter } from "./otlp-proto.js";
import { parseSinkOptions, type OtelSinkOptions, type OtelSinkSettings } from "./options.js";
import { NervaReadableSpan, type ExportSettings } from "./readable-span.js";
import { withActiveSpan } from "./run-context.js";
import { load, moduleUrl } from "./module-url.js";

// src/ is one level below the package root, dist/<format>/ two.
const { version } = load(moduleUrl.endsWith(".ts") ? "../package.json" : "../../package.json") as {
  version: string;
};

/** Most events kept for spans that have not ended yet; past it the oldest span's are dropped. */
const MAX_PENDING_EVENTS = 10_000;

/**
 * A {@link TraceSink} that exports Nerva's spans to OpenTelemetry. Made by {@link createOtelSink}.
 *
 * @example
 * const sink: OtelSink = createOtelSink({ serviceName: "chat-api" });
 * await sink.forceFlush(); // rejects while exports fail
 */
export interface OtelSink extends TraceSink {
  onSpanEnd(span: Span): void;
  onEvent(event: ContextEvent): void;
  runInSpan<T>(span: Span, fn: () => T): T;
  /** Exports what is buffered; rejects (UNAVAILABLE) while exports fail. */
  forceFlush(): Promise<void>;
  /** Flushes, then shuts the span processors down; later spans are ignored. */
  shutdown(): Promise<void>;
  /** The span processors the sink hands ended spans to. */
  readonly spanProcessors: readonly SpanProcessor[];
  /** Events that could not be attached to an exported span (their span ended first, or none). */
  readonly droppedEvents: number;
  /** Spans dropped because the export queue was full (0 with your own `spanProcessors`). */
  readonly droppedSpans: number;
}

function resourceOf(o: OtelSinkSettings): Resource {
  const base = o.resource ?? defaultResource().merge(detectResources({ detectors: [envDetector] }));
  return o.serviceName === undefined
    ? base
    : base.merge(resourceFromAttributes({ [ATTR_SERVICE_NAME]: o.serviceName }));
}

const PROBE = ROOT_CONTEXT.setValue(createContextKey("@nerva/otel probe"), true);
const isProbe = (): boolean => context.active() === PROBE;

/** Whether a context manager is registered (the no-op one ignores `context.with`). */
function hasContextManager(): boolean {
  return context.with(PROBE, isProbe);
}

/** The nearest ancestor of `span` that genai mode exports, else the remote parent id, else none. */
function keptAncestor(span: Span): Span | string | null {
  let s = span;
  for (let up = s.parentSpan; up !== null; up = up.parentSpan) {
    if (operationOf(up.name) !== null) return up;
    s = up;
  }
  return s.parentId;
}

class OtelTraceSink implements OtelSink {
  readonly spanProcessors: readonly SpanProcessor[];
  readonly #settings: ExportSettings;
  readonly #genai: boolean;
  readonly #watch: ExportWatch;
  /** Our own batch queue, when the sink owns the exporter (no `spanProcessors` given). */
  readonly #batcher: SpanBatcher<Span> | null;
  /** Events by the id of their span, until it ends. */
  readonly #events = new Map<string, ContextEvent[]>();
  #pending = 0;
  /** The MCP server a `tools.call` span reached, set when its `mcp.call` child ends. */
  readonly #mcp = new WeakMap<Span, string>();
  #closed = false;
  #managed = false;
  droppedEvents = 0;

  get droppedSpans(): number {
    return this.#batcher?.droppedSpans ?? 0;
  }

  constructor(o: OtelSinkSettings) {
    const watch = (this.#watch = new ExportWatch(o.onExportError ?? stderrReporter()));
    const settings = (this.#settings = {
      resource: resourceOf(o),
      scope: { name: "@nerva/otel", version },
      captureContent: o.captureContent,
      includeUserId: o.includeUserId,
    });
    this.#genai = o.spans === "genai";
    if (o.spanProcessors !== undefined) {
      this.spanProcessors = o.spanProcessors;
      this.#batcher = null;
    } else {
      const inner = o.exporter ?? otlpExporter(protocolFromEnv());
      const exporter = new WatchedExporter(inner, watch);
      let toReadable: (item: Span | ReadableSpan) => ReadableSpan;
      let batchSize = MAX_EXPORT_BATCH_SIZE;
      if (inner instanceof NervaOtlpExporter) {
        batchSize = GATHERED_BATCH_SIZE; // it gathers batches into one request itself
        // It writes Nerva's spans itself, from the spans as they are: nothing to convert.
        inner.attach(settings, (result) => {
          if (result.code === ExportResultCode.SUCCESS) watch.succeeded();
          else watch.failed(result.error ?? new Error("the exporter reported a failure"));
        });
        toReadable = (item) => item as ReadableSpan;
      } else {
        toReadable = (item) =>
          isSpan(item) ? new NervaReadableSpan(item, settings, undefined, undefined) : item;
      }
      const onDropped = (count: number): void => watch.warn(droppedError(count, MAX_QUEUE_SIZE));
      this.#batcher = new SpanBatcher<Span>(exporter, toReadable, onDropped, batchSize);
      this.spanProcessors = [this.#batcher];
    }
  }

  onSpanEnd(span: Span): void {
    if (this.#closed) return;
    const events = this.#events.size === 0 ? undefined : this.#takeEvents(span.id);
    if (!span.sampled) return;
    const name = span.name;
    let mcpServer: string | undefined;
    if (name === "mcp.call") {
      const parent = span.parentSpan;
      const server = span.attributes.server;
      if (parent !== null && typeof server === "string") this.#mcp.set(parent, server);
    } else if (name === "tools.call") {
      mcpServer = this.#mcp.get(span);
    }
    let parent: Span | string | null | undefined;
    if (this.#genai) {
      if (operationOf(name) === null) {
        if (events !== undefined) this.#moveEvents(span, events);
        return;
      }
      parent = keptAncestor(span);
    }
    const extras =
      events === undefined && mcpServer === undefined ? undefined : { events, mcpServer };
    const batcher = this.#batcher;
    if (batcher !== null) {
      // The common case queues the span itself: it is converted when its batch is exported.
      batcher.push(
        parent === undefined && extras === undefined
          ? span
          : new NervaReadableSpan(span, this.#settings, parent, extras),
      );
      return;
    }
    const readable = new NervaReadableSpan(span, this.#settings, parent, extras);
    const processors = this.spanProcessors;
    for (let i = 0; i < processors.length; i++) processors[i]!.onEnd(readable);
  }

  onEvent(event: ContextEvent): void {
    if (this.#closed) return;
    const id = event.spanId;
    if (id === null) {
      this.droppedEvents++;
      return;
    }
    const list = this.#events.get(id);
    if (list === undefined) this.#events.set(id, [event]);
    else list.push(event);
    if (++this.#pending > MAX_PENDING_EVENTS) this.#evictOldest();
  }

  runInSpan<T>(span: Span, fn: () => T): T {
    // Without a context manager (none registered yet: no NodeSDK), OpenTelemetry has no active
    // context to set, and the work would be wasted. Once one answers, it stays assumed.
    if (!this.#managed && !(this.#managed = hasContextManager())) return fn();
    return context.with(withActiveSpan(context.active(), span), fn);
  }

  async forceFlush(): Promise<void> {
    const results = await Promise.allSettled(this.spanProcessors.map((p) => p.forceFlush()));
    for (const r of results) {
      // A failure of our own exporter was reported by the watch; a processor's own is reported here.
      if (r.status === "rejected" && this.#watch.failing === null) this.#watch.failed(r.reason);
    }
    if (this.#watch.failing !== null || results.some((r) => r.status === "rejected")) {
      throw this.#watch.error();
    }
  }

  async shutdown(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#events.clear();
    let failure: unknown = null;
    try {
      await this.forceFlush();
    } catch (err) {
      failure = err;
    }
    await Promise.allSettled(this.spanProcessors.map((p) => p.shutdown()));
    if (failure !== null) throw failure;
  }

  #takeEvents(id: string): ContextEvent[] | undefined {
    const list = this.#events.get(id);
    if (list !== undefined) {
      this.#events.delete(id);
      this.#pending -= list.length;
    }
    return list;
  }

  /** genai mode: the events of a span that is not exported go to its nearest exported ancestor. */
  #moveEvents(span: Span, events: ContextEvent[]): void {
    const target = keptAncestor(span);
    if (typeof target === "string" || target === null) {
      this.droppedEvents += events.length;
      return;
    }
    for (const e of events) this.onEvent({ ...e, spanId: target.id });
  }

  #evictOldest(): void {
    const oldest = this.#events.keys().next();
    if (oldest.done === true) return;
    const list = this.#takeEvents(oldest.value);
    this.droppedEvents += list?.length ?? 0;
  }
}

/**
 * A trace sink that exports every Nerva span as one OpenTelemetry span with the same trace and
 * span id, named and attributed by the OpenTelemetry GenAI conventions (`invoke_workflow`,
 * `invoke_agent {handler}`, `execute_tool {tool}`, `chat {model}`). Spans are converted when they
 * end and exported in batches; `runInSpan` makes the running Nerva span OpenTelemetry's active
 * span, so spans your instrumentations create inside a handler or tool nest under it. Only
 * sampled traces are exported (the caller's `traceparent` flag decides). Bad options throw
 * INVALID_OPTIONS.
 *
 * @example
 * const sink = createOtelSink({ serviceName: "chat-api" }); // OTLP/HTTP from OTEL_EXPORTER_OTLP_*
 * app.use(nervaMiddleware({ traceSink: sink }));
 * process.on("SIGTERM", () => void sink.shutdown());
 */
export function createOtelSink(options: OtelSinkOptions = {}): OtelSink {
  return new OtelTraceSink(parseSinkOptions(options));
}
