import { ContextKey } from "../context/local.js";
import type { RunContext } from "./run-context.js";

// Kept apart from run-context.ts so that exec-context.ts can read the slot without importing the
// runs module (and its store and transition code) into every request's path.

/** The request-local slot holding the durable run a request executes in (see `ctx.run`). */
export const kRunContext = new ContextKey<RunContext>("nerva.run");
