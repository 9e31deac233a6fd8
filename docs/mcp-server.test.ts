// docs/mcp-server.md: its complete example runs in docs/snippets.test.ts; this keeps the short
// block at the top of the page the same code as that example.
import { describe, expect, it } from "vitest";
import * as mcpServer from "@nerva/core/mcp-server";
import { missingLines, tsBlocks } from "./bridge-docs.js";

describe("docs/mcp-server.md", () => {
  const [summary, full] = tsBlocks("mcp-server.md");

  it("shows in its short block only lines of the complete example", () => {
    expect(summary).toMatch(/createMcpHandler\(/);
    expect(full).toMatch(/app\.listen\(0\)/);
    expect(missingLines(summary as string, full as string)).toEqual([]);
  });

  it("names what @nerva/core/mcp-server exports", () => {
    expect(mcpServer).toHaveProperty("createMcpHandler");
  });
});
