import { TraceStore, UsageMeter, combineSinks, type TraceSink } from "@nerva/core/tracing";
import { createTraceViewer, type TraceViewer, type TraceViewerMeter } from "@nerva/core/viewer";

/** The example apps' trace viewer: the sink their bridge reports to and the handler they mount. */
export interface ExampleTraceUI {
  /** Give it to the bridge (`traceSink`): the store, and the meter when there is one. */
  readonly traceSink: TraceSink;
  readonly store: TraceStore;
  /** Mount it on the app: answers under `viewer.basePath` (loopback clients only). */
  readonly viewer: TraceViewer;
}

/**
 * The trace viewer of an example app when `NERVA_TRACE_UI=1`, else `null`: a `TraceStore` of the
 * last 200 requests and the viewer over it, at `/_nerva/traces`, with a per-user table from
 * `meter` (default: a new `UsageMeter`; the bridge reports to it too).
 *
 * @example
 * const traceUI = traceUIFromEnv();
 * const app = createApp({ orchestrator, auth, traceSink: traceUI?.traceSink });
 * if (traceUI !== null) app.use(traceUI.viewer);
 */
export function traceUIFromEnv(
  env: Readonly<Record<string, string | undefined>> = process.env,
  options: { meter?: TraceSink & TraceViewerMeter } = {},
): ExampleTraceUI | null {
  if (env["NERVA_TRACE_UI"] !== "1") return null;
  const store = new TraceStore({ maxTraces: 200 });
  const meter = options.meter ?? new UsageMeter();
  return {
    traceSink: combineSinks(store, meter),
    store,
    viewer: createTraceViewer({ store, meter }),
  };
}
