// Public entry of @nerva/ai-sdk, grouped by primitive. Anything not exported here is internal.

// Models
export { createModel, normaliseProvider } from "./model.js";
export type { CallOptions, ModelOptions, ModelResult, NervaModel } from "./types.js";
export type { ModelUsage } from "./usage.js";

// Prices
export { PriceTable, type ModelPrice, type PricedUsage } from "./prices.js";
