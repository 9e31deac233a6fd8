import { z } from "zod";
import { ErrorCode, parseOrThrow } from "../errors.js";
import { checkUntrustedJson } from "../internal/json-limits.js";
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
 * Validates an AgentInput; throws `NervaError` INVALID_INPUT naming the bad field.
 *
 * @example
 * const input = createAgentInput({ message: "hello", args: { lang: "en" } });
 */
export function createAgentInput(init: AgentInputInit): AgentInput {
  if (init instanceof ValidatedInput) return init;
  const input = parseOrThrow(
    AgentInputSchema,
    init,
    ErrorCode.INVALID_INPUT,
    "input",
    "Pass an object like { message: string, args?: Record<string, string>, tools?: [], history?: [] }.",
  );
  return new ValidatedInput(input.message, input.args, input.tools, input.history);
}

const NO_ARGS: Readonly<Record<string, string>> = Object.freeze({});
const NO_ITEMS: readonly Readonly<Record<string, string>>[] = Object.freeze([]);

/**
 * An AgentInput that passed validation. The class is the mark: runtimes pass such inputs on
 * (chains, delegation) without validating them again. Not exported from the package. Read-only by
 * type, not frozen: `Object.freeze` is a call into the engine on every invocation.
 */
export class ValidatedInput implements AgentInput {
  readonly message: string;
  readonly args: Readonly<Record<string, string>>;
  readonly tools: readonly Readonly<Record<string, string>>[];
  readonly history: readonly Readonly<Record<string, string>>[];

  constructor(
    message: string,
    args: Readonly<Record<string, string>> = NO_ARGS,
    tools: readonly Readonly<Record<string, string>>[] = NO_ITEMS,
    history: readonly Readonly<Record<string, string>>[] = NO_ITEMS,
  ) {
    this.message = message;
    this.args = args;
    this.tools = tools;
    this.history = history;
  }
}

/** JSON values, as carried in `AgentResult.data`. */
export type JsonValue =
  string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

// Spelled out rather than z.json() so the JSON Schema names the recursive definition "JsonValue".
export const JsonValueSchema: z.ZodType<JsonValue, JsonValue> = z
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

const resultFields = {
  output: z.string().describe("The agent's response text."),
  data: z
    .record(z.string(), JsonValueSchema)
    .describe("Structured data for the caller, e.g. what a needs_data result is missing."),
  error: z.string().nullable().describe("Why it failed; null when it did not."),
};

/**
 * Wire schema of an AgentResult, as Nerva's published spec has it: only `status` is required;
 * a missing `output` reads as "", `data` as {}, `error` as null, `handler` as "" (see
 * {@link parseAgentResult}). This library always writes all five fields. Unknown fields are
 * ignored when reading.
 */
export const AgentResultSchema = z
  .object({
    status: z.enum(AGENT_STATUSES).describe("Outcome of the invocation."),
    output: resultFields.output.optional(),
    data: resultFields.data.optional(),
    error: resultFields.error.optional(),
    handler: z.string().optional().describe("Name of the handler that produced the result."),
  })
  .meta({ id: "AgentResult", description: "The structured outcome of one agent invocation." });

/** The structured outcome of one invocation; `error` explains a failure. */
export interface AgentResult {
  readonly status: AgentStatus;
  readonly output: string;
  readonly data: Readonly<Record<string, JsonValue>>;
  readonly error: string | null;
  readonly handler: string;
}

/**
 * What a handler may return instead of a string: any part of an AgentResult. Stricter than the
 * wire: an unknown field is refused, so a typo (`ouptut`) is an error rather than lost.
 */
export const PartialAgentResultSchema = z
  .object({
    status: z.enum(AGENT_STATUSES).optional(),
    output: resultFields.output.optional(),
    data: resultFields.data.optional(),
    error: resultFields.error.optional(),
  })
  .strict();
export type PartialAgentResult = z.input<typeof PartialAgentResultSchema>;

/**
 * Reads an AgentResult from its wire form (e.g. another implementation's JSON), filling the
 * optional fields. Throws INVALID_INPUT naming the bad field, or saying the value nests deeper
 * than 64 levels or holds more than a million values (checked before anything recurses).
 *
 * @example
 * const result = parseAgentResult(JSON.parse('{"status":"success","output":"hi"}'), "my_agent");
 */
export function parseAgentResult(wire: unknown, handler = ""): AgentResult {
  // Untrusted JSON: bound it (iteratively) before the schema recurses into `data`.
  checkUntrustedJson(wire, "result", "Send a result nested at most 64 levels deep.");
  const r = parseOrThrow(
    AgentResultSchema,
    wire,
    ErrorCode.INVALID_INPUT,
    "result",
    "Send { status, output?, data?, error?, handler? } with status one of the AgentStatus values.",
  );
  return agentResult(r.handler ?? handler, r);
}

const NO_DATA: Readonly<Record<string, JsonValue>> = Object.freeze({});

/**
 * Builds an AgentResult, filling defaults (empty output and data, no error). Read-only by type;
 * not frozen, since one is built per invocation.
 *
 * @example
 * const failed = agentResult("my_agent", { status: AgentStatus.ERROR, error: "boom" });
 */
export function agentResult(handler: string, fields: PartialAgentResult): AgentResult {
  return {
    status: fields.status ?? "success",
    output: fields.output ?? "",
    data: fields.data ?? NO_DATA,
    error: fields.error ?? null,
    handler,
  };
}
