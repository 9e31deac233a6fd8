// Public entry of @nerva/core/policy: the PolicyEngine interface, the declarative engine (rate
// limits, budgets, approvals from a policy document) and its document format. It sits above the
// folders it gathers: the declarative engine (declarative-policy/) is built on runs/, since its
// approvals are paused runs.
export {
  ApprovalStatus,
  Checkpoint,
  PolicyEffect,
  type Approval,
  type PolicyAction,
  type PolicyDecision,
  type PolicyEngine,
} from "./policy/types.js";
export {
  DeclarativePolicyEngine,
  type DeclarativePolicyOptions,
} from "./declarative-policy/declarative-engine.js";
export {
  type LimitAdmission,
  type LimitLedger,
  type LimitSettlement,
  type LimitStore,
  type LimitUsage,
  type LimitVerdict,
  type LimitWindow,
} from "./policy/limit-store.js";
export { InMemoryLimitStore } from "./policy/in-memory-limit-store.js";
export { NoopPolicyEngine } from "./policy/noop-engine.js";
export { decisionError, policyDelegation } from "./policy/decision.js";
export {
  PolicyDocumentSchema,
  loadPolicyFile,
  parsePolicyDocument,
  parsePolicyText,
  type PolicyDocument,
  type PolicyDocumentInit,
} from "./policy/document.js";
