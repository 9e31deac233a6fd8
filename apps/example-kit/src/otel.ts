import { startNervaOtel } from "@nerva/otel";
import type { TraceSink } from "@nerva/core/tracing";

/** What {@link otelFromEnv} started: the sink for the app's bridge, and how to flush it. */
export interface ExampleOtel {
  readonly traceSink: TraceSink;
  /** Flushes the last spans and stops the SDK; a failed export is printed, not thrown. */
  shutdown(): Promise<void>;
}

/**
 * OpenTelemetry export when a collector is configured (`OTEL_EXPORTER_OTLP_ENDPOINT` or
 * `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`), else `null`: the example apps' traces then go over
 * OTLP/HTTP to it, and are flushed when the app stops.
 *
 * @example
 * const otel = otelFromEnv("nerva-express-example");
 * const app = createApp({ orchestrator, auth, traceSink: otel?.traceSink });
 */
export function otelFromEnv(serviceName: string, env = process.env): ExampleOtel | null {
  if (!env.OTEL_EXPORTER_OTLP_ENDPOINT && !env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) return null;
  const otel = startNervaOtel({ serviceName: env.OTEL_SERVICE_NAME || serviceName });
  return {
    traceSink: otel.sink,
    shutdown: () =>
      otel.shutdown().catch((err: unknown) => {
        console.error(`[otel] ${err instanceof Error ? err.message : String(err)}`);
      }),
  };
}
