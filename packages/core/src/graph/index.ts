// Agent graphs on durable runs, in three floors: define/ (defineGraph, the node kinds, state and
// edges), execute/ (GraphExecutor: one run of a graph) and host/ (GraphHost: entry points, event
// bus, sessionState).
export {
  END,
  NodeKind,
  type EdgeSpec,
  type Graph,
  type GraphDefinition,
  type GraphNode,
  type GraphState,
  type InputRequest,
  type NodeContext,
  type Reducer,
  type EdgeRouter,
  type SharedStateView,
  type StateSchema,
  type StateUpdate,
} from "./define/types.js";
export { defineGraph } from "./define/define-graph.js";
export {
  agentNode,
  fnNode,
  inputNode,
  type AgentNodeOptions,
  type InputNodeOptions,
  type NodeOptions,
} from "./define/nodes.js";
export { Reducers } from "./define/state.js";
export { GraphExecutor, type GraphStart } from "./execute/executor.js";
export type { GraphDeps, GraphSnapshot } from "./execute/node-context.js";
export { GraphErrorCode } from "./execute/failure.js";
export type { DeliveryInfo, EventHandler, SubscribeOptions } from "./host/event-bus.js";
export type { GraphRun } from "./host/graph-run.js";
export type { SessionState } from "./host/session-state.js";
export { IsolationLevel, SharedState, type SharedStateOptions } from "./execute/shared-state.js";
export { InMemorySharedStateStore, type SharedStateStore } from "./execute/shared-state-store.js";
export type {
  EntryPointInfo,
  EntryPointSpec,
  TriggerSource,
  TriggerSpec,
} from "./host/entry-points.js";
export { GraphHost, type ResumeOptions, type TriggerOptions } from "./host/graph-host.js";
export type { GraphHostOptions } from "./host/host-options.js";
