import type { ExecContext } from "../context/exec-context.js";

/**
 * How a tool call ended. Every failure is a value, never a throw.
 *
 * @example
 * if (result.status === ToolStatus.PERMISSION_DENIED) return "You may not use that tool.";
 */
export const ToolStatus = {
  SUCCESS: "success",
  /** The tool threw, returned an error, got invalid arguments, or its server failed. */
  ERROR: "error",
  /** `ctx.permissions.canUseTool(name)` is false. The tool did not run. */
  PERMISSION_DENIED: "permission_denied",
  /** No tool of that name. */
  NOT_FOUND: "not_found",
  /** The tool's timeout or the request's deadline passed first. */
  TIMEOUT: "timeout",
} as const;
export type ToolStatus = (typeof ToolStatus)[keyof typeof ToolStatus];

/**
 * A JSON Schema document (the parameters of a tool), as LLM tool-calling APIs expect it.
 *
 * @example
 * const parameters: JsonSchema = { type: "object", properties: { city: { type: "string" } }, required: ["city"] };
 */
export type JsonSchema = Readonly<Record<string, unknown>>;

/**
 * A tool as an LLM sees it: name, description and the JSON Schema of its parameters (always an
 * object schema, `{ type: "object", properties, required? }`).
 *
 * @example
 * const tools = await manager.discover(ctx);
 * const openAiTools = tools.map((t) => ({ type: "function", function: { name: t.name, description: t.description, parameters: t.parameters } }));
 */
export interface ToolInfo {
  readonly name: string;
  readonly description: string;
  readonly parameters: JsonSchema;
}

/**
 * The outcome of `call`. `output` is the tool's JSON-compatible result (`null` unless `status` is
 * `success`); `error` explains any other status; `durationMs` is wall time spent in the call.
 *
 * @example
 * const r = await tools.call("add", { a: 1, b: 2 }, ctx);
 * if (r.status === "success") console.log(r.output); else console.warn(r.status, r.error);
 */
export interface ToolResult {
  readonly status: ToolStatus;
  readonly output: unknown;
  readonly error: string | null;
  readonly durationMs: number;
}

/**
 * Per-call options of {@link ToolManager.call}. `callId` is the id a model gave this tool call;
 * it is recorded on the call's span as `gen_ai.tool.call.id`, tying the tool run to the model
 * step that asked for it.
 *
 * @example
 * await tools.call("search_flights", { to: "OSL" }, ctx, { callId: "call_abc123" });
 */
export interface ToolCallOptions {
  readonly callId?: string;
}

/**
 * Lists and runs tools. Every implementation:
 * - `discover` returns only tools `ctx.permissions.canUseTool(name)` allows;
 * - `call` never rejects for a tool failure: it resolves a {@link ToolResult} with a status, checks
 *   permissions before anything runs, and honours `ctx` deadline and cancellation;
 * - `toolNames()` lists every tool it provides, regardless of permissions (used to detect name
 *   collisions and by registries);
 * - `close()` releases processes and connections; calls after it resolve `error`.
 *
 * The orchestrator's kit opens the stage spans (`tools.discover`; `tools.call` with attributes
 * `tool` and `status`) and calls the manager with a context whose spans nest under them; a
 * manager may add child spans of its own (`McpToolManager`'s `mcp.call`).
 *
 * `call` throws a `NervaError` only for programmer errors (a `ctx` that is not an ExecContext).
 *
 * @example
 * async function useTool(tools: ToolManager, ctx: ExecContext) {
 *   const available = await tools.discover(ctx);
 *   return tools.call(available[0]!.name, {}, ctx);
 * }
 */
export interface ToolManager {
  discover(ctx: ExecContext): Promise<readonly ToolInfo[]>;
  call(
    name: string,
    args: unknown,
    ctx: ExecContext,
    options?: ToolCallOptions,
  ): Promise<ToolResult>;
  toolNames(): readonly string[];
  close(): Promise<void>;
}
