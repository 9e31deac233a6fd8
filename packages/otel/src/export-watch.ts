import { ExportResultCode, type ExportResult } from "@opentelemetry/core";
import type { ReadableSpan, SpanExporter } from "@opentelemetry/sdk-trace-base";
import { ErrorCode, NervaError } from "@nerva/core";

const MINUTE_MS = 60_000;

/** The `name` of the error that reports spans dropped from a full export queue. */
export const DROPPED = "SpansDroppedError";

/** The error `onExportError` gets when the export queue was full and `count` spans were dropped. */
export function droppedError(count: number, queueSize: number): Error {
  const error = new Error(
    `${count} span${count === 1 ? "" : "s"} dropped: the export queue (${queueSize} spans) was full; exports are slower than spans are made, or failing`,
  );
  error.name = DROPPED;
  return error;
}

/**
 * The default `onExportError`: one line on stderr at most once a minute, saying how many failures
 * it did not print. Loud enough to notice a wrong endpoint, quiet enough not to flood a log.
 */
export function stderrReporter(
  write: (line: string) => void = (line) => process.stderr.write(line),
): (error: Error) => void {
  let lastMs = -Infinity;
  let unreported = 0;
  return (error) => {
    const now = Date.now();
    if (now - lastMs < MINUTE_MS) {
      unreported++;
      return;
    }
    lastMs = now;
    const more = unreported === 0 ? "" : ` (and ${unreported} more failures since the last report)`;
    unreported = 0;
    const what = error.name === DROPPED ? error.message : `span export failed: ${error.message}`;
    write(
      `[nerva/otel] ${what}${more}. Spans are being lost: check the exporter's endpoint (OTEL_EXPORTER_OTLP_ENDPOINT / OTEL_EXPORTER_OTLP_TRACES_ENDPOINT).\n`,
    );
  };
}

/**
 * Whether exports currently fail, and who is told. Fed by {@link WatchedExporter} (every export,
 * including the batch processor's timed ones that nobody awaits) and by failed flushes.
 */
export class ExportWatch {
  readonly #report: (error: Error) => void;
  #failing: Error | null = null;
  /** Failed exports since the sink was created. */
  failures = 0;

  constructor(report: (error: Error) => void) {
    this.#report = report;
  }

  /** The last export error, while no export has succeeded since. */
  get failing(): Error | null {
    return this.#failing;
  }

  succeeded(): void {
    this.#failing = null;
  }

  failed(error: unknown): void {
    const err = error instanceof Error ? error : new Error(String(error));
    this.#failing = err;
    this.failures++;
    try {
      this.#report(err);
    } catch {
      // A throwing reporter must not break the exporter's callback chain.
    }
  }

  /** Tells the reporter about a loss that is not a failed export (e.g. a full queue). */
  warn(error: Error): void {
    try {
      this.#report(error);
    } catch {
      // as in failed()
    }
  }

  /** The rejection of `forceFlush` while exports fail. */
  error(): NervaError {
    const cause = this.#failing;
    return new NervaError(
      ErrorCode.UNAVAILABLE,
      `Span export failed: ${cause?.message ?? "unknown error"} (${this.failures} failed export${this.failures === 1 ? "" : "s"} so far; their spans are lost). Check the exporter's endpoint (OTEL_EXPORTER_OTLP_ENDPOINT / OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) and that a collector listens there.`,
      { cause },
    );
  }
}

/** An exporter that tells an {@link ExportWatch} how each export went. */
export class WatchedExporter implements SpanExporter {
  readonly #inner: SpanExporter;
  readonly #watch: ExportWatch;

  constructor(inner: SpanExporter, watch: ExportWatch) {
    this.#inner = inner;
    this.#watch = watch;
  }

  export(spans: ReadableSpan[], done: (result: ExportResult) => void): void {
    const watch = this.#watch;
    try {
      this.#inner.export(spans, (result) => {
        if (result.code === ExportResultCode.SUCCESS) watch.succeeded();
        else watch.failed(result.error ?? new Error("the exporter reported a failure"));
        done(result);
      });
    } catch (err) {
      const error = err instanceof Error ? err : new Error(String(err));
      watch.failed(error);
      done({ code: ExportResultCode.FAILED, error });
    }
  }

  shutdown(): Promise<void> {
    return this.#inner.shutdown();
  }

  forceFlush(): Promise<void> {
    return this.#inner.forceFlush?.() ?? Promise.resolve();
  }
}
