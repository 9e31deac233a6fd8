import type { ExecContext } from "../../context/exec-context.js";
import { jsonLimitViolation } from "../../internal/json-limits.js";
import { messageOf } from "../../runtime/results.js";
import type { Attributes } from "../../types/trace.js";
import { runWithDeadline, type DeadlineOutcome } from "../../runtime/deadline.js";
import { describeLimit, endedResult, toolResult } from "../results.js";
import { ToolStatus, type ToolCallOptions, type ToolResult } from "../types.js";
import type { LogParams, McpConnection, ProgressParams } from "./connection.js";
import type { McpTool } from "./tool-list.js";

function attributeText(value: unknown, max = 2000): string {
  // JSON.stringify recurses: what a server sent is checked (iteratively) before it is printed.
  const violation = typeof value === "string" ? null : jsonLimitViolation(value);
  if (violation !== null) return `(not shown: ${violation})`;
  const text = typeof value === "string" ? value : (JSON.stringify(value) ?? String(value));
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/** The `output` of a successful MCP call: structured content, else the text, else the blocks. */
function outputOf(result: Record<string, unknown>): unknown {
  if (result["structuredContent"] !== undefined) return result["structuredContent"];
  if ("toolResult" in result) return result["toolResult"];
  const content = Array.isArray(result["content"]) ? (result["content"] as unknown[]) : [];
  const texts = content.map((c) =>
    typeof c === "object" && c !== null && (c as { type?: unknown }).type === "text"
      ? String((c as { text?: unknown }).text)
      : null,
  );
  return texts.every((t) => t !== null) ? texts.join("\n") : content;
}

function errorText(result: Record<string, unknown>): string {
  const out = outputOf({ content: result["content"] });
  return typeof out === "string" && out !== "" ? out : attributeText(result["content"] ?? "");
}

/**
 * The call path of an McpToolManager: one round trip to the server per call, bounded by
 * `timeoutSeconds` and the request's deadline, its answer turned into a ToolResult; and the
 * server's log and progress notifications, attributed to the call they belong to.
 */
export class McpCalls {
  readonly #connection: McpConnection;
  readonly #timeoutSeconds: number;
  readonly #inFlight = new Set<ExecContext>();
  readonly #progress = new Map<string, { readonly ctx: ExecContext; readonly tool: string }>();
  #tokens = 0;

  constructor(connection: McpConnection, timeoutSeconds: number) {
    this.#connection = connection;
    this.#timeoutSeconds = timeoutSeconds;
  }

  /** Calls `tool` (exposed as `name`) with arguments already checked. */
  async call(
    name: string,
    tool: McpTool,
    args: unknown,
    ctx: ExecContext,
    options: ToolCallOptions | undefined,
    startedMs: number,
  ): Promise<ToolResult> {
    const limit = describeLimit(ctx, this.#timeoutSeconds);
    const timeoutMs = this.#timeoutSeconds * 1000;
    // The remote round trip, in a child span of its own naming the server (the caller opened
    // `tools.call`); progress notifications become events under it.
    const span = ctx.startSpan(
      "mcp.call",
      {
        server: this.#connection.label,
        tool: tool.serverName,
      },
      { kind: "client" },
    );
    if (options?.callId !== undefined) span.setAttribute("gen_ai.tool.call.id", options.callId);
    const outcome = await runWithDeadline(ctx, span, this.#timeoutSeconds, async (scoped) => {
      this.#inFlight.add(scoped);
      // Our own progress tokens (see onProgress): the SDK's onprogress option drops a progress
      // notification that arrives in the same chunk as the response.
      const token = `nerva-${++this.#tokens}`;
      this.#progress.set(token, { ctx: scoped, tool: name });
      try {
        return await this.#connection.client.callTool(
          {
            name: tool.serverName,
            arguments: (args ?? {}) as Record<string, unknown>,
            _meta: { progressToken: token },
          },
          undefined,
          {
            signal: scoped.signal,
            // Our own deadline ends the call; keep the SDK's timer from firing first.
            timeout: Math.min(timeoutMs + 1000, 2_147_483_647),
          },
        );
      } finally {
        this.#inFlight.delete(scoped);
        this.#progress.delete(token);
      }
    });
    const result = this.#resultOf(name, outcome, startedMs, limit);
    if (result.status === ToolStatus.SUCCESS) span.end("ok");
    else span.end("error", result.error ?? result.status);
    return result;
  }

  #resultOf(
    name: string,
    outcome: DeadlineOutcome<unknown>,
    startedMs: number,
    limit: string,
  ): ToolResult {
    switch (outcome.kind) {
      case "done": {
        const result = outcome.value as Record<string, unknown>;
        if (result["isError"] === true) {
          return toolResult(ToolStatus.ERROR, startedMs, {
            error: `Tool "${name}" reported an error: ${this.#connection.mask(errorText(result))}`,
          });
        }
        // The server's JSON goes on to callers that serialise it: bound it here.
        const output = outputOf(result);
        const violation = jsonLimitViolation(output);
        if (violation !== null) {
          return toolResult(ToolStatus.ERROR, startedMs, {
            error: `Tool "${name}" returned a result that is ${violation}; it was dropped.`,
          });
        }
        return toolResult(ToolStatus.SUCCESS, startedMs, { output });
      }
      case "failed": {
        // Read the state afresh: the server may have exited while the call was in flight.
        const down = this.#connection.exited ? ` ${this.#connection.downMessage()}` : "";
        return toolResult(ToolStatus.ERROR, startedMs, {
          error: `Tool "${name}" failed: ${this.#connection.mask(messageOf(outcome.error))}.${down}`,
        });
      }
      case "ended":
        return endedResult(name, outcome.reason, startedMs, limit);
    }
  }

  /**
   * A server log message: to `onNotification`, and to the call in flight when exactly one is
   * (stdio notifications carry no request id; see McpToolManager).
   */
  onLog(params: LogParams): void {
    const logger = params.logger ?? null;
    const violation = jsonLimitViolation(params.data);
    const data = violation === null ? params.data : `(log data dropped: ${violation})`;
    this.#connection.notify({ kind: "log", level: params.level, logger, data });
    if (this.#inFlight.size !== 1) return;
    const [only] = this.#inFlight;
    const attributes: Attributes = {
      level: params.level,
      data: this.#connection.mask(attributeText(data)),
    };
    if (logger !== null) attributes["logger"] = logger;
    only?.event("mcp.log", attributes);
  }

  /** A progress notification: an `mcp.progress` event on the ctx of the call it names. */
  onProgress(params: ProgressParams): void {
    const call = this.#progress.get(String(params.progressToken));
    if (call === undefined) return; // a late notification for a call that already ended
    const attributes: Attributes = { tool: call.tool, progress: params.progress };
    if (params.total !== undefined) attributes["total"] = params.total;
    if (params.message !== undefined) {
      attributes["message"] = this.#connection.mask(attributeText(params.message, 500));
    }
    call.ctx.event("mcp.progress", attributes);
  }
}
