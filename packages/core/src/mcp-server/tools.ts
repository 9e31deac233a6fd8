import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import type { CreateTaskResult } from "@modelcontextprotocol/sdk/experimental/tasks";
import type { CallToolResult, Tool } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import type { ExecContext } from "../context/exec-context.js";
import type { StreamSink } from "../context/options.js";
import { ErrorCode } from "../errors.js";
import { AgentStatus } from "../types/status.js";
import { callGraph, refused, type GraphToolConfig } from "./graph-tools.js";
import type { McpHandlerConfig } from "./options.js";
import { taskOf } from "./tasks.js";

type TypesModule = typeof import("@modelcontextprotocol/sdk/types.js");

/** Where a tool handler finds the ExecContext of the HTTP request that carried its call. */
export const CTX_KEY = "nervaCtx";

/** Every agent tool takes the same arguments: the message, and optional string arguments. */
const ArgumentsSchema = z
  .object({
    message: z.string().min(1).max(1_000_000),
    args: z.record(z.string().max(256), z.string().max(100_000)).optional(),
  })
  .strict();

const INPUT_SCHEMA: Tool["inputSchema"] = {
  type: "object",
  properties: {
    message: { type: "string", minLength: 1, description: "What to ask the agent." },
    args: {
      type: "object",
      additionalProperties: { type: "string" },
      description: "Optional structured arguments for the agent (string values).",
    },
  },
  required: ["message"],
  additionalProperties: false,
};

const OUTPUT_SCHEMA: NonNullable<Tool["outputSchema"]> = {
  type: "object",
  properties: {
    status: { type: "string" },
    handler: { type: "string" },
    data: { type: "object" },
  },
  required: ["status", "handler", "data"],
};

/**
 * Installs `tools/list` and `tools/call` on a low-level SDK `Server`. The low-level server (rather
 * than McpServer.registerTool) is used because the list depends on who asks: each request's own
 * ExecContext arrives in `extra.authInfo.extra`, and a tool the caller may not use is not listed.
 */
export function installAgentTools(
  server: Server,
  types: TypesModule,
  config: McpHandlerConfig,
): void {
  const { McpError } = types;
  const contextOf = (extra: {
    authInfo?: { extra?: Record<string, unknown> } | undefined;
  }): ExecContext => {
    const ctx = extra.authInfo?.extra?.[CTX_KEY] as ExecContext | undefined;
    // Only reachable if the handler is bypassed: fail closed rather than run without identity.
    if (ctx === undefined) throw new McpError(types.ErrorCode.InternalError, "No request context.");
    return ctx;
  };

  server.setRequestHandler(types.ListToolsRequestSchema, (_request, extra) => {
    const ctx = contextOf(extra);
    const tools: Tool[] = [];
    for (const t of config.tools.values()) {
      if (!ctx.permissions.canUseAgent(t.name)) continue;
      tools.push({
        name: t.name,
        ...(t.title === undefined ? {} : { title: t.title }),
        description: t.description ?? `Ask the "${t.name}" agent.`,
        inputSchema: INPUT_SCHEMA,
        outputSchema: OUTPUT_SCHEMA,
      });
    }
    for (const g of config.graphs.values()) {
      if (!ctx.permissions.canUseAgent(g.name)) continue;
      tools.push({
        name: g.name,
        ...(g.title === undefined ? {} : { title: g.title }),
        description: g.description,
        inputSchema: g.inputSchema,
        outputSchema: OUTPUT_SCHEMA,
        execution: { taskSupport: "optional" },
      });
    }
    return { tools };
  });

  server.setRequestHandler(types.CallToolRequestSchema, async (request, extra) => {
    const ctx = contextOf(extra);
    const name = request.params.name;
    const graph = config.graphs.get(name);
    // Unknown and forbidden read the same, so a caller learns nothing about tools it cannot use.
    if ((!config.tools.has(name) && graph === undefined) || !ctx.permissions.canUseAgent(name)) {
      throw new McpError(
        types.ErrorCode.InvalidParams,
        `Unknown tool "${name}": call one that tools/list returns.`,
        {
          code: ErrorCode.NOT_FOUND,
        },
      );
    }
    if (graph !== undefined) return callGraphTool(graph, request.params, ctx, extra, types);
    const parsed = ArgumentsSchema.safeParse(request.params.arguments ?? {});
    if (!parsed.success) {
      const issues = parsed.error.issues.map((i) => ({
        path: ["arguments", ...i.path.map(String)].join("."),
        message: i.message,
      }));
      throw new McpError(
        types.ErrorCode.InvalidParams,
        `Invalid arguments for tool "${name}": ${issues.map((i) => `${i.path}: ${i.message}`).join("; ")}. Pass { message: string, args?: { [key]: string } }.`,
        { code: ErrorCode.INVALID_INPUT, issues },
      );
    }
    const progress = progressOf(request.params, extra);
    // Chunks become progress notifications only when the client asked for progress (a token).
    const sink: StreamSink | null = progress === null ? null : { push: progress };
    const run = ctx.fork({ stream: sink });
    // The SDK aborts extra.signal on the client's notifications/cancelled for this request id.
    const cancel = (): void => run.cancel("cancelled by the MCP client");
    extra.signal.addEventListener("abort", cancel, { once: true });
    try {
      if (extra.signal.aborted) cancel();
      const result = await config.invoke(name, parsed.data.message, parsed.data.args ?? {}, run);
      // The caller is a client like any HTTP one: operator text (a thrown message, a path, a
      // worker's stderr) stays on the span; `invoke` gives the client-safe text and data.
      const answer: CallToolResult = {
        content: [{ type: "text", text: result.text }],
        structuredContent: { status: result.status, handler: result.handler, data: result.data },
        isError: result.status !== AgentStatus.SUCCESS,
      };
      return answer;
    } finally {
      extra.signal.removeEventListener("abort", cancel);
      run.dispose();
    }
  });
}

