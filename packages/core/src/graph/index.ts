// Agent graphs on durable runs: defineGraph, the node kinds, GraphExecutor, GraphHost
// (entry points, event bus, sessionState, shared state) and AgentRunner.
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
} from "./types.js";
export { defineGraph } from "./define-graph.js";
export {
  agentNode,
  fnNode,
  inputNode,
  type AgentNodeOptions,
  type InputNodeOptions,
  type NodeOptions,
} from "./nodes.js";
export { Reducers } from "./state.js";
export { GraphExecutor, type GraphStart } from "./executor.js";
export type { GraphDeps, GraphSnapshot } from "./node-context.js";
export { GraphErrorCode } from "./failure.js";
export type { DeliveryInfo, EventHandler, SubscribeOptions } from "./event-bus.js";
export type { GraphRun } from "./graph-run.js";
export type { SessionState } from "./session-state.js";
export { IsolationLevel, SharedState, type SharedStateOptions } from "./shared-state.js";
export type { EntryPointInfo, EntryPointSpec, TriggerSource, TriggerSpec } from "./entry-points.js";
export { GraphHost, type ResumeOptions, type TriggerOptions } from "./graph-host.js";
export type { GraphHostOptions } from "./host-options.js";
export {
  AgentConfigSchema,
  AgentRunner,
  type AgentConfig,
  type AgentModule,
  type AgentRunnerOptions,
} from "./agent-runner.js";
