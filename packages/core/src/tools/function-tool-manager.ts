import { z } from "zod";
import type { ExecContext } from "../context/exec-context.js";
import { ErrorCode, NervaError, parseOrThrow } from "../errors.js";
import { checkContext } from "../runtime/guard.js";
import { messageOf } from "../runtime/results.js";
import { runWithDeadline } from "../runtime/deadline.js";
import {
  deniedResult,
  discoverAllowed,
  describeLimit,
  endedResult,
  notFoundResult,
  toolResult,
} from "./results.js";
import {
  ToolStatus,
  type JsonSchema,
  type ToolInfo,
  type ToolManager,
  type ToolCallOptions,
  type ToolResult,
} from "./types.js";

/**
 * What a tool function gets besides its arguments: `signal` aborts at the tool's timeout, the
 * request's deadline or on cancel (pass it to fetch, child processes, database drivers); `ctx` is
 * the request's context, whose spans nest under the caller's span (the orchestrator's
 * `tools.call`).
 *
 * @example
 * const run = async (args: { url: string }, { signal }: ToolCallContext) => (await fetch(args.url, { signal })).status;
 */
export interface ToolCallContext {
  readonly signal: AbortSignal;
  readonly ctx: ExecContext;
}

/** The second argument of a tool function; its AbortSignal is created only if the tool reads it. */
class CallContext implements ToolCallContext {
  readonly ctx: ExecContext;
  constructor(ctx: ExecContext) {
    this.ctx = ctx;
  }
  get signal(): AbortSignal {
    return this.ctx.signal;
  }
}

/**
 * A tool implemented by a function. `parameters` is a zod 4 object schema: arguments are
 * validated with it before `run` is called (so `run` gets parsed values, defaults applied), and
 * its JSON Schema is what {@link ToolManager.discover} shows an LLM.
 *
 * @example
 * const add: FunctionTool<z.ZodObject<{ a: z.ZodNumber; b: z.ZodNumber }>> = {
 *   name: "add",
 *   description: "Adds two numbers",
 *   parameters: z.object({ a: z.number(), b: z.number() }),
 *   run: ({ a, b }) => a + b,
 * };
 */
export interface FunctionTool<S extends z.ZodType = z.ZodType> {
  /** 1-64 letters, digits, `_` or `-`: what every LLM tool-calling API accepts. */
  readonly name: string;
  readonly description: string;
  readonly parameters: S;
  readonly run: (args: z.output<S>, call: ToolCallContext) => unknown;
  /** Overrides the manager's `timeoutSeconds` for this tool. */
  readonly timeoutSeconds?: number;
}

/**
 * Declares a tool with its argument types inferred from the schema.
 *
 * @example
 * const add = defineTool({
 *   name: "add",
 *   description: "Adds two numbers",
 *   parameters: z.object({ a: z.number(), b: z.number() }),
 *   run: ({ a, b }) => a + b, // a and b are numbers
 * });
 */
export function defineTool<S extends z.ZodType>(tool: FunctionTool<S>): FunctionTool<S> {
  return tool;
}

export const ToolNameSchema = z
  .string()
  .regex(/^[A-Za-z0-9_-]{1,64}$/, "must be 1-64 letters, digits, '_' or '-'");

const seconds = z.number().positive().finite();

const ToolSchema = z
  .object({
    name: ToolNameSchema,
    description: z.string().min(1).max(10_000),
    parameters: z.custom<z.ZodType>(
      (v) =>
        typeof v === "object" &&
        v !== null &&
        "_zod" in v &&
        typeof (v as z.ZodType).safeParse === "function",
      "must be a zod 4 schema, e.g. z.object({ city: z.string() })",
    ),
    run: z.custom<FunctionTool["run"]>((v) => typeof v === "function", "must be a function"),
    timeoutSeconds: seconds.optional(),
  })
  .strict();

const OptionsSchema = z
  .object({
    timeoutSeconds: seconds.default(30),
    tools: z.array(z.unknown()).default([]),
  })
  .strict();

/**
 * Options of {@link FunctionToolManager}: the default per-tool timeout (30 s) and tools to
 * register at once.
 *
 * @example
 * const options: FunctionToolManagerOptions = { timeoutSeconds: 10, tools: [add] };
 */
export interface FunctionToolManagerOptions {
  readonly timeoutSeconds?: number;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- each tool has its own schema type
  readonly tools?: readonly FunctionTool<any>[];
}

interface Entry {
  readonly tool: FunctionTool;
  readonly info: ToolInfo;
  readonly timeoutSeconds: number;
}

function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

/** JSON Schema of the arguments a tool accepts (input side: defaults make fields optional). */
function parametersSchema(tool: FunctionTool, label: string): JsonSchema {
  let schema: Record<string, unknown>;
  try {
    schema = z.toJSONSchema(tool.parameters, { io: "input" }) as Record<string, unknown>;
  } catch (err) {
    throw new NervaError(
      ErrorCode.INVALID_OPTIONS,
      `Invalid ${label}.parameters: it cannot be expressed as JSON Schema (${messageOf(err)}). Use JSON-compatible types (no dates, bigints, functions, transforms on output).`,
      {
        cause: err,
        issues: [{ path: `${label}.parameters`, message: "not representable as JSON Schema" }],
      },
    );
  }
  if (schema["type"] !== "object") {
    throw new NervaError(
      ErrorCode.INVALID_OPTIONS,
      `Invalid ${label}.parameters: must be an object schema (z.object({...})), as LLM tool calling passes named arguments.`,
      { issues: [{ path: `${label}.parameters`, message: "must be an object schema" }] },
    );
  }
  const { $schema: _ignored, ...rest } = schema;
  return deepFreeze(rest);
}