type CallParams = {
  name: string;
  arguments?: Record<string, unknown> | undefined;
  task?: unknown;
  _meta?: { progressToken?: string | number | undefined } | undefined;
};
type Extra = {
  signal: AbortSignal;
  sendNotification: (n: {
    method: "notifications/progress";
    params: { progressToken: string | number; progress: number; message: string };
  }) => Promise<void>;
};

/** Progress notifications numbered 1, 2, 3…, when the client asked for progress (a token). */
function progressOf(params: CallParams, extra: Extra): ((message: string) => Promise<void>) | null {
  const token = params._meta?.progressToken;
  if (token === undefined) return null;
  let n = 0;
  return (message) =>
    extra.sendNotification({
      method: "notifications/progress",
      params: { progressToken: token, progress: ++n, message },
    });
}

/**
 * A graph tool call: as a task (the client asked for one) its run is started and the run is the
 * task, answered at once; otherwise the call waits for the run to end or pause, with its events
 * as progress.
 */
async function callGraphTool(
  graph: GraphToolConfig,
  params: CallParams,
  ctx: ExecContext,
  extra: Extra,
  types: TypesModule,
): Promise<CallToolResult | CreateTaskResult> {
  const args = params.arguments ?? {};
  if (params.task === undefined) {
    return callGraph(graph, args, ctx, extra.signal, progressOf(params, extra));
  }
  // A task is read back by its user from any replica: an anonymous caller has none to bind it to.
  if (ctx.userId === null) {
    throw new types.McpError(
      types.ErrorCode.InvalidRequest,
      "A task needs a signed-in user: call the tool without a task, or sign in.",
      { code: ErrorCode.UNAUTHENTICATED },
    );
  }
  let runId: string;
  try {
    runId = await graph.host.trigger(graph.entryPoint, args, ctx);
  } catch (err) {
    const answer = refused(graph.name, err);
    throw new types.McpError(
      types.ErrorCode.InvalidParams,
      String((answer.content[0] as { text: string }).text),
      answer.structuredContent,
    );
  }
  const run = await graph.host.queue.get(runId);
  if (run === null)
    throw new types.McpError(types.ErrorCode.InternalError, "The run was not found.");
  return { task: taskOf(run) };
}
