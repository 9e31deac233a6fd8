import { context, TraceFlags } from "@opentelemetry/api";
import { ExportResultCode, suppressTracing } from "@opentelemetry/core";
import type { ReadableSpan, SpanExporter, SpanProcessor } from "@opentelemetry/sdk-trace-base";

/**
 * OpenTelemetry's batch defaults (the `OTEL_BSP_*` defaults of the SDK specification). An
 * exporter that gathers batches into larger requests itself (the default one, see
 * NervaOtlpExporter) is handed smaller batches: see {@link GATHERED_BATCH_SIZE}.
 */
export const MAX_QUEUE_SIZE = 2048;
export const MAX_EXPORT_BATCH_SIZE = 512;
/**
 * The batch handed to an exporter that gathers its own requests: ended spans then wait for ~16
 * requests' worth of others instead of ~128, and most die young. Measured (in-process
 * `handle()` with an AsyncLocalStorage context manager, paired rounds): the sink's cost fell
 * from +14–17% to +11% of the request; 32 and 128 did worse than 64.
 */
export const GATHERED_BATCH_SIZE = 64;
const SCHEDULED_DELAY_MS = 5000;
const EXPORT_TIMEOUT_MS = 30_000;

/**
 * A batch span processor whose queue takes Nerva spans as they are (`T`), converted to
 * ReadableSpans only when their batch is exported: ending a span costs one `push`. Also a
 * regular `SpanProcessor`, so that `NodeSDK` can hand it the app's own spans, which share the
 * queue and the exporter. Unlike the SDK's `BatchSpanProcessor`, a full batch is exported on the
 * next turn of the event loop, never inside the `end()` that filled it.
 */
export class SpanBatcher<T extends object> implements SpanProcessor {
  readonly #exporter: SpanExporter;
  readonly #toReadable: (item: T | ReadableSpan) => ReadableSpan;
  readonly #onDropped: (count: number) => void;
  readonly #batchSize: number;
  #queue: (T | ReadableSpan)[] = [];
  #timer: NodeJS.Timeout | null = null;
  #soon = false;
  #exporting: Promise<void> | null = null;
  #shutdown: Promise<void> | null = null;
  #dropped = 0;
  /** Spans dropped because the queue was full, since the batcher was made. */
  droppedSpans = 0;

  constructor(
    exporter: SpanExporter,
    toReadable: (item: T | ReadableSpan) => ReadableSpan,
    onDropped: (count: number) => void,
    batchSize = MAX_EXPORT_BATCH_SIZE,
  ) {
    this.#exporter = exporter;
    this.#toReadable = toReadable;
    this.#onDropped = onDropped;
    this.#batchSize = batchSize;
  }

  /** Queues one ended span (the sink checked that its trace is sampled). */
  push(item: T | ReadableSpan): void {
    const queue = this.#queue;
    if (queue.length >= MAX_QUEUE_SIZE || this.#shutdown !== null) {
      this.#dropped++;
      this.droppedSpans++;
      return;
    }
    queue.push(item);
    if (queue.length >= this.#batchSize) this.#exportSoon();
    else if (this.#timer === null) this.#arm();
  }

  onStart(): void {}

  onEnd(span: ReadableSpan): void {
    if ((span.spanContext().traceFlags & TraceFlags.SAMPLED) !== 0) this.push(span);
  }

  /** Exports everything queued; rejects if an export failed. */
  async forceFlush(): Promise<void> {
    let failure: unknown = null;
    const record = (err: unknown): void => {
      failure ??= err;
    };
    await this.#exporting?.catch(record);
    while (this.#queue.length > 0) await this.#exportBatch().catch(record);
    // What the exporter holds back (the default one gathers batches into one request).
    await this.#exporter.forceFlush?.().catch(record);
    if (failure !== null) throw failure;
  }

  shutdown(): Promise<void> {
    return (this.#shutdown ??= this.forceFlush().finally(() => this.#exporter.shutdown()));
  }

  #arm(): void {
    this.#timer = setTimeout(() => {
      this.#timer = null;
      this.#drain();
    }, SCHEDULED_DELAY_MS);
    this.#timer.unref();
  }

  #exportSoon(): void {
    if (this.#soon) return;
    this.#soon = true;
    setImmediate(() => {
      this.#soon = false;
      this.#drain();
    });
  }

  /** Exports batch after batch, one at a time, while there are spans (full batches first). */
  #drain(): void {
    if (this.#exporting !== null || this.#queue.length === 0) return;
    if (this.#timer !== null) {
      clearTimeout(this.#timer);
      this.#timer = null;
    }
    // Failures are reported by the exporter's watch; a rejection here needs no other handler.
    this.#exporting = this.#exportBatch()
      .catch(() => undefined)
      .finally(() => {
        this.#exporting = null;
        // Full batches follow at once (not a turn each: small batches would fall behind a
        // burst of spans between two turns, and the queue would drop).
        if (this.#queue.length >= this.#batchSize) this.#drain();
        else if (this.#queue.length > 0 && this.#timer === null) this.#arm();
      });
  }

  #exportBatch(): Promise<void> {
    const items = this.#queue.splice(0, this.#batchSize);
    if (this.#dropped > 0) {
      const dropped = this.#dropped;
      this.#dropped = 0;
      this.#onDropped(dropped);
    }
    if (items.length === 0) return Promise.resolve();
    const spans = items.map(this.#toReadable);
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`span export timed out after ${EXPORT_TIMEOUT_MS} ms`)),
        EXPORT_TIMEOUT_MS,
      );
      timer.unref();
      // The export's own HTTP request is not traced (an HTTP instrumentation would see it).
      context.with(suppressTracing(context.active()), () => {
        this.#exporter.export(spans, (result) => {
          clearTimeout(timer);
          if (result.code === ExportResultCode.SUCCESS) resolve();
          else reject(result.error ?? new Error("the exporter reported a failure"));
        });
      });
    });
  }
}
