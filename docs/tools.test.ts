// Keeps docs/tools.md honest beyond its snippets (which docs/snippets.test.ts runs): the status
// table lists exactly the statuses a ToolResult can have, and every manager the page documents is
// exported from the entry point the page names.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import * as core from "@nerva/core/tools";
import * as mcp from "@nerva/core/mcp";

const page = readFileSync(join(dirname(fileURLToPath(import.meta.url)), "tools.md"), "utf8");

describe("docs/tools.md", () => {
  it("documents every ToolStatus, and only those", () => {
    const table = page.slice(
      page.indexOf("| status"),
      page.indexOf("\n\n", page.indexOf("| status")),
    );
    const documented = [...table.matchAll(/^\| `(\w+)`/gm)].map((m) => m[1]);
    expect(documented.sort()).toEqual(Object.values(core.ToolStatus).sort());
  });

  it("names managers that the entry points export", () => {
    for (const name of ["FunctionToolManager", "CompositeToolManager"]) {
      expect(page).toContain(`\n## ${name}\n`);
      expect(core).toHaveProperty(name);
    }
    expect(core).toHaveProperty("defineTool");
    expect(page).toContain("\n## McpToolManager\n");
    expect(mcp).toHaveProperty("McpToolManager");
    expect(core).not.toHaveProperty("McpToolManager"); // kept off the main entry on purpose
  });
});
