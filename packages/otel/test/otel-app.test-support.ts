// An app's own OpenTelemetry setup as the tests need it: the AsyncLocalStorage context manager
// and a tracer provider, registered globally (each test file runs in its own process), whose
// processors are shared with the Nerva sink so that both kinds of span land in one exporter.
import { context, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { BasicTracerProvider, type SpanProcessor } from "@opentelemetry/sdk-trace-base";

/** Registers a context manager and a tracer provider exporting through `processor`. */
export function registerAppTracing(processor: SpanProcessor): () => Promise<void> {
  const manager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(manager);
  const provider = new BasicTracerProvider({ spanProcessors: [processor] });
  trace.setGlobalTracerProvider(provider);
  return async () => {
    trace.disable();
    context.disable();
    await provider.shutdown();
  };
}

/** The tracer an app (or an instrumentation library) would use. */
export const appTracer = () => trace.getTracer("app");
