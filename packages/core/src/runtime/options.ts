import { z } from "zod";
import {
  CircuitBreaker,
  CircuitBreakerOptionsSchema,
  type CircuitBreakerOptions,
} from "./circuit-breaker.js";
import type { DelegationPolicy } from "./types.js";

// The options every runtime shares (in-process, subprocess, container) and the pieces built from
// them; each runtime extends these schemas with its own fields.

const seconds = z.number().positive().finite();
/** Handler names: what routers, registries and policies refer to. */
/** What a handler name is made of (the schema below, and checks that skip the schema). */
export const HANDLER_NAME = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/;

export const HandlerNameSchema = z
  .string()
  .regex(HANDLER_NAME, "must be 1-128 letters, digits, '_', '.', ':' or '-'");

export const RuntimeOptionsSchema = z
  .object({
    timeoutSeconds: seconds.default(30),
    circuitBreaker: z.union([CircuitBreakerOptionsSchema.partial(), z.literal(false)]).default({}),
    maxDelegationDepth: z.number().int().min(1).max(100).default(5),
    delegationPolicy: z
      .custom<DelegationPolicy>((v) => typeof v === "function", "must be a function")
      .optional(),
  })
  .strict();
/** Options shared by every runtime. */
export type RuntimeOptions = z.input<typeof RuntimeOptionsSchema>;

export const HandlerOptionsSchema = z
  .object({
    timeoutSeconds: seconds.optional(),
    circuitBreaker: z.union([CircuitBreakerOptionsSchema.partial(), z.literal(false)]).optional(),
    description: z.string().max(2000).optional(),
  })
  .strict();
/** Per-handler overrides given to `register`. */
export type HandlerOptions = z.input<typeof HandlerOptionsSchema>;

/** Builds a handler's breaker from the runtime's settings and the handler's overrides. */
export function makeBreaker(
  runtimeSettings: CircuitBreakerOptions | false,
  handlerSettings: CircuitBreakerOptions | false | undefined,
): CircuitBreaker | null {
  if (handlerSettings === false || (runtimeSettings === false && handlerSettings === undefined)) {
    return null;
  }
  return new CircuitBreaker({ ...(runtimeSettings || {}), ...(handlerSettings ?? {}) });
}
