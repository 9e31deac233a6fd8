import type { JSONSchema7 } from "@ai-sdk/provider";
import {
  ErrorCode,
  NervaError,
  type AgentKit,
  type ExecContext,
  type ToolManager,
  type ToolResult,
} from "@nerva/core";
import { isExecContext } from "@nerva/core/context";
import { type ToolInfo } from "@nerva/core/tools";
import type { ToolSet } from "ai";
import { loadAi } from "./load-ai.js";

/**
 * What tools come from: a handler's kit (policy, permissions, registry stats) or a manager.
 *
 * @example
 * const source: ToolSource = kit; // or new FunctionToolManager({ tools: [...] })
 */
export type ToolSource = AgentKit | ToolManager;

/**
 * What a tool answers the model when it did not succeed.
 *
 * @example
 * const denied: ToolFailure = { status: "permission_denied", error: "POLICY_DENIED: Only staff may refund." };
 */
export interface ToolFailure {
  readonly status: string;
  readonly error: string;
}

/** The longest tool name providers accept (OpenAI, Anthropic). */
const MAX_NAME = 64;

function isKit(source: ToolSource): source is AgentKit {
  return (
    typeof (source as AgentKit).tools === "object" &&
    typeof (source as AgentKit).tools?.call === "function" &&
    isExecContext((source as AgentKit).ctx)
  );
}

function isManager(source: ToolSource): source is ToolManager {
  const m = source as ToolManager;
  return (
    typeof m.discover === "function" &&
    typeof m.call === "function" &&
    typeof m.toolNames === "function"
  );
}

/**
 * Provider-safe names for `names`, and the way back. Providers accept `[A-Za-z0-9_-]{1,64}`;
 * other characters (the dots of MCP names such as `fs.read_file`) become `_`, and a name that
 * then collides gets a numeric suffix, so the mapping stays one to one.
 *
 * @example
 * const { toProvider, fromProvider } = providerNames(["fs.read_file", "fs_read_file"]);
 * toProvider.get("fs.read_file"); // "fs_read_file_2"
 */
export function providerNames(names: readonly string[]): {
  toProvider: Map<string, string>;
  fromProvider: Map<string, string>;
} {
  const toProvider = new Map<string, string>();
  const fromProvider = new Map<string, string>();
  // Names that are already valid keep their name; the others are fitted around them.
  const valid = names.filter((n) => /^[A-Za-z0-9_-]{1,64}$/.test(n));
  for (const n of valid) {
    toProvider.set(n, n);
    fromProvider.set(n, n);
  }
  for (const n of names) {
    if (toProvider.has(n)) continue;
    const base = (n.replace(/[^A-Za-z0-9_-]/g, "_") || "tool").slice(0, MAX_NAME);
    let candidate = base;
    for (let i = 2; fromProvider.has(candidate); i++) {
      const suffix = `_${i}`;
      candidate = base.slice(0, MAX_NAME - suffix.length) + suffix;
    }
    toProvider.set(n, candidate);
    fromProvider.set(candidate, n);
  }
  return { toProvider, fromProvider };
}

/** What the model sees of a tool's result: its output, or `{ status, error }`. */
function answerOf(result: ToolResult): unknown {
  if (result.status === "success") return result.output ?? null;
  return {
    status: result.status,
    error: result.error ?? `The tool ended with status ${result.status}.`,
  } satisfies ToolFailure;
}

/**
 * The tools `ctx` may use (`discover`: permission-filtered, MCP tools included) as AI SDK tools.
 * Each runs through `kit.tools.call` (so policy, permissions and registry stats apply) or the
 * manager's `call`, with `ctx`'s deadline and cancellation, and the model's tool call id on the
 * tool's span (`gen_ai.tool.call.id`). A failed, denied or unknown tool answers the model
 * `{ status, error }`; it never throws. Names providers reject are mapped one to one (see
 * {@link providerNames}).
 *
 * @example
 * runtime.register("agent", orchestrator.handler(async (input, ctx, kit) => {
 *   const { text } = await model.generate({ prompt: input.message, tools: await toolsFor(kit, ctx), maxSteps: 5 }, ctx);
 *   return text;
 * }));
 */
export async function toolsFor(source: ToolSource, ctx: ExecContext): Promise<ToolSet> {
  if (!isExecContext(ctx)) {
    throw new NervaError(
      ErrorCode.INVALID_INPUT,
      "Invalid ctx: toolsFor(source, ctx) needs an ExecContext.",
      {
        issues: [{ path: "ctx", message: "must be an ExecContext" }],
      },
    );
  }
  let discover: () => Promise<readonly ToolInfo[]>;
  let call: (name: string, args: unknown, callId: string) => Promise<ToolResult>;
  if (isKit(source)) {
    discover = () => source.tools.discover();
    call = (name, args, callId) => source.tools.call(name, args, { callId });
  } else if (isManager(source)) {
    discover = () => source.discover(ctx);
    call = (name, args, callId) => source.call(name, args, ctx, { callId });
  } else {
    throw new NervaError(
      ErrorCode.INVALID_INPUT,
      "Invalid source: toolsFor(source, ctx) needs a handler's kit (orchestrator.handler((input, ctx, kit) => ...)) or a ToolManager.",
      { issues: [{ path: "source", message: "must be an AgentKit or a ToolManager" }] },
    );
  }
  const ai = await loadAi();
  const infos = await discover();
  const { toProvider } = providerNames(infos.map((t) => t.name));
  const tools: ToolSet = {};
  for (const info of infos) {
    const name = info.name;
    tools[toProvider.get(name)!] = ai.tool({
      description: info.description,
      inputSchema: ai.jsonSchema(info.parameters as JSONSchema7),
      execute: async (args: unknown, { toolCallId }: { toolCallId: string }) => {
        try {
          return answerOf(await call(name, args, toolCallId));
        } catch (err) {
          return {
            status: "error",
            error: err instanceof Error ? err.message : String(err),
          } satisfies ToolFailure;
        }
      },
    });
  }
  return tools;
}
