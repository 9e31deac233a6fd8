// Public entry of @nerva/core/ag-ui: a run's events as AG-UI events (the protocol of
// @ag-ui/core 1.0, encoded by @ag-ui/encoder: optional peer dependencies), and the route an
// AG-UI client (`HttpAgent`) posts its RunAgentInput to, over durable runs.

// The adapter: events → AG-UI events → SSE
export type { AgUiEvent } from "./events.js";
export {
  toAgUiEvents,
  writeAgUiStream,
  type AgUiMessage,
  type AgUiStreamOptions,
} from "./stream.js";
export { parseRunAgentInput, type AgUiRunInput } from "./input.js";

// The route (POST /ag-ui)
export { createAgUiRoute, type AgUiRoute, type AgUiRouteOptions } from "./route.js";
