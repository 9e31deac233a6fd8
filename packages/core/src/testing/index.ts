// Contract suites for implementers of Nerva interfaces: run one against your own runtime, memory
// store, registry, run store (with the run status transitions it must keep), trace sink, limit
// store or shared state store from a vitest file, and the Server-Sent Events reader a test (or a
// client) reads a stream with. Needs vitest (an optional peer dependency).
export { describeRuntimeContract, type RuntimeContractSetup } from "./runtime-contract.js";
export { describeMemoryContract, type MemoryContractSetup } from "./memory-contract.js";
export { describeRegistryContract, type RegistryContractSetup } from "./registry-contract.js";
export {
  BRIDGE_CONTRACT_JWT_SECRET,
  BRIDGE_CONTRACT_SECRET,
  createBridgeContractRoutes,
  describeBridgeContract,
  mintBridgeContractToken,
  type BridgeContractOptions,
  type BridgeContractRoutes,
  type BridgeContractServer,
  type BridgeContractSetup,
  type BridgeContractStart,
} from "./bridge-contract.js";
export { describeRunStoreContract, type RunStoreContractSetup } from "./run-store-contract.js";
export { RUN_STATUS_TRANSITIONS, checkRunTransition } from "../runs/status-transitions.js";
export {
  contractEventOf,
  contractSpanOf,
  describeTraceSinkContract,
  type TraceSinkContractEvent,
  type TraceSinkContractFactory,
  type TraceSinkContractLimits,
  type TraceSinkContractRecord,
  type TraceSinkContractSetup,
  type TraceSinkContractSpan,
} from "./trace-sink-contract.js";
export { INTERNAL_SIGNS, sendRawRequest, type RawAnswer } from "./bridge-contract-bad-clients.js";
export { readSSEEvents, type ReadSSEOptions, type SSEEvent } from "./sse-reader.js";
export {
  describeLimitStoreContract,
  type LimitStoreContractSetup,
} from "./limit-store-contract.js";
export {
  describeSharedStateStoreContract,
  type SharedStateStoreContractOptions,
  type SharedStateStoreContractSetup,
} from "./shared-state-store-contract.js";
export {
  describeAgUiBridge,
  type AgUiBridgeApp,
  type AgUiBridgeMount,
} from "./ag-ui-bridge-suite.js";
