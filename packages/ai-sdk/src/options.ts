import { z } from "zod/v4";
import { ErrorCode, parseOrThrow } from "@nerva/core";
import { RetryOptionsSchema, type RetryPolicy } from "@nerva/core/runs";
import { MIN_SECRET_LENGTH } from "./secrets.js";

/**
 * The adapter's retry defaults, in the runs' shape: 3 attempts in all (2 retries), 0.5 s doubling,
 * jitter over the upper half of each wait; no wait, a provider's retry-after included, above 60 s.
 */
export const MODEL_RETRY_DEFAULTS: RetryPolicy = {
  maxAttempts: 3,
  initialDelaySeconds: 0.5,
  backoffFactor: 2,
  maxDelaySeconds: 60,
  jitter: 0.5,
};

const isFn = (v: unknown): boolean => typeof v === "function";

export const ModelOptionsSchema = z
  .object({
    prices: z
      .custom<object>(
        (v) =>
          typeof v === "object" && v !== null && isFn((v as { costOrNull?: unknown }).costOrNull),
        "must be a PriceTable",
      )
      .optional(),
    unknownPrice: z.enum(["zero", "throw"]).default("zero"),
    // Checked by modelRetryPolicy with the runs' RetryOptionsSchema.
    retry: z
      .custom<object>(
        (v) => typeof v === "object" && v !== null && !Array.isArray(v),
        "must be an object",
      )
      .optional(),
    recordContent: z.boolean().default(false),
    allowGateway: z.boolean().default(false),
    random: z.custom<() => number>(isFn, "must be a function").optional(),
    secrets: z
      .array(z.string().min(MIN_SECRET_LENGTH, `must be at least ${MIN_SECRET_LENGTH} characters`))
      .max(100)
      .default([]),
  })
  .strict();

export const MODEL_OPTIONS_FIX =
  'Pass { prices?: PriceTable, unknownPrice?: "zero" | "throw", retry?: { maxAttempts, initialDelaySeconds, backoffFactor, maxDelaySeconds, jitter }, recordContent?: boolean, allowGateway?: boolean, secrets?: string[] (each 8+ characters) }.';

/**
 * `retry` of the model options after its defaults, validated by the runs' own schema (one shape
 * for every retry policy): INVALID_OPTIONS naming `options.retry.<field>` otherwise.
 */
export function modelRetryPolicy(retry: unknown): RetryPolicy {
  return parseOrThrow(
    RetryOptionsSchema,
    { ...MODEL_RETRY_DEFAULTS, ...definedFields(retry) },
    ErrorCode.INVALID_OPTIONS,
    "options.retry",
    MODEL_OPTIONS_FIX,
  );
}

function definedFields(o: unknown): Record<string, unknown> {
  if (typeof o !== "object" || o === null) return {};
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));
}

const messageSchema = z.custom<object>(
  (v) => typeof v === "object" && v !== null && typeof (v as { role?: unknown }).role === "string",
  "must be a message { role, content }",
);

export const CallOptionsSchema = z
  .object({
    system: z.string().optional(),
    prompt: z.string().optional(),
    messages: z.array(messageSchema).optional(),
    tools: z.record(z.string(), z.unknown()).optional(),
    toolChoice: z.unknown().optional(),
    maxSteps: z.number().int().min(1).max(100).optional(),
    output: z
      .custom<z.ZodType>(
        (v) =>
          typeof v === "object" &&
          v !== null &&
          "_zod" in v &&
          isFn((v as { safeParse?: unknown }).safeParse),
        "must be a zod 4 schema, e.g. z.object({ city: z.string() })",
      )
      .optional(),
    temperature: z.number().finite().optional(),
    maxOutputTokens: z.number().int().positive().optional(),
    topP: z.number().finite().optional(),
    topK: z.number().finite().optional(),
    presencePenalty: z.number().finite().optional(),
    frequencyPenalty: z.number().finite().optional(),
    stopSequences: z.array(z.string()).optional(),
    seed: z.number().int().optional(),
    providerOptions: z.record(z.string(), z.unknown()).optional(),
    reasoning: z.boolean().optional(),
    beforeStep: z.custom<() => unknown>(isFn, "must be a function").optional(),
  })
  .strict()
  .refine((o) => (o.prompt === undefined) !== (o.messages === undefined), {
    path: ["prompt"],
    message: "pass exactly one of prompt or messages",
  });

export const CALL_OPTIONS_FIX =
  "Pass { system?, prompt: string } or { system?, messages: [{ role, content }] }, plus optional tools, maxSteps (1-100), output (a zod schema) and sampling settings.";

const FAST_KEYS: ReadonlySet<string> = new Set([
  "prompt",
  "system",
  "tools",
  "maxSteps",
  "maxOutputTokens",
  "temperature",
  "beforeStep",
]);

/**
 * True for the common shape of call options — a string prompt, an optional string system,
 * tools, maxSteps, beforeStep, temperature, maxOutputTokens, all of the right type — which then
 * skip the schema (it costs more than the rest of the adapter's bookkeeping). Anything else goes
 * through {@link CallOptionsSchema}, which also writes the errors.
 */
export function isPlainCall(o: unknown): boolean {
  if (typeof o !== "object" || o === null) return false;
  const c = o as Record<string, unknown>;
  for (const k in c) {
    const v = c[k];
    if (v === undefined && FAST_KEYS.has(k)) continue;
    switch (k) {
      case "prompt":
      case "system":
        if (typeof v !== "string") return false;
        break;
      case "tools":
        if (typeof v !== "object" || v === null || Array.isArray(v)) return false;
        break;
      case "maxSteps":
        if (!Number.isInteger(v) || (v as number) < 1 || (v as number) > 100) return false;
        break;
      case "maxOutputTokens":
        if (!Number.isSafeInteger(v) || (v as number) < 1) return false;
        break;
      case "temperature":
        if (typeof v !== "number" || !Number.isFinite(v)) return false;
        break;
      case "beforeStep":
        if (typeof v !== "function") return false;
        break;
      default:
        return false;
    }
  }
  return typeof c["prompt"] === "string";
}
