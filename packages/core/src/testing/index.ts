// Test helpers for implementers of Nerva interfaces. Needs vitest (an optional peer dependency).
export { describeRuntimeContract, type RuntimeContractSetup } from "./runtime-contract.js";
