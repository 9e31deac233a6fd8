import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import type { CallToolResult, Tool } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import type { ExecContext } from "../context/exec-context.js";
import type { StreamSink } from "../context/options.js";
import { ErrorCode } from "../errors.js";
import { AgentStatus } from "../types/status.js";
import type { McpHandlerConfig } from "./options.js";

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
    return { tools };
  });

  server.setRequestHandler(types.CallToolRequestSchema, async (request, extra) => {
    const ctx = contextOf(extra);
    const name = request.params.name;
    // Unknown and forbidden read the same, so a caller learns nothing about tools it cannot use.
    if (!config.tools.has(name) || !ctx.permissions.canUseAgent(name)) {
      throw new McpError(
        types.ErrorCode.InvalidParams,
        `Unknown tool "${name}": call one that tools/list returns.`,
        {
          code: ErrorCode.NOT_FOUND,
        },
      );
    }
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
    const token = request.params._meta?.progressToken;
    let progress = 0;
    // Chunks become progress notifications only when the client asked for progress (a token).
    const sink: StreamSink | null =
      token === undefined
        ? null
        : {
            push: (chunk) =>
              extra.sendNotification({
                method: "notifications/progress",
                params: { progressToken: token, progress: ++progress, message: chunk },
              }),
          };
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
