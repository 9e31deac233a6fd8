// Public entry of @nerva/core/router: the Router interface and its implementations (rules,
// embeddings, an LLM classifier, and a hybrid of them).
export type {
  ClassifyOptions,
  HandlerDescription,
  RouteCandidate,
  RouteResult,
  Router,
} from "./types.js";
export { RuleRouter, type RouteRule, type RuleRouterOptions } from "./rule-router.js";
export {
  EmbeddingRouter,
  type EmbedFunction,
  type EmbeddingRouterOptions,
} from "./embedding-router.js";
export { LlmRouter, type LlmClassifyFunction, type LlmRouterOptions } from "./llm-router.js";
export { HybridRouter, type HybridRouterOptions } from "./hybrid-router.js";
