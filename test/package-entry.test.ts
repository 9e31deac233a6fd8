// The built packages load the way users load them: ESM import and CommonJS require (a NestJS app
// compiled to CommonJS requires them). Runs against dist/, which the test command builds first.
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const node = (args: string[]) =>
  execFileSync(process.execPath, args, { cwd: root, encoding: "utf8" });

describe("@nerva/otel across the two builds of @nerva/core", () => {
  it("exports the spans of a request whose context the CommonJS build made (an ESM sink)", () => {
    // An ESM app with a CommonJS bridge: the bridge's `require` makes the contexts and spans, the
    // sink imported as ESM must still write them as Nerva spans (it handed them to OpenTelemetry's
    // serializer as foreign spans, which threw, before spans carried a brand).
    const out = node([
      "--input-type=module",
      "-e",
      `import { createServer } from "node:http";
       import { createRequire } from "node:module";
       import * as esm from "@nerva/core/context";
       const received = [];
       const srv = createServer((q, s) => { const c = []; q.on("data", (d) => c.push(d)); q.on("end", () => { received.push(Buffer.concat(c).length); s.writeHead(200, { "content-type": "application/x-protobuf" }); s.end(); }); });
       await new Promise((r) => srv.listen(0, "127.0.0.1", r));
       process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT = "http://127.0.0.1:" + srv.address().port + "/v1/traces";
       const { createOtelSink } = await import("@nerva/otel");
       const cjs = createRequire(import.meta.url)("@nerva/core");
       const sink = createOtelSink();
       const rt = new cjs.InProcessRuntime().register("a", async () => "ok");
       const ctx = cjs.ExecContext.create({ traceSink: sink });
       await rt.invoke("a", { message: "x" }, ctx);
       let failure = null;
       await sink.forceFlush().catch((e) => (failure = String(e.cause?.message ?? e.message)));
       srv.close();
       console.log(JSON.stringify({ distinct: esm.Span !== cjs.Span, isSpan: esm.isSpan(ctx.spans[0]), failure, sent: received.length > 0 && received[0] > 0 }));`,
    ]);
    expect(JSON.parse(out.trim())).toEqual({
      distinct: true,
      isSpan: true,
      failure: null,
      sent: true,
    });
  });
});

describe("@nerva/core package entry", () => {
  it("has been built (the test command runs turbo build first)", () => {
    expect(
      existsSync(join(root, "packages/core/dist/esm/index.js")),
      "run `pnpm build` first",
    ).toBe(true);
  });

  it("loads with ESM import and runs an agent", () => {
    const out = node([
      "--input-type=module",
      "-e",
      `import { ExecContext, InProcessRuntime } from "@nerva/core";
       const rt = new InProcessRuntime().register("a", async (i) => "ok:" + i.message);
       const r = await rt.invoke("a", { message: "esm" }, ExecContext.create());
       console.log(r.output);`,
    ]);
    expect(out.trim()).toBe("ok:esm");
  });

  it("loads with CommonJS require", () => {
    const out = node([
      "-e",
      `const { ExecContext, InProcessRuntime } = require("@nerva/core");
       const rt = new InProcessRuntime().register("a", async (i) => "ok:" + i.message);
       rt.invoke("a", { message: "cjs" }, ExecContext.create()).then((r) => console.log(r.output));`,
    ]);
    expect(out.trim()).toBe("ok:cjs");
  });

  it("one process loading both builds: each recognises the other's errors and contexts", () => {
    // The dual-package hazard: an app's ESM code and a CommonJS dependency each get their own
    // copy of @nerva/core. Errors and contexts carry Symbol.for brands, so either copy accepts
    // what the other made.
    const out = node([
      "--input-type=module",
      "-e",
      `import { createRequire } from "node:module";
       import * as esm from "@nerva/core";
       import { isExecContext } from "@nerva/core/context";
       const cjs = createRequire(import.meta.url)("@nerva/core");
       const cjsContext = createRequire(import.meta.url)("@nerva/core/context");
       const checks = {
         distinctCopies: esm.NervaError !== cjs.NervaError,
         esmErrorInCjs: new esm.NervaError("TIMEOUT", "late") instanceof cjs.NervaError,
         cjsErrorInEsm: esm.isNervaError(new cjs.NervaError("TIMEOUT", "late"), "TIMEOUT"),
         esmContextInCjs: cjsContext.isExecContext(esm.ExecContext.create()),
         cjsContextInEsm: isExecContext(cjs.ExecContext.create()),
       };
       const rt = new cjs.InProcessRuntime().register("a", async (i) => "ok:" + i.message);
       const r = await rt.invoke("a", { message: "mixed" }, esm.ExecContext.create());
       console.log(JSON.stringify({ ...checks, output: r.output }));`,
    ]);
    expect(JSON.parse(out)).toEqual({
      distinctCopies: true,
      esmErrorInCjs: true,
      cjsErrorInEsm: true,
      esmContextInCjs: true,
      cjsContextInEsm: true,
      output: "ok:mixed",
    });
  });

  it("finds the container agent it ships from both builds", () => {
    const out = node([
      "--input-type=module",
      "-e",
      `import { existsSync } from "node:fs";
       import { createRequire } from "node:module";
       import { containerAgentPath } from "@nerva/core/container";
       const cjs = createRequire(import.meta.url)("@nerva/core/container").containerAgentPath();
       console.log(cjs === containerAgentPath(), existsSync(cjs), cjs.endsWith("agent.mjs"));`,
    ]);
    expect(out.trim()).toBe("true true true");
  });

  it("exposes only the documented entry points, each built for import and require", () => {
    const pkg = JSON.parse(readFileSync(join(root, "packages/core/package.json"), "utf8"));
    for (const [subpath, target] of Object.entries<Record<string, Record<string, string>>>(
      pkg.exports,
    )) {
      if (subpath === "./package.json") continue;
      for (const [condition, dir] of [
        ["import", "esm"],
        ["require", "commonjs"],
      ] as const) {
        const entry = target[condition];
        expect(entry?.["types"], `${subpath} ${condition} has types`).toMatch(
          new RegExp(`^\\./dist/${dir}/.+\\.d\\.ts$`),
        );
        expect(
          existsSync(join(root, "packages/core", entry?.["default"] as string)),
          `${subpath} ${condition} is built`,
        ).toBe(true);
      }
      expect(subpath).not.toMatch(/internal/);
    }
  });
});
