// Public entry of @nerva/core/viewer: the trace viewer, a page and a JSON API over a TraceStore,
// served by a (req, res, next?) handler the bridges' apps mount (docs/trace-viewer.md).
export {
  createTraceViewer,
  isLoopbackRequest,
  type TraceViewer,
  type TraceViewerMeter,
  type TraceViewerOptions,
  type TraceViewerStore,
  type TraceViewerUserUsage,
} from "./viewer.js";
