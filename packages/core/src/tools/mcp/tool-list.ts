import { jsonLimitViolation } from "../../internal/json-limits.js";
import { messageOf } from "../../runtime/results.js";
import type { JsonSchema, ToolInfo } from "../types.js";
import type { McpConnection } from "./connection.js";

/** A tool of the server: its name there, and what callers see (name with the prefix). */
export interface McpTool {
  readonly serverName: string;
  readonly info: ToolInfo;
}

/**
 * The server's tools as exposed: listed page by page, renamed with `toolPrefix`, each inputSchema
 * bounded (one that is too deep or too big leaves its tool out), refreshed on demand.
 */
export class McpToolList {
  readonly #connection: McpConnection;
  readonly #prefix: string;
  #tools = new Map<string, McpTool>();
  #refresh: Promise<void> | null = null;
  #refreshAgain = false;

  constructor(connection: McpConnection, prefix: string) {
    this.#connection = connection;
    this.#prefix = prefix;
  }

  get(name: string): McpTool | undefined {
    return this.#tools.get(name);
  }

  names(): readonly string[] {
    return [...this.#tools.keys()];
  }

  entries(): Iterable<readonly [string, McpTool]> {
    return this.#tools;
  }

  /** Re-lists the tools; concurrent refreshes are coalesced; resolves when the list is current. */
  refresh(): Promise<void> {
    if (this.#refresh !== null) {
      this.#refreshAgain = true;
      return this.#refresh;
    }
    const run = async (): Promise<void> => {
      do {
        this.#refreshAgain = false;
        try {
          await this.listAll();
          this.#connection.notify({ kind: "tools_changed", tools: this.names() });
        } catch (err) {
          if (this.#connection.connected) {
            this.#connection.notify({
              kind: "error",
              message: `Refreshing the tool list failed: ${messageOf(err)}`,
            });
          }
        }
      } while (this.#refreshAgain && this.#connection.connected);
    };
    this.#refresh = run().finally(() => {
      this.#refresh = null;
    });
    return this.#refresh;
  }

  /** Lists every page of the server's tools and replaces the list (once all pages came). */
  async listAll(): Promise<void> {
    const next = new Map<string, McpTool>();
    let cursor: string | undefined;
    do {
      const page = await this.#connection.client.listTools(cursor === undefined ? {} : { cursor }, {
        timeout: this.#connection.connectTimeoutMs,
      });
      for (const t of page.tools) {
        const name = this.#prefix + t.name;
        const { $schema: _ignored, ...parameters } = t.inputSchema as Record<string, unknown>;
        const violation = jsonLimitViolation(parameters);
        if (violation !== null) {
          // One unusable schema must not cost the server's other tools.
          this.#connection.notify({
            kind: "error",
            message: `Tool "${name}" of MCP server "${this.#connection.label}" was left out: its inputSchema is ${violation}.`,
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
}
