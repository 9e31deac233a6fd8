import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { z } from "zod";
import type { ExecContext } from "../../context/exec-context.js";
import { ErrorCode, NervaError, parseOrThrow } from "../../errors.js";
import { jsonLimitViolation } from "../../internal/json-limits.js";
import { checkContext } from "../../runtime/guard.js";
import { messageOf } from "../../runtime/results.js";
import type { Attributes } from "../../types/trace.js";
import { runWithDeadline, type DeadlineOutcome } from "../deadline.js";
import {
  deniedResult,
  discoverAllowed,
  describeLimit,
  endedResult,
  notFoundResult,
  toolResult,
} from "../results.js";
import {
  ToolStatus,
  type JsonSchema,
  type ToolInfo,
  type ToolManager,
  type ToolCallOptions,
  type ToolResult,
} from "../types.js";
import { importOptional } from "../../internal/optional-dependency.js";

const SDK = "@modelcontextprotocol/sdk";
type ClientModule = typeof import("@modelcontextprotocol/sdk/client/index.js");
type StdioModule = typeof import("@modelcontextprotocol/sdk/client/stdio.js");
type TypesModule = typeof import("@modelcontextprotocol/sdk/types.js");

const seconds = z.number().positive().finite();
const OptionsSchema = z
  .object({
    command: z.string().min(1),
    args: z.array(z.string()).default([]),
    env: z.record(z.string(), z.string()).default({}),
    cwd: z.string().min(1).optional(),
    name: z.string().min(1).max(128).optional(),
    toolPrefix: z
      .string()
      .regex(/^[A-Za-z0-9_.-]{1,32}$/, "must be 1-32 letters, digits, '_', '.' or '-'")
      .default(""),
    timeoutSeconds: seconds.default(30),
    connectTimeoutSeconds: seconds.default(10),
    onNotification: z
      .custom<(n: MCPNotification) => void>((v) => typeof v === "function", "must be a function")
      .optional(),
  })
  .strict();

/**
 * Options of {@link MCPToolManager.connect}:
 * - `command`, `args`, `cwd`: how to start the server (spawned directly, no shell);
 * - `env`: variables added to the child's environment. The child does NOT inherit this
 *   process's environment: it gets only HOME, LOGNAME, PATH, SHELL, TERM and USER plus `env`,
 *   so secrets stay out unless you pass them;
 * - `name`: label in errors and spans (default: the command);
 * - `toolPrefix`: prepended to the server's tool names (e.g. `"fs."`), to keep names unique
 *   across servers;
 * - `timeoutSeconds`: per call (default 30, never past the request's deadline);
 * - `connectTimeoutSeconds`: for start-up and the first tool listing (default 10);
 * - `onNotification`: sees every server log message and tool-list change.
 *
 * @example
 * const options: MCPToolManagerOptions = { command: "node", args: ["server.mjs"], toolPrefix: "fs.", timeoutSeconds: 10 };
 */
export type MCPToolManagerOptions = z.input<typeof OptionsSchema>;

/**
 * A notification from the server, as given to `onNotification`:
 * `log` (a `notifications/message`), `tools_changed` (the tool list was refreshed after a
 * `notifications/tools/list_changed`; `tools` are the exposed names), or `error` (a refresh
 * failed, or the server exited).
 *
 * @example
 * const onNotification = (n: MCPNotification) => { if (n.kind === "log") logger.info(n.data); };
 */
export type MCPNotification =
  | {
      readonly kind: "log";
      readonly level: string;
      readonly logger: string | null;
      readonly data: unknown;
    }
  | { readonly kind: "tools_changed"; readonly tools: readonly string[] }
  | { readonly kind: "error"; readonly message: string };

interface McpTool {
  readonly serverName: string;
  readonly info: ToolInfo;
}

const STDERR_KEEP = 4096;

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
 * Tools served by a Model Context Protocol server over stdio, through the official SDK
 * (`@modelcontextprotocol/sdk`, an optional peer dependency loaded on first use). Start one with
 * {@link MCPToolManager.connect}; it spawns the server, initialises the session and lists the
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
 * const tools = await MCPToolManager.connect({ command: "node", args: ["./mcp-server.mjs"] });
 * try {
 *   const result = await tools.call("add", { a: 1, b: 2 }, ctx);
 * } finally {
 *   await tools.close();
 * }
 */
export class MCPToolManager implements ToolManager {
  readonly #client: Client;
  readonly #transport: StdioClientTransport;
  readonly #label: string;
  readonly #prefix: string;
  readonly #timeoutSeconds: number;
  readonly #connectTimeoutMs: number;
  readonly #onNotification: ((n: MCPNotification) => void) | undefined;
  readonly #stderr: { text: string };
  readonly #inFlight = new Set<ExecContext>();
  readonly #progress = new Map<string, { readonly ctx: ExecContext; readonly tool: string }>();
  #tokens = 0;
  #tools = new Map<string, McpTool>();
  #state: "open" | "closing" | "closed" | "exited" = "open";
  #refresh: Promise<void> | null = null;
  #refreshAgain = false;

