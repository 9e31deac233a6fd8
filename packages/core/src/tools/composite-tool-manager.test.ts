import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { ExecContext } from "../context/exec-context.js";
import { ErrorCode, NervaError } from "../errors.js";
import { CompositeToolManager } from "./composite-tool-manager.js";
import { FunctionToolManager, defineTool } from "./function-tool-manager.js";
import { McpToolManager, type McpNotification } from "./mcp/mcp-tool-manager.js";

const SERVER = fileURLToPath(new URL("../../test/fixtures/mcp-server.mjs", import.meta.url));
const ctx = (allowedTools: string[] | null = null) =>
  ExecContext.create({ permissions: { allowedTools } });
const tool = (name: string, output: string) =>
  defineTool({
    name,
    description: `returns ${output}`,
    parameters: z.object({}),
    run: () => output,
  });

const open: McpToolManager[] = [];
afterAll(async () => {
  await Promise.all(open.map((m) => m.close()));
});

describe("CompositeToolManager", () => {
  it("combines function tools and a real MCP server", async () => {
    const mcp = await McpToolManager.connect({
      command: process.execPath,
      args: [SERVER],
      toolPrefix: "mcp.",
    });
    open.push(mcp);
    const tools = new CompositeToolManager([
      new FunctionToolManager({ tools: [tool("local", "L")] }),
      mcp,
    ]);
    const names = (await tools.discover(ctx())).map((t) => t.name);
    expect(names).toContain("local");
    expect(names).toContain("mcp.add");
    expect((await tools.call("local", {}, ctx())).output).toBe("L");
    expect((await tools.call("mcp.add", { a: 1, b: 2 }, ctx())).output).toEqual({ sum: 3 });
    // Permission filtering across managers.
    const c = ctx(["mcp.echo"]);
    expect((await tools.discover(c)).map((t) => t.name)).toEqual(["mcp.echo"]);
    expect((await tools.call("local", {}, c)).status).toBe("permission_denied");
    expect(await tools.call("missing", {}, ctx())).toMatchObject({ status: "not_found" });
  });

  it("throws at construction on a name collision, naming both managers", () => {
    let err: unknown;
    try {
      new CompositeToolManager([
        new FunctionToolManager({ tools: [tool("search", "a")] }),
        new FunctionToolManager({ tools: [tool("search", "b"), tool("other", "c")] }),
      ]);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(NervaError);
    expect((err as NervaError).code).toBe(ErrorCode.INVALID_OPTIONS);
    expect((err as NervaError).message).toBe(
      'Tool name collision: "search" is provided by managers[0] (FunctionToolManager) and managers[1] (FunctionToolManager). Rename one of the tools, or give an MCP server a toolPrefix.',
    );
  });

  it("refuses an ambiguous name that appears later (tools/list_changed) instead of guessing", async () => {
    let changed!: (n: McpNotification) => void;
    const mcp = await McpToolManager.connect({
      command: process.execPath,
      args: [SERVER],
      onNotification: (n) => changed?.(n),
    });
    open.push(mcp);
    const local = new FunctionToolManager({ tools: [tool("late", "local")] });
    const tools = new CompositeToolManager([local, mcp]);
    const added = new Promise<void>((resolve) => {
      changed = (n) => {
        if (n.kind === "tools_changed" && n.tools.includes("late")) resolve();
      };
    });
    await tools.call("add_tool", { name: "late" }, ctx());
    await added;
    const c = ctx();
    expect((await tools.discover(c)).map((t) => t.name)).not.toContain("late");
    expect(c.events).toContainEqual(
      expect.objectContaining({
        name: "tools.collision",
        attributes: { tool: "late", managers: 2 },
      }),
    );
    const r = await tools.call("late", {}, ctx());
    expect(r.status).toBe("error");
    expect(r.error).toContain('Tool "late" is ambiguous');
    expect(r.error).toContain("managers[1] (McpToolManager)");
  });

  it("discovers through every manager without a stage span of its own", async () => {
    const tools = new CompositeToolManager([
      new FunctionToolManager({ tools: [tool("a", "a")] }),
      new FunctionToolManager({ tools: [tool("b", "b")] }),
    ]);
    const c = ctx();
    expect((await tools.discover(c)).map((t) => t.name)).toEqual(["a", "b"]);
    expect(c.spans).toEqual([]);
  });

  it("closes every manager and reports failures", async () => {
    const closed: string[] = [];
    const failing = Object.assign(new FunctionToolManager(), {
      close: async () => {
        throw new Error("socket stuck");
      },
    });
    const ok = Object.assign(new FunctionToolManager(), {
      close: async () => void closed.push("ok"),
    });
    await expect(new CompositeToolManager([failing, ok]).close()).rejects.toThrow(
      "Closing tool managers failed: managers[0] (FunctionToolManager): socket stuck.",
    );
    expect(closed).toEqual(["ok"]);
  });

  it("rejects things that are not tool managers", () => {
    expect(() => new CompositeToolManager([{} as never])).toThrow(
      /managers\.0: must be a ToolManager/,
    );
    expect(() => new CompositeToolManager("x" as never)).toThrow(/managers: must be an array/);
  });
});
