// Public entry of @nerva/core/runtime: the in-process runtime, the runtime interface, circuit
// breakers. The subprocess and container runtimes are at @nerva/core/subprocess and /container.
export type {
  AgentHandler,
  AgentRuntime,
  DelegationPolicy,
  DelegationRequest,
  HandlerReturn,
} from "./types.js";
export {
  InProcessRuntime,
  type HandlerOptions,
  type RuntimeOptions,
} from "./in-process-runtime.js";
export {
  CircuitBreaker,
  CircuitState,
  type CircuitBreakerOptions,
  type CircuitPermit,
  type CircuitSnapshot,
} from "./circuit-breaker.js";
