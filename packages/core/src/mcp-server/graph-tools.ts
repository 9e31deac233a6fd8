import type { CallToolResult, Tool } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import type { ExecContext } from "../context/exec-context.js";
import { ErrorCode, isNervaError } from "../errors.js";
import type { GraphHost } from "../graph/host/graph-host.js";
import type { GraphRun } from "../graph/host/graph-run.js";
import type { RunQueue } from "../runs/run-queue.js";
import { RunStatus, type RunEvent } from "../runs/types.js";
import type { JsonValue } from "../types/agent.js";

/**
 * One graph served as an MCP tool: a call starts a run of `entryPoint` with the call's arguments
 * as the start state, and answers when the run ends or pauses. As a task (a client that asks for
 * one), the task id is the run id, and any replica on the same run store reports on it.
 */
export interface McpGraphTool {
  /** The tool's name. */
  readonly name: string;
  readonly host: GraphHost;
  /** The entry point its runs start at; default the host's first. */
  readonly entryPoint?: string | undefined;
  readonly title?: string | undefined;
  readonly description?: string | undefined;
}

/** A checked graph tool. */
export interface GraphToolConfig {
  readonly name: string;
  readonly host: GraphHost;
  readonly entryPoint: string;
  /** The queue of the entry point's runs (where a user's tasks are listed). */
  readonly queue: RunQueue;
  readonly title: string | undefined;
  readonly description: string;
  readonly inputSchema: Tool["inputSchema"];
}

/** The JSON Schema of a graph's start state: every state key, none required. */
export function startStateSchema(host: GraphHost): Tool["inputSchema"] {
  try {
    const schema = z.toJSONSchema(host.graph.state.partial(), { unrepresentable: "any" }) as Record<
      string,
      unknown
    >;
    const { $schema: _drop, ...rest } = schema;
    return { ...rest, type: "object" } as Tool["inputSchema"];
  } catch {
    return { type: "object", additionalProperties: true };
  }
}

/** MCP's task status of a run status. */
export function taskStatusOf(
  status: RunStatus,
): "working" | "input_required" | "completed" | "failed" | "cancelled" {
  switch (status) {
    case RunStatus.SUCCEEDED:
      return "completed";
    case RunStatus.PAUSED:
      return "input_required";
    case RunStatus.CANCELLED:
      return "cancelled";
    case RunStatus.FAILED:
    case RunStatus.TIMED_OUT:
      return "failed";
    default:
      return "working";
  }
}

/**
 * A graph run as a tool result, with what a client may read: the output, the status, the run id
 * (to follow or resume it through the app), what a paused run asks, and the client-safe error.
 */
export function graphAnswer(tool: string, run: GraphRun): CallToolResult {
  const data: Record<string, JsonValue> = { runId: run.runId, output: run.output };
  let text: string;
  if (run.status === RunStatus.SUCCEEDED) {
    text = typeof run.output === "string" ? run.output : JSON.stringify(run.output);
  } else if (run.status === RunStatus.PAUSED) {
    text = `Waiting for input at "${run.pausedAt ?? "?"}": ${run.pause?.prompt ?? ""}`;
    data.pausedAt = run.pausedAt;
    data.prompt = run.pause?.prompt ?? null;
  } else {
    // A run's stored error is operator text unless its code says a client may read it.
    text =
      run.status === RunStatus.CANCELLED
        ? "The run was cancelled."
        : `The run ended ${run.status}.`;
    if (run.error !== null) data.code = run.error.code;
  }
  return {
    content: [{ type: "text", text }],
    structuredContent: { status: run.status, handler: tool, data },
    isError: run.status !== RunStatus.SUCCEEDED && run.status !== RunStatus.PAUSED,
  };
}

/** One run event as a progress message: its type and node, nothing a client may not read. */
export function progressMessage(event: RunEvent): string {
  const node = (event.data as { node?: unknown } | null)?.node;
  return typeof node === "string" ? `${event.type} ${node}` : event.type;
}

/**
 * Runs a graph tool call to its end or pause: progress from the run's events when the client
 * asked for it, and the client's cancellation cancels the run.
 */
export async function callGraph(
  tool: GraphToolConfig,
  args: Record<string, unknown>,
  ctx: ExecContext,
  signal: AbortSignal,
  progress: ((message: string) => Promise<void>) | null,
): Promise<CallToolResult> {
  let runId: string;
  try {
    runId = await tool.host.trigger(tool.entryPoint, args, ctx);
  } catch (err) {
    return refused(tool.name, err);
  }
  const cancel = (): void =>
    void tool.host.cancel(runId, { reason: "cancelled by the MCP client" }).catch(() => {});
  signal.addEventListener("abort", cancel, { once: true });
  const watching = new AbortController();
  const relay =
    progress === null
      ? Promise.resolve()
      : (async () => {
          for await (const event of tool.host.events(runId, { signal: watching.signal })) {
            await progress(progressMessage(event));
          }
        })().catch(() => {});
  try {
    if (signal.aborted) cancel();
    const run = await tool.host.wait(runId);
    // A run that ended has logged its last event: every progress message goes before the
    // answer. A paused run's log goes on when it is answered: stop following it.
    if (run.status === RunStatus.PAUSED) watching.abort();
    await relay;
    return graphAnswer(tool.name, run);
  } finally {
    signal.removeEventListener("abort", cancel);
    watching.abort();
    await relay;
  }
}

/** A start the host refused (a bad start state, a full backlog) as an error answer. */
export function refused(tool: string, err: unknown): CallToolResult {
  const known =
    isNervaError(err) &&
    (err.code === ErrorCode.INVALID_INPUT || err.code === ErrorCode.RATE_LIMITED);
  return {
    content: [
      { type: "text", text: known ? `${err.code}: ${err.message}` : "The graph could not start." },
    ],
    structuredContent: {
      status: "error",
      handler: tool,
      data: { code: known ? err.code : ErrorCode.INTERNAL },
    },
    isError: true,
  };
}
