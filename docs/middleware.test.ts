// Keeps docs/middleware.md honest beyond its snippets: the built-in table lists exported classes,
// and the counters it names are the ones MetricsMiddleware produces.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import * as core from "@nerva/core";
import * as middleware from "@nerva/core/middleware";

const page = readFileSync(join(dirname(fileURLToPath(import.meta.url)), "middleware.md"), "utf8");

describe("docs/middleware.md", () => {
  it("lists exported built-in middleware", () => {
    const listed = [...page.matchAll(/^\| `(\w+Middleware)`/gm)].map((m) => m[1] as string);
    expect(listed).toEqual(["LoggingMiddleware", "MetricsMiddleware", "InputSizeLimitMiddleware"]);
    for (const name of listed) expect(middleware).toHaveProperty(name);
  });

  it("names the counters MetricsMiddleware really keeps", async () => {
    const row = /^\| `MetricsMiddleware`\s*\|([^\n]*)$/m.exec(page)?.[1] ?? "";
    const documented = [...row.matchAll(/`(\w+_total)/g)].map((m) => m[1] as string).sort();
    const runtime = new core.InProcessRuntime();
    runtime.register("ok", async () => "fine");
    const metrics = new middleware.MetricsMiddleware();
    const orchestrator = new core.Orchestrator({
      router: new core.RuleRouter({ rules: [{ handler: "ok", pattern: "^go" }] }),
      runtime,
      middleware: [metrics],
    });
    await orchestrator.handle("go", core.ExecContext.create());
    await orchestrator.handle("nothing matches", core.ExecContext.create());
    await orchestrator.handle(42 as never, core.ExecContext.create()).catch(() => undefined);
    const failing = new core.Orchestrator({
      router: new core.RuleRouter({ rules: [], defaultHandler: "ok" }),
      runtime,
      middleware: [
        { beforeInvoke: () => Promise.reject(new core.NervaError("POLICY_DENIED", "no")) },
        metrics,
      ],
    });
    await failing.handle("x", core.ExecContext.create()).catch(() => undefined);
    const produced = [...new Set(Object.keys(metrics.snapshot()).map((k) => k.split("{")[0]))];
    expect(produced.sort()).toEqual(documented);
  });
});
