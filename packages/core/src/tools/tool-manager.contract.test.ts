import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { ExecContext } from "../context/exec-context.js";
import { CompositeToolManager } from "./composite-tool-manager.js";
import { FunctionToolManager, defineTool } from "./function-tool-manager.js";
import { McpToolManager } from "./mcp/mcp-tool-manager.js";
import { ToolStatus, type ToolManager, type ToolResult } from "./types.js";

/**
 * The ToolManager contract, run against every implementation. Each provides the same three
 * tools: `echo` ({ text } → text), `fail` (a tool-level failure) and `stubborn` ({ ms }: sleeps
 * and ignores cancellation).
 */
const SERVER = fileURLToPath(new URL("../../test/fixtures/mcp-server.mjs", import.meta.url));
// unref: the tool ignores cancellation on purpose, but must not hold the test process open.
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms).unref());
const functionTools = () => [
  defineTool({
    name: "echo",
    description: "Echoes text",
    parameters: z.object({ text: z.string() }),
    run: ({ text }) => text,
  }),
  defineTool({
    name: "fail",
    description: "Fails",
    parameters: z.object({}),
    run: () => {
      throw new Error("deliberate failure");
    },
  }),
  defineTool({
    name: "stubborn",
    description: "Sleeps, ignoring cancellation",
    parameters: z.object({ ms: z.number() }),
    run: async ({ ms }) => {
      await sleep(ms);
      return `slept ${ms}`;
    },
  }),
];

const created: ToolManager[] = [];
const implementations: [string, () => Promise<ToolManager>][] = [
  ["FunctionToolManager", async () => new FunctionToolManager({ tools: functionTools() })],
  ["McpToolManager", () => McpToolManager.connect({ command: process.execPath, args: [SERVER] })],
  [
    "CompositeToolManager",
    async () => {
      const [echo, fail, stubborn] = functionTools();
      return new CompositeToolManager([
        new FunctionToolManager({ tools: [echo!] }),
        new FunctionToolManager({ tools: [fail!, stubborn!] }),
      ]);
    },
  ],
];

afterAll(async () => {
  await Promise.all(created.map((m) => m.close()));
});

const STATUSES: string[] = Object.values(ToolStatus);
function checkShape(r: ToolResult): void {
  expect(STATUSES).toContain(r.status);
  expect(r.durationMs).toBeGreaterThanOrEqual(0);
  if (r.status === "success") expect(r.error).toBeNull();
  else {
    expect(r.output).toBeNull();
    expect(typeof r.error).toBe("string");
    expect(r.error).not.toBe("");
  }
  expect(Object.isFrozen(r)).toBe(true);
}

describe.each(implementations)("ToolManager contract: %s", (_name, make) => {
  const manager = async () => {
    const m = await make();
    created.push(m);
    return m;
  };

  it("discovers only permitted tools, with object parameter schemas", async () => {
    const m = await manager();
    expect([...m.toolNames()]).toEqual(expect.arrayContaining(["echo", "fail", "stubborn"]));
    const all = await m.discover(ExecContext.create());
    for (const t of all) expect(t.parameters["type"]).toBe("object");
    const some = await m.discover(
      ExecContext.create({ permissions: { allowedTools: ["echo", "ghost"] } }),
    );
    expect(some.map((t) => t.name)).toEqual(["echo"]);
    const none = await m.discover(ExecContext.create({ permissions: { allowedTools: [] } }));
    expect(none).toEqual([]);
  });

  it("answers every outcome with a status, never a rejection", async () => {
    const m = await manager();
    const ctx = ExecContext.create();
    const ok = await m.call("echo", { text: "hi" }, ctx);
    expect([ok.status, ok.output]).toEqual(["success", "hi"]);
    const failed = await m.call("fail", {}, ctx);
    expect(failed.status).toBe("error");
    expect(failed.error).toContain("deliberate failure");
    const badArgs = await m.call("echo", { text: 42 }, ctx);
    expect(badArgs.status).toBe("error");
    const missing = await m.call("nope", {}, ctx);
    expect(missing.status).toBe("not_found");
    const denied = await m.call(
      "echo",
      { text: "hi" },
      ExecContext.create({ permissions: { allowedTools: ["fail"] } }),
    );
    expect(denied.status).toBe("permission_denied");
    for (const r of [ok, failed, badArgs, missing, denied]) checkShape(r);
  });

  it("leaves the tools.call span to its caller (the orchestrator's kit opens it)", async () => {
    const m = await manager();
    const ctx = ExecContext.create({ permissions: { allowedTools: ["echo"] } });
    await m.call("echo", { text: "x" }, ctx);
    await m.call("fail", {}, ctx);
    await m.discover(ctx);
    expect(ctx.spans.filter((s) => s.name.startsWith("tools."))).toEqual([]);
  });

  it("resolves timeout at the request's deadline even when the tool ignores it", async () => {
    const m = await manager();
    const started = performance.now();
    const r = await m.call("stubborn", { ms: 3000 }, ExecContext.create({ timeoutSeconds: 0.15 }));
    expect(r.status).toBe("timeout");
    checkShape(r);
    expect(performance.now() - started).toBeLessThan(1500);
  });

  it("resolves error after close()", async () => {
    const m = await manager();
    await m.close();
    const r = await m.call("echo", { text: "x" }, ExecContext.create());
    expect(r.status).toBe("error");
    checkShape(r);
  });
});
