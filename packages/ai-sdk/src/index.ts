// Public entry of @nerva/ai-sdk, grouped by primitive. Anything not exported here is internal.

// Models
export { createModel, normaliseProvider } from "./model.js";
export type { CallOptions, ModelOptions, ModelResult, NervaModel } from "./types.js";
export type { ModelUsage } from "./usage.js";

// Prices
export { PriceTable, type ModelPrice, type PricedUsage } from "./prices.js";

// Agents and tools
export { modelAgent, type ModelAgentOptions } from "./agent.js";
export { modelNode, type ModelNodeAnswer, type ModelNodeOptions } from "./model-node.js";
export type { ModelLoopOptions } from "./model-call.js";
export { providerNames, toolsFor, type ToolFailure, type ToolSource } from "./tools.js";

// Router and responder
export { llmClassify, type LlmClassifyOptions } from "./classify.js";
export { ModelResponder, type ModelResponderOptions } from "./responder.js";
