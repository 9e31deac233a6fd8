import type { ExecContext } from "../context/exec-context.js";
import { ErrorCode, NervaError } from "../errors.js";
import { checkContext } from "../runtime/guard.js";
import { messageOf } from "../runtime/results.js";
import { deniedResult, notFoundResult, toolResult } from "./results.js";
import {
  ToolStatus,
  type ToolCallOptions,
  type ToolInfo,
  type ToolManager,
  type ToolResult,
} from "./types.js";

const isManager = (v: unknown): v is ToolManager =>
  typeof v === "object" &&
  v !== null &&
  ["discover", "call", "toolNames", "close"].every(
    (m) => typeof (v as Record<string, unknown>)[m] === "function",
  );

function describeManager(manager: ToolManager, index: number): string {
  return `managers[${index}] (${manager.constructor?.name ?? "ToolManager"})`;
}

/**
 * Several tool managers behind one (e.g. local functions plus two MCP servers). Tool names must
 * be unique across them: a collision throws at construction. If a manager's list changes later
 * (an MCP server's `tools/list_changed`) and two managers then offer the same name, that name
 * is ambiguous: `discover` leaves it out and records a `tools.collision` event, and `call`
 * resolves `error` naming both managers, rather than picking one silently.
 *
 * @example
 * const tools = new CompositeToolManager([
 *   new FunctionToolManager({ tools: [add] }),
 *   await McpToolManager.connect({ command: "node", args: ["fs-server.mjs"], toolPrefix: "fs." }),
 * ]);
 * const result = await tools.call("fs.read_file", { path: "README.md" }, ctx);
 */
export class CompositeToolManager implements ToolManager {
  readonly #managers: readonly ToolManager[];

  constructor(managers: readonly ToolManager[]) {
    if (!Array.isArray(managers)) {
      throw new NervaError(
        ErrorCode.INVALID_OPTIONS,
        "Invalid managers: must be an array of ToolManagers (objects with discover, call, toolNames and close).",
        { issues: [{ path: "managers", message: "must be an array" }] },
      );
    }
    managers.forEach((m, i) => {
      if (!isManager(m)) {
        throw new NervaError(
          ErrorCode.INVALID_OPTIONS,
          `Invalid managers.${i}: must be a ToolManager (an object with discover, call, toolNames and close).`,
          { issues: [{ path: `managers.${i}`, message: "not a ToolManager" }] },
        );
      }
    });
    this.#managers = Object.freeze([...managers]);
    const owners = new Map<string, number>();
    const collisions: string[] = [];
    this.#managers.forEach((m, i) => {
      for (const name of m.toolNames()) {
        const other = owners.get(name);
        if (other !== undefined) {
          collisions.push(
            `"${name}" is provided by ${describeManager(this.#managers[other]!, other)} and ${describeManager(m, i)}`,
          );
        } else {
          owners.set(name, i);
        }
      }
    });
    if (collisions.length > 0) {
      throw new NervaError(
        ErrorCode.INVALID_OPTIONS,
        `Tool name collision: ${collisions.join("; ")}. Rename one of the tools, or give an MCP server a toolPrefix.`,
        { issues: collisions.map((message) => ({ path: "managers", message })) },
      );
    }
  }

  /** The managers combined, in order. */
  get managers(): readonly ToolManager[] {
    return this.#managers;
  }

  toolNames(): readonly string[] {
    return [...new Set(this.#managers.flatMap((m) => m.toolNames()))];
  }

  /** Tools of every manager that the context may use; ambiguous names are left out. */
  async discover(ctx: ExecContext): Promise<readonly ToolInfo[]> {
    checkContext(ctx);
    const lists = await Promise.all(this.#managers.map((m) => m.discover(ctx)));
    const counts = new Map<string, number>();
    for (const list of lists)
      for (const t of list) counts.set(t.name, (counts.get(t.name) ?? 0) + 1);
    const tools: ToolInfo[] = [];
    for (const list of lists) {
      for (const t of list) {
        if (counts.get(t.name) === 1) tools.push(t);
      }
    }
    for (const [name, count] of counts) {
      if (count > 1) ctx.event("tools.collision", { tool: name, managers: count });
    }
    return Object.freeze(tools);
  }

  /**
   * Routes the call to the one manager that provides `name`. Permission checks, unknown and
   * ambiguous names are answered here.
   */
  async call(
    name: string,
    args: unknown,
    ctx: ExecContext,
    options?: ToolCallOptions,
  ): Promise<ToolResult> {
    checkContext(ctx);
    const owners = this.#managers.filter((m) => m.toolNames().includes(name));
    if (owners.length === 1 && ctx.permissions.canUseTool(name)) {
      return owners[0]!.call(name, args, ctx, options);
    }
    const startedMs = performance.now();
    if (!ctx.permissions.canUseTool(name)) return deniedResult(name, ctx, startedMs);
    if (owners.length === 0) {
      return notFoundResult(name, this.toolNames(), ctx, startedMs);
    }
    const which = owners.map((m) => describeManager(m, this.#managers.indexOf(m))).join(" and ");
    ctx.event("tools.collision", { tool: name, managers: owners.length });
    return toolResult(ToolStatus.ERROR, startedMs, {
      error: `Tool "${name}" is ambiguous: it is provided by ${which}. Rename one of them, or give an MCP server a toolPrefix.`,
    });
  }

  /** Closes every manager, even if some fail; then throws INTERNAL listing the failures. */
  async close(): Promise<void> {
    const results = await Promise.allSettled(this.#managers.map((m) => m.close()));
    const failures = results.flatMap((r, i) =>
      r.status === "rejected"
        ? [`${describeManager(this.#managers[i]!, i)}: ${messageOf(r.reason)}`]
        : [],
    );
    if (failures.length > 0) {
      throw new NervaError(
        ErrorCode.INTERNAL,
        `Closing tool managers failed: ${failures.join("; ")}.`,
      );
    }
  }
}
