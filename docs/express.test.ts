// docs/express.md: its complete example runs in docs/snippets.test.ts; this keeps the short
// block at the top of the page the same code as that example, and the names it uses exported.
import { describe, expect, it } from "vitest";
import * as bridge from "@nerva/express";
import * as http from "@nerva/core/http";
import { missingLines, pageText, tsBlocks } from "./bridge-docs.js";

describe("docs/express.md", () => {
  const [summary, full] = tsBlocks("express.md");

  it("has a short block and a complete, runnable example", () => {
    expect(summary).toBeDefined();
    expect(full).toMatch(/app\.listen\(0\)/);
    expect(pageText("express.md")).toMatch(/```ts\nimport assert/);
  });

  it("shows in its short block only lines of the complete example", () => {
    expect(missingLines(summary as string, full as string)).toEqual([]);
  });

  it("names functions @nerva/express exports", () => {
    for (const name of ["nervaMiddleware", "nervaErrorHandler", "sendSSE"]) {
      expect(pageText("express.md")).toContain(`${name}(`);
      expect(bridge).toHaveProperty(name);
    }
    // Shared helpers come from @nerva/core/http: a bridge exports only its own glue.
    for (const name of ["jsonBodyOf", "httpStatusOfResult"]) {
      expect(http).toHaveProperty(name);
      expect(bridge).not.toHaveProperty(name);
    }
  });
});