  private constructor(
    client: Client,
    transport: StdioClientTransport,
    stderr: { text: string },
    o: z.output<typeof OptionsSchema>,
  ) {
    this.#client = client;
    this.#transport = transport;
    this.#stderr = stderr;
    this.#label = o.name ?? o.command;
    this.#prefix = o.toolPrefix;
    this.#timeoutSeconds = o.timeoutSeconds;
    this.#connectTimeoutMs = o.connectTimeoutSeconds * 1000;
    this.#onNotification = o.onNotification;
  }

  /**
   * Starts the server and lists its tools. Throws `NervaError` INVALID_OPTIONS for bad options
   * or a command that cannot be started, MISSING_DEPENDENCY when `@modelcontextprotocol/sdk` is
   * not installed, and INTERNAL when the server fails during start-up (with its stderr).
   *
   * @example
   * const tools = await MCPToolManager.connect({ command: "node", args: ["./servers/files.mjs"], toolPrefix: "fs." });
   */
  static async connect(options: MCPToolManagerOptions): Promise<MCPToolManager> {
    const o = parseOrThrow(
      OptionsSchema,
      options,
      ErrorCode.INVALID_OPTIONS,
      "options",
      'Pass { command: "node", args?: string[], env?: Record<string, string>, cwd?, name?, toolPrefix?, timeoutSeconds?, connectTimeoutSeconds?, onNotification? }.',
    );
    const feature = "MCPToolManager";
    const [clientModule, stdioModule, typesModule] = await Promise.all([
      importOptional(SDK, () => import(`${SDK}/client/index.js`) as Promise<ClientModule>, feature),
      importOptional(SDK, () => import(`${SDK}/client/stdio.js`) as Promise<StdioModule>, feature),
      importOptional(SDK, () => import(`${SDK}/types.js`) as Promise<TypesModule>, feature),
    ]);
    const stderr = { text: "" };
    const transport = new stdioModule.StdioClientTransport({
      command: o.command,
      args: o.args,
      env: o.env,
      ...(o.cwd === undefined ? {} : { cwd: o.cwd }),
      stderr: "pipe",
    });
    // Drain stderr (a full pipe would block the server) and keep its tail for error messages.
    transport.stderr?.on("data", (chunk: Buffer | string) => {
      stderr.text = (stderr.text + chunk.toString()).slice(-STDERR_KEEP);
    });
    let manager: MCPToolManager | null = null;
    const client = new clientModule.Client(
      { name: "nerva", version: "0.1.0" },
      {
        capabilities: {},
        listChanged: {
          tools: {
            autoRefresh: false,
            debounceMs: 0,
            onChanged: () => void manager?.refreshTools(),
          },
        },
      },
    );
    manager = new MCPToolManager(client, transport, stderr, o);
    const self = manager;
    client.setNotificationHandler(typesModule.LoggingMessageNotificationSchema, (n) =>
      self.#onLog(n.params),
    );
    client.setNotificationHandler(typesModule.ProgressNotificationSchema, (n) =>
      self.#onProgress(n.params),
    );
    client.onclose = () => self.#onClose();
    try {
      await client.connect(transport, { timeout: self.#connectTimeoutMs });
      await self.#listAll();
    } catch (err) {
      await client.close().catch(() => {});
      const code = (err as { code?: unknown }).code;
      if (code === "ENOENT" || code === "EACCES") {
        throw new NervaError(
          ErrorCode.INVALID_OPTIONS,
          `Invalid options.command: MCP server "${self.#label}" could not be started (${messageOf(err)}). Check that "${o.command}" exists and is executable.`,
          { cause: err, issues: [{ path: "options.command", message: String(code) }] },
        );
      }
      throw new NervaError(
        ErrorCode.INTERNAL,
        `MCP server "${self.#label}" failed to start: ${messageOf(err)}${self.#stderrTail()}`,
        { cause: err },
      );
    }
    return manager;
  }

  /** The server's process id while it runs, else `null`. */
  get pid(): number | null {
    return this.#transport.pid;
  }

  /** Whether the server is connected (not closed and not exited). */
  get connected(): boolean {
    return this.#state === "open";
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
    options?: ToolCallOptions,
  ): Promise<ToolResult> {
    checkContext(ctx);
    const startedMs = performance.now();
    if (!ctx.permissions.canUseTool(name)) return deniedResult(name, ctx, startedMs);
    if (this.#state !== "open") {
      return toolResult(ToolStatus.ERROR, startedMs, { error: this.#downMessage() });
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
    const limit = describeLimit(ctx, this.#timeoutSeconds);
    const timeoutMs = this.#timeoutSeconds * 1000;
    // The remote round trip, in a child span of its own naming the server (the caller opened
    // `tools.call`); progress notifications become events under it.
    const span = ctx.startSpan("mcp.call", { server: this.#label, tool: tool.serverName });
    if (options?.callId !== undefined) span.setAttribute("gen_ai.tool.call.id", options.callId);
    const outcome = await runWithDeadline(ctx, span, this.#timeoutSeconds, async (scoped) => {
      this.#inFlight.add(scoped);
      // Our own progress tokens (see #onProgress): the SDK's onprogress option drops a progress
      // notification that arrives in the same chunk as the response.
      const token = `nerva-${++this.#tokens}`;
      this.#progress.set(token, { ctx: scoped, tool: name });
      try {
        return await this.#client.callTool(
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
            error: `Tool "${name}" reported an error: ${errorText(result)}`,
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
        const down = this.#exited() ? ` ${this.#downMessage()}` : "";
        return toolResult(ToolStatus.ERROR, startedMs, {
          error: `Tool "${name}" failed: ${messageOf(outcome.error)}.${down}`,
        });
      }
      case "ended":
        return endedResult(name, outcome.reason, startedMs, limit);
    }
  }

  /**
   * Re-lists the server's tools (done automatically on `notifications/tools/list_changed`).
   * Concurrent refreshes are coalesced; resolves when the list is current.
   */
  refreshTools(): Promise<void> {
    if (this.#refresh !== null) {
      this.#refreshAgain = true;
      return this.#refresh;
    }
    const run = async (): Promise<void> => {
      do {
        this.#refreshAgain = false;
        try {
          await this.#listAll();
          this.#notify({ kind: "tools_changed", tools: this.toolNames() });
        } catch (err) {
          if (this.#state === "open") {
            this.#notify({
              kind: "error",
              message: `Refreshing the tool list failed: ${messageOf(err)}`,
            });
          }
        }
      } while (this.#refreshAgain && this.#state === "open");
    };
    this.#refresh = run().finally(() => {
      this.#refresh = null;
    });
    return this.#refresh;
  }

  /** Ends the server process and the connection. Later calls resolve `error`. Idempotent. */
  async close(): Promise<void> {
    if (this.#state === "closing" || this.#state === "closed") return;
    const exited = this.#state === "exited";
    this.#state = "closing";
    try {
      await this.#client.close();
    } finally {
      this.#state = exited ? "exited" : "closed";
    }
  }

  async #listAll(): Promise<void> {
    const next = new Map<string, McpTool>();
    let cursor: string | undefined;
    do {
      const page = await this.#client.listTools(cursor === undefined ? {} : { cursor }, {
        timeout: this.#connectTimeoutMs,
      });
      for (const t of page.tools) {
        const name = this.#prefix + t.name;
        const { $schema: _ignored, ...parameters } = t.inputSchema as Record<string, unknown>;
        const violation = jsonLimitViolation(parameters);
        if (violation !== null) {
          // One unusable schema must not cost the server's other tools.
          this.#notify({
            kind: "error",
            message: `Tool "${name}" of MCP server "${this.#label}" was left out: its inputSchema is ${violation}.`,
          });
          continue;
        }
        next.set(name, {
          serverName: t.name,
          info: Object.freeze({
            name,
            description: t.description ?? t.title ?? "",
            parameters: Object.freeze(parameters) as JsonSchema,
          }),
        });
      }
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    this.#tools = next;
  }

  #onLog(params: { level: string; logger?: string | undefined; data: unknown }): void {
    const logger = params.logger ?? null;
    const violation = jsonLimitViolation(params.data);
    const data = violation === null ? params.data : `(log data dropped: ${violation})`;
    this.#notify({ kind: "log", level: params.level, logger, data });
    if (this.#inFlight.size !== 1) return;
    const [only] = this.#inFlight;
    const attributes: Attributes = { level: params.level, data: attributeText(data) };
    if (logger !== null) attributes["logger"] = logger;
    only?.event("mcp.log", attributes);
  }

  #onProgress(params: {
    progressToken: string | number;
    progress: number;
    total?: number | undefined;
    message?: string | undefined;
  }): void {
    const call = this.#progress.get(String(params.progressToken));
    if (call === undefined) return; // a late notification for a call that already ended
    const attributes: Attributes = { tool: call.tool, progress: params.progress };
    if (params.total !== undefined) attributes["total"] = params.total;
    if (params.message !== undefined) attributes["message"] = attributeText(params.message, 500);
    call.ctx.event("mcp.progress", attributes);
  }

  #onClose(): void {
    if (this.#state === "open") {
      this.#state = "exited";
      this.#notify({ kind: "error", message: this.#downMessage() });
    }
  }

  #notify(n: MCPNotification): void {
    try {
      this.#onNotification?.(n);
    } catch {
      // An observer's bug must not break the connection's message loop.
    }
  }

  #exited(): boolean {
    return this.#state === "exited";
  }

  #stderrTail(): string {
    const tail = this.#stderr.text.trim();
    return tail === ""
      ? ""
      : ` Server stderr (last lines): ${tail.split("\n").slice(-5).join(" | ")}`;
  }

  #downMessage(): string {
    return this.#state === "exited"
      ? `MCP server "${this.#label}" exited.${this.#stderrTail()}`
      : `MCP server "${this.#label}" is closed.`;
  }
}
