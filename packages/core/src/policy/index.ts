// Public entry of @nerva/core/policy: the PolicyEngine interface, the declarative engine (rate
// limits, budgets, approvals from a policy document) and its document format.
export {
  ApprovalStatus,
  Checkpoint,
  PolicyEffect,
  type Approval,
  type ApprovalStore,
  type PolicyAction,
  type PolicyDecision,
  type PolicyEngine,
} from "./types.js";
export { DeclarativePolicyEngine, type DeclarativePolicyOptions } from "./declarative-engine.js";
export { NoopPolicyEngine } from "./noop-engine.js";
export { InMemoryApprovalStore } from "./approvals.js";
export { decisionError, policyDelegation } from "./decision.js";
export {
  PolicyDocumentSchema,
  loadPolicyFile,
  parsePolicyDocument,
  parsePolicyText,
  type PolicyDocument,
  type PolicyDocumentInit,
} from "./document.js";
