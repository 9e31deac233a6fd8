import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { maskSecrets, secretValues } from "../../internal/secrets.js";
import type { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { z } from "zod";
import { ErrorCode, NervaError } from "../../errors.js";
import { importOptional } from "../../internal/optional-dependency.js";
import { messageOf } from "../../runtime/results.js";
import type { McpNotification, OptionsSchema } from "./options.js";

const SDK = "@modelcontextprotocol/sdk";
type ClientModule = typeof import("@modelcontextprotocol/sdk/client/index.js");
type StdioModule = typeof import("@modelcontextprotocol/sdk/client/stdio.js");
type TypesModule = typeof import("@modelcontextprotocol/sdk/types.js");

const STDERR_KEEP = 4096;

/** The parameters of a `notifications/message` (a server log message). */
export interface LogParams {
  level: string;
  logger?: string | undefined;
  data: unknown;
}

/** The parameters of a `notifications/progress`. */
export interface ProgressParams {
  progressToken: string | number;
  progress: number;
  total?: number | undefined;
  message?: string | undefined;
}

/** Where the connection hands what the server sends beside the answers to calls. */
export interface McpHandlers {
  readonly toolsChanged: () => void;
  readonly log: (params: LogParams) => void;
  readonly progress: (params: ProgressParams) => void;
}

/**
 * The server process and the SDK session with it: start-up, the tail of its stderr kept for error
 * messages, the open/closing/closed/exited state and the `onNotification` observer.
 */
export class McpConnection {
  readonly client: Client;
  /** The server's name in errors and spans. */
  readonly label: string;
  readonly connectTimeoutMs: number;
  readonly #transport: StdioClientTransport;
  readonly #command: string;
  readonly #onNotification: ((n: McpNotification) => void) | undefined;
  readonly #stderr: { text: string };
  /** The values of `options.env`: masked wherever the server's own text is quoted. */
  readonly #secrets: readonly string[];
  #state: "open" | "closing" | "closed" | "exited" = "open";

  private constructor(
    client: Client,
    transport: StdioClientTransport,
    stderr: { text: string },
    o: z.output<typeof OptionsSchema>,
  ) {
    this.client = client;
    this.#transport = transport;
    this.#stderr = stderr;
    this.#command = o.command;
    this.label = o.name ?? o.command;
    this.connectTimeoutMs = o.connectTimeoutSeconds * 1000;
    this.#onNotification = o.onNotification;
    this.#secrets = secretValues(o.env);
  }

  /** `text` (the server's stderr, errors or logs) with the values of `options.env` masked. */
  mask(text: string): string {
    return maskSecrets(text, this.#secrets);
  }

  /**
   * Loads the SDK (MISSING_DEPENDENCY when it is not installed), sets up the server's transport
   * and the client, with the server's notifications going to `handlers`. Nothing runs until
   * {@link McpConnection.open}.
   */
  static async create(
    o: z.output<typeof OptionsSchema>,
    handlers: McpHandlers,
  ): Promise<McpConnection> {
    const feature = "McpToolManager";
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
    const client = new clientModule.Client(
      { name: "nerva", version: "0.1.0" },
      {
        capabilities: {},
        listChanged: {
          tools: {
            autoRefresh: false,
            debounceMs: 0,
            onChanged: () => handlers.toolsChanged(),
          },
        },
      },
    );
    const connection = new McpConnection(client, transport, stderr, o);
    client.setNotificationHandler(typesModule.LoggingMessageNotificationSchema, (n) =>
      handlers.log(n.params),
    );
    client.setNotificationHandler(typesModule.ProgressNotificationSchema, (n) =>
      handlers.progress(n.params),
    );
    client.onclose = () => connection.#onClose();
    return connection;
  }

  /**
   * Starts the server, initialises the session and runs `ready` (the first tool listing). Throws
   * INVALID_OPTIONS for a command that cannot be started, and INTERNAL (with the server's stderr)
   * when the server fails during start-up.
   */
  async open(ready: () => Promise<void>): Promise<void> {
    try {
      await this.client.connect(this.#transport, { timeout: this.connectTimeoutMs });
      await ready();
    } catch (err) {
      await this.client.close().catch(() => {});
      const code = (err as { code?: unknown }).code;
      if (code === "ENOENT" || code === "EACCES") {
        throw new NervaError(
          ErrorCode.INVALID_OPTIONS,
          `Invalid options.command: MCP server "${this.label}" could not be started (${messageOf(err)}). Check that "${this.#command}" exists and is executable.`,
          { cause: err, issues: [{ path: "options.command", message: String(code) }] },
        );
      }
      throw new NervaError(
        ErrorCode.INTERNAL,
        `MCP server "${this.label}" failed to start: ${this.mask(messageOf(err))}${this.#stderrTail()}`,
        { cause: err },
      );
    }
  }

  /** The server's process id while it runs, else `null`. */
  get pid(): number | null {
    return this.#transport.pid;
  }

  /** Whether the server is connected (not closed and not exited). */
  get connected(): boolean {
    return this.#state === "open";
  }

  /** Whether the server exited on its own (not closed by us). */
  get exited(): boolean {
    return this.#state === "exited";
  }

  /** Ends the server process and the connection. Idempotent. */
  async close(): Promise<void> {
    if (this.#state === "closing" || this.#state === "closed") return;
    const exited = this.#state === "exited";
    this.#state = "closing";
    try {
      await this.client.close();
    } finally {
      this.#state = exited ? "exited" : "closed";
    }
  }

  #onClose(): void {
    if (this.#state === "open") {
      this.#state = "exited";
      this.notify({ kind: "error", message: this.downMessage() });
    }
  }

  notify(n: McpNotification): void {
    try {
      this.#onNotification?.(n);
    } catch {
      // An observer's bug must not break the connection's message loop.
    }
  }

  #stderrTail(): string {
    const tail = this.mask(this.#stderr.text).trim();
    return tail === ""
      ? ""
      : ` Server stderr (last lines): ${tail.split("\n").slice(-5).join(" | ")}`;
  }

  /** Why calls fail while the server is not connected: exited (with its stderr) or closed. */
  downMessage(): string {
    return this.#state === "exited"
      ? `MCP server "${this.label}" exited.${this.#stderrTail()}`
      : `MCP server "${this.label}" is closed.`;
  }
}
