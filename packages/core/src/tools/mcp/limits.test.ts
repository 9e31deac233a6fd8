// An MCP server is a process Nerva does not control: JSON nested far too deep in a tool's
// inputSchema, a tool result or a log message must not reach callers (who serialise it, and
// would overflow the stack), and deep arguments must be refused before they are sent.
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ExecContext } from "../../context/exec-context.js";
import { McpToolManager, type McpNotification } from "./mcp-tool-manager.js";

const SERVER = fileURLToPath(
  new URL("../../../test/fixtures/mcp-deep-server.mjs", import.meta.url),
);

describe("McpToolManager against a server sending deep JSON", () => {
  let manager: McpToolManager;
  const seen: McpNotification[] = [];

  beforeAll(async () => {
    manager = await McpToolManager.connect({
      command: process.execPath,
      args: [SERVER],
      name: "deep",
      onNotification: (n) => void seen.push(n),
    });
  });
  afterAll(async () => {
    await manager.close();
  });

  it("leaves out a tool whose inputSchema nests too deep, says so, and keeps the others", async () => {
    expect(manager.toolNames()).toEqual(["fine", "deep_result", "deep_log"]);
    expect(seen).toContainEqual({
      kind: "error",
      message:
        'Tool "deep_schema" of MCP server "deep" was left out: its inputSchema is nested deeper than 64 levels.',
    });
    const ctx = ExecContext.create();
    // What discover returns can be serialised (it could not, before).
    expect(() => JSON.stringify(manager.discover(ctx))).not.toThrow();
    ctx.dispose();
  });

  it("turns a result nested too deep into an error result", async () => {
    const ctx = ExecContext.create();
    const result = await manager.call("deep_result", {}, ctx);
    expect(result).toMatchObject({
      status: "error",
      error:
        'Tool "deep_result" returned a result that is nested deeper than 64 levels; it was dropped.',
    });
    expect(() => JSON.stringify(result)).not.toThrow();
    ctx.dispose();
  });

  it("drops log data nested too deep instead of handing it on", async () => {
    const ctx = ExecContext.create();
    const result = await manager.call("deep_log", {}, ctx);
    expect(result.status).toBe("success");
    expect(seen).toContainEqual({
      kind: "log",
      level: "info",
      logger: null,
      data: "(log data dropped: nested deeper than 64 levels)",
    });
    expect(ctx.events.find((e) => e.name === "mcp.log")?.attributes["data"]).toBe(
      "(log data dropped: nested deeper than 64 levels)",
    );
    ctx.dispose();
  });

  it("refuses arguments nested too deep before sending them, and still serves the next call", async () => {
    const ctx = ExecContext.create();
    const deep: unknown = JSON.parse("[".repeat(20_000) + "]".repeat(20_000));
    const refused = await manager.call("fine", { q: deep as string }, ctx);
    expect(refused).toMatchObject({
      status: "error",
      error:
        'Invalid arguments for tool "fine": nested deeper than 64 levels; pass flatter arguments.',
    });
    const fine = await manager.call("fine", { q: "x" }, ctx);
    expect(fine).toMatchObject({ status: "success", output: 'fine: {"q":"x"}' });
    ctx.dispose();
  });
});
