import { z } from "zod";
import { ErrorCode, parseOrThrow } from "../errors.js";
import { AGENT_STATUSES, type AgentStatus } from "./status.js";

const stringMap = z.record(z.string(), z.string());

/** Wire schema of an AgentInput (field names are the same in TypeScript and on the wire). */
export const AgentInputSchema = z
  .object({
    message: z
      .string()
      .max(1_000_000)
      .describe("The user's message, or the previous handler's output in a chain."),
    args: stringMap.default({}).describe("Structured arguments, e.g. extracted by a router."),
    tools: z.array(stringMap).default([]).describe("Specs of the tools this invocation may use."),
    history: z
      .array(stringMap)
      .default([])
      .describe("Conversation history entries, e.g. { role, content }."),
  })
  .strict()
  .meta({ id: "AgentInput", description: "What an agent handler is asked to do." });

/** What an agent handler receives. Only `message` is required when building one. */
export interface AgentInput {
  readonly message: string;
  readonly args: Readonly<Record<string, string>>;
  readonly tools: readonly Readonly<Record<string, string>>[];
  readonly history: readonly Readonly<Record<string, string>>[];
}
/** What callers may pass where an AgentInput is expected: only `message` is required. */
export interface AgentInputInit {
  readonly message: string;
  readonly args?: Readonly<Record<string, string>>;
  readonly tools?: readonly Readonly<Record<string, string>>[];
  readonly history?: readonly Readonly<Record<string, string>>[];
}

/**
 * Validates and freezes an AgentInput; throws `NervaError` INVALID_INPUT naming the bad field.
 *
 * @example
 * const input = createAgentInput({ message: "hello", args: { lang: "en" } });
 */
export function createAgentInput(init: AgentInputInit): AgentInput {
  const input = parseOrThrow(
    AgentInputSchema,
    init,
    ErrorCode.INVALID_INPUT,
    "input",
    "Pass an object like { message: string, args?: Record<string, string>, tools?: [], history?: [] }.",
  );
  return Object.freeze(input);
}

/** JSON values, as carried in `AgentResult.data`. */
export type JsonValue =
  string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

// Spelled out rather than z.json() so the JSON Schema names the recursive definition "JsonValue".
const JsonValueSchema: z.ZodType<JsonValue, JsonValue> = z
  .lazy(() =>
    z.union([
      z.string(),
      z.number(),
      z.boolean(),
      z.null(),
      z.array(JsonValueSchema),
      z.record(z.string(), JsonValueSchema),
    ]),
  )
  .meta({ id: "JsonValue", description: "Any JSON value." });

/** Wire schema of an AgentResult: every field is required (this library always writes all five). */
export const AgentResultSchema = z
  .object({
    status: z.enum(AGENT_STATUSES),
    output: z.string().describe("The agent's response text."),
    data: z
      .record(z.string(), JsonValueSchema)
      .describe("Structured data for the caller, e.g. what a needs_data result is missing."),
    error: z.string().nullable().describe("Why it failed; null when it did not."),
    handler: z.string().describe("Name of the handler that produced the result."),
  })
  .strict()
  .meta({ id: "AgentResult", description: "The structured outcome of one agent invocation." });

/** The structured outcome of one invocation; `error` explains a failure. */
export interface AgentResult {
  readonly status: AgentStatus;
  readonly output: string;
  readonly data: Readonly<Record<string, JsonValue>>;
  readonly error: string | null;
  readonly handler: string;
}

/** Schema of what a handler may return instead of a string: any part of an AgentResult. */
export const PartialAgentResultSchema = AgentResultSchema.omit({ handler: true })
  .partial()
  .extend({ error: z.string().nullable().optional() })
  .strict();
export type PartialAgentResult = z.input<typeof PartialAgentResultSchema>;

/**
 * Builds a frozen AgentResult, filling defaults (empty output and data, no error).
 *
 * @example
 * const failed = agentResult("my_agent", { status: AgentStatus.ERROR, error: "boom" });
 */
export function agentResult(handler: string, fields: PartialAgentResult): AgentResult {
  return Object.freeze({
    status: fields.status ?? "success",
    output: fields.output ?? "",
    data: fields.data ?? {},
    error: fields.error ?? null,
    handler,
  });
}
