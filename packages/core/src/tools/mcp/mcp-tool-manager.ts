// McpToolManager, the ToolManager over an MCP server. This file holds the ToolManager methods and
// their checks; each seam has a file of its own: options.ts (options, notification type),
// connection.ts (the server process and session, start-up errors, state), tool-list.ts (tool
// discovery, names and schema bounds), calls.ts (the call path, log and progress attribution).
import type { z } from "zod";
import type { ExecContext } from "../../context/exec-context.js";
import { ErrorCode, parseOrThrow } from "../../errors.js";
import { jsonLimitViolation } from "../../internal/json-limits.js";
import { checkContext } from "../../runtime/guard.js";
import { deniedResult, discoverAllowed, notFoundResult, toolResult } from "../results.js";
import {
  ToolStatus,
  type ToolInfo,
  type ToolManager,
  type ToolCallOptions,
  type ToolResult,
} from "../types.js";
import { McpCalls } from "./calls.js";
import { McpConnection } from "./connection.js";
import { OptionsSchema, type McpToolManagerOptions } from "./options.js";
import { McpToolList } from "./tool-list.js";

export type { McpNotification, McpToolManagerOptions } from "./options.js";

/**
 * Tools served by a Model Context Protocol server over stdio, through the official SDK
 * (`@modelcontextprotocol/sdk`, an optional peer dependency loaded on first use). Start one with
 * {@link McpToolManager.connect}; it spawns the server, initialises the session and lists the
 * tools (following pagination).
 *
 * - Calls run concurrently over the one connection; each resolves its own result.
 * - Each call is bounded by `timeoutSeconds` and the request's deadline: on expiry or cancel it
 *   resolves at once (`timeout` / `error`) and the SDK sends the server `notifications/cancelled`.
 * - `notifications/tools/list_changed` refreshes the tool list; `discover` and `call` use the
 *   new one.
 * - Progress notifications of a call are recorded as `mcp.progress` events on that call's ctx.
 *   Server log messages (`notifications/message`) go to `onNotification`, and are recorded as
 *   `mcp.log` events on the ctx of the call in flight when exactly one is: stdio carries no
 *   request id on notifications, so with overlapping calls they cannot be attributed (and are
 *   not guessed, to keep one user's request from seeing another's logs).
 * - If the server exits, calls in flight and later calls resolve `error` with the end of its
 *   stderr; they never hang. `close()` ends the process (stdin closed, then SIGTERM, then
 *   SIGKILL).
 *
 * @example
 * const tools = await McpToolManager.connect({ command: "node", args: ["./mcp-server.mjs"] });
 * try {
 *   const result = await tools.call("add", { a: 1, b: 2 }, ctx);
 * } finally {
 *   await tools.close();
 * }
 */
export class McpToolManager implements ToolManager {
  readonly #connection: McpConnection;
  readonly #tools: McpToolList;
  readonly #calls: McpCalls;

  private constructor(connection: McpConnection, o: z.output<typeof OptionsSchema>) {
    this.#connection = connection;
    this.#tools = new McpToolList(connection, o.toolPrefix);
    this.#calls = new McpCalls(connection, o.timeoutSeconds);
  }

  /**
   * Starts the server and lists its tools. Throws `NervaError` INVALID_OPTIONS for bad options
   * or a command that cannot be started, MISSING_DEPENDENCY when `@modelcontextprotocol/sdk` is
   * not installed, and INTERNAL when the server fails during start-up (with its stderr).
   *
   * @example
   * const tools = await McpToolManager.connect({ command: "node", args: ["./servers/files.mjs"], toolPrefix: "fs." });
   */
  static async connect(options: McpToolManagerOptions): Promise<McpToolManager> {
    const o = parseOrThrow(
      OptionsSchema,
      options,
      ErrorCode.INVALID_OPTIONS,
      "options",
      'Pass { command: "node", args?: string[], env?: Record<string, string>, cwd?, name?, toolPrefix?, timeoutSeconds?, connectTimeoutSeconds?, onNotification? }.',
    );
    let manager: McpToolManager | null = null;
    const connection = await McpConnection.create(o, {
      toolsChanged: () => void manager?.refreshTools(),
      log: (params) => {
        if (manager !== null) manager.#calls.onLog(params);
      },
      progress: (params) => {
        if (manager !== null) manager.#calls.onProgress(params);
      },
    });
    const self = new McpToolManager(connection, o);
    manager = self;
    await connection.open(() => self.#tools.listAll());
    return self;
  }

  /** The server's process id while it runs, else `null`. */
  get pid(): number | null {
    return this.#connection.pid;
  }

  /** Whether the server is connected (not closed and not exited). */
  get connected(): boolean {
    return this.#connection.connected;
  }

  toolNames(): readonly string[] {
    return this.#tools.names();
  }

  async discover(ctx: ExecContext): Promise<readonly ToolInfo[]> {
    checkContext(ctx);
    return discoverAllowed(ctx, this.#tools.entries());
  }

  async call(
    name: string,
    args: unknown,
    ctx: ExecContext,
    options?: ToolCallOptions,
  ): Promise<ToolResult> {
    checkContext(ctx);
    const startedMs = performance.now();
    if (!ctx.permissions.canUseTool(name)) return deniedResult(name, ctx, startedMs);
    if (!this.#connection.connected) {
      return toolResult(ToolStatus.ERROR, startedMs, { error: this.#connection.downMessage() });
    }
    const tool = this.#tools.get(name);
    if (tool === undefined) {
      return notFoundResult(name, this.toolNames(), ctx, startedMs);
    }
    const argsOk =
      args === undefined || (typeof args === "object" && args !== null && !Array.isArray(args));
    if (!argsOk) {
      return toolResult(ToolStatus.ERROR, startedMs, {
        error: `Invalid arguments for tool "${name}": args must be an object of named arguments.`,
      });
    }
    const argsViolation = jsonLimitViolation(args);
    if (argsViolation !== null) {
      return toolResult(ToolStatus.ERROR, startedMs, {
        error: `Invalid arguments for tool "${name}": ${argsViolation}; pass flatter arguments.`,
      });
    }
    return this.#calls.call(name, tool, args, ctx, options, startedMs);
  }

  /**
   * Re-lists the server's tools (done automatically on `notifications/tools/list_changed`).
   * Concurrent refreshes are coalesced; resolves when the list is current.
   */
  refreshTools(): Promise<void> {
    return this.#tools.refresh();
  }

  /** Ends the server process and the connection. Later calls resolve `error`. Idempotent. */
  close(): Promise<void> {
    return this.#connection.close();
  }
}