/**
 * Tools implemented as functions in this process. Arguments are validated with each tool's zod
 * schema (invalid arguments resolve `error` naming every bad field, and the tool does not run);
 * each call runs with a deadline (the tool's `timeoutSeconds`, never past the request's) and
 * resolves `timeout` at that moment even if the function ignores its `signal`.
 *
 * @example
 * const tools = new FunctionToolManager({ timeoutSeconds: 10 }).register(
 *   defineTool({
 *     name: "get_weather",
 *     description: "Current weather for a city",
 *     parameters: z.object({ city: z.string() }),
 *     run: async ({ city }, { signal }) => fetchWeather(city, signal),
 *   }),
 * );
 * const result = await tools.call("get_weather", { city: "Oslo" }, ctx);
 */
export class FunctionToolManager implements ToolManager {
  readonly #timeoutSeconds: number;
  readonly #tools = new Map<string, Entry>();
  #closed = false;

  constructor(options: FunctionToolManagerOptions = {}) {
    const o = parseOrThrow(
      OptionsSchema,
      options,
      ErrorCode.INVALID_OPTIONS,
      "options",
      "Pass { timeoutSeconds?: number > 0, tools?: FunctionTool[] }.",
    );
    this.#timeoutSeconds = o.timeoutSeconds;
    o.tools.forEach((tool, i) => this.#add(tool, `options.tools.${i}`));
  }

  /**
   * Adds a tool. Throws `NervaError` INVALID_OPTIONS naming the field for a bad definition, a
   * schema that is not an object, or a name already taken.
   */
  register<S extends z.ZodType>(tool: FunctionTool<S>): this {
    this.#add(tool, "tool");
    return this;
  }

  #add(value: unknown, label: string): void {
    const tool = parseOrThrow(
      ToolSchema,
      value,
      ErrorCode.INVALID_OPTIONS,
      label,
      "Declare tools as { name, description, parameters: z.object({...}), run: (args, { signal, ctx }) => result, timeoutSeconds? }.",
    ) as FunctionTool;
    if (this.#tools.has(tool.name)) {
      throw new NervaError(
        ErrorCode.INVALID_OPTIONS,
        `Invalid ${label}.name: tool "${tool.name}" is already registered. Pick another name.`,
        { issues: [{ path: `${label}.name`, message: "already registered" }] },
      );
    }
    const info: ToolInfo = Object.freeze({
      name: tool.name,
      description: tool.description,
      parameters: parametersSchema(tool, label),
    });
    this.#tools.set(tool.name, {
      tool,
      info,
      timeoutSeconds: tool.timeoutSeconds ?? this.#timeoutSeconds,
    });
  }

  toolNames(): readonly string[] {
    return [...this.#tools.keys()];
  }

  async discover(ctx: ExecContext): Promise<readonly ToolInfo[]> {
    checkContext(ctx);
    return discoverAllowed(ctx, this.#tools);
  }

  async call(
    name: string,
    args: unknown,
    ctx: ExecContext,
    _options?: ToolCallOptions,
  ): Promise<ToolResult> {
    checkContext(ctx);
    const startedMs = performance.now();
    if (!ctx.permissions.canUseTool(name)) return deniedResult(name, ctx, startedMs);
    const entry = this.#tools.get(name);
    if (entry === undefined) {
      return notFoundResult(name, this.toolNames(), ctx, startedMs);
    }
    if (this.#closed) {
      return toolResult(ToolStatus.ERROR, startedMs, { error: "The tool manager is closed." });
    }
    const parsed = entry.tool.parameters.safeParse(args);
    if (!parsed.success) {
      const problems = parsed.error.issues
        .map((i) => `${["args", ...i.path.map(String)].join(".")}: ${i.message}`)
        .join("; ");
      return toolResult(ToolStatus.ERROR, startedMs, {
        error: `Invalid arguments for tool "${name}": ${problems}.`,
      });
    }
    const limit = describeLimit(ctx, entry.timeoutSeconds);
    const outcome = await runWithDeadline(ctx, null, entry.timeoutSeconds, (scoped) =>
      entry.tool.run(parsed.data, new CallContext(scoped)),
    );
    switch (outcome.kind) {
      case "done":
        return toolResult(ToolStatus.SUCCESS, startedMs, { output: outcome.value ?? null });
      case "failed":
        return toolResult(ToolStatus.ERROR, startedMs, {
          error: `Tool "${name}" failed: ${messageOf(outcome.error)}`,
        });
      case "ended":
        return endedResult(name, outcome.reason, startedMs, limit);
    }
  }

  /** Later calls resolve `error`. Nothing else to release: tools run in this process. */
  close(): Promise<void> {
    this.#closed = true;
    return Promise.resolve();
  }
}
