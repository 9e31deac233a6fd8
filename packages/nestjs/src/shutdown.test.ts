// NervaModule closes what it was given on app.close(): a real MCP server child process (the tools
// of the orchestrator) is gone afterwards, so an e2e test's Node process can exit.
import "reflect-metadata";
import { fileURLToPath } from "node:url";
import { InProcessRuntime, Orchestrator, RuleRouter } from "@nerva/core";
import { McpToolManager } from "@nerva/core/mcp";
import { Module } from "@nestjs/common";
import { ExpressAdapter } from "@nestjs/platform-express";
import { Test } from "@nestjs/testing";
import { expect, it } from "vitest";
import { NervaModule } from "./index.js";

const SERVER = fileURLToPath(new URL("../../core/test/fixtures/mcp-server.mjs", import.meta.url));

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

it("app.close() closes the orchestrator's runtime and tools (an MCP server process ends)", async () => {
  const tools = await McpToolManager.connect({ command: process.execPath, args: [SERVER] });
  const pid = tools.pid as number;
  expect(isAlive(pid)).toBe(true);
  const runtime = new InProcessRuntime();
  runtime.register("echo", async (input) => input.message);
  const orchestrator = new Orchestrator({
    runtime,
    tools,
    router: new RuleRouter({ rules: [], defaultHandler: "echo" }),
  });
  @Module({ imports: [NervaModule.forRoot({ orchestrator, runtime })] })
  class AppModule {}
  const moduleRef = await Test.createTestingModule({ imports: [AppModule] }).compile();
  const app = moduleRef.createNestApplication(new ExpressAdapter(), { logger: false });
  await app.init();
  await app.close();
  // close() resolves once the child exited (the manager waits for it).
  expect(isAlive(pid)).toBe(false);
});
