// docs/trace-viewer.md: its runnable blocks run in docs/snippets.test.ts; this checks what they
// cannot: the picture, the NestJS block against the app that does it, and the API table against
// a real viewer.
import { existsSync, readFileSync } from "node:fs";
import { createServer } from "node:http";
import { once } from "node:events";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ExecContext } from "@nerva/core";
import { TraceStore } from "@nerva/core/tracing";
import { createTraceViewer } from "@nerva/core/viewer";
import { docsDir, pageText, tsBlocks } from "./bridge-docs.js";

const page = pageText("trace-viewer.md");

describe("docs/trace-viewer.md", () => {
  it("shows the screenshot the browser test takes", () => {
    expect(page).toContain("](trace-viewer.png)");
    expect(existsSync(join(docsDir, "trace-viewer.png"))).toBe(true);
  });

  it("shows NestJS mounting as apps/nestjs-app does it", () => {
    const nest = tsBlocks("trace-viewer.md").find((b) => b.includes("NestFactory"));
    expect(nest).toContain("app.use(createTraceViewer({ store }));");
    const app = join(docsDir, "..", "apps", "nestjs-app", "src");
    expect(readFileSync(join(app, "main.ts"), "utf8")).toContain("app.use(traceUI.viewer);");
    expect(readFileSync(join(app, "app.module.ts"), "utf8")).toContain(
      "traceSink: options.traceSink",
    );
  });

  it("lists the API routes a viewer answers, and nothing else answers", async () => {
    const routes = [...page.matchAll(/^\| `(\/[^`]*)`/gm)].map((m) => m[1]!);
    expect(routes).toEqual(["/", "/api/traces?limit=&user=", "/api/traces/:traceId", "/api/users"]);
    const store = new TraceStore();
    const ctx = ExecContext.create({ traceSink: store });
    ctx.startSpan("handle").end();
    const viewer = createTraceViewer({ store, meter: { users: () => [] } });
    const server = createServer((req, res) => viewer(req, res));
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/_nerva/traces`;
    try {
      for (const route of routes) {
        const path = route.replace("?limit=&user=", "?limit=5").replace(":traceId", ctx.traceId);
        expect((await fetch(base + path)).status, route).toBe(200);
      }
      expect((await fetch(`${base}/api/other`)).status).toBe(404);
    } finally {
      server.close();
    }
  });

  it("names every option in its tables", () => {
    for (const option of ["store", "meter", "basePath", "allow"])
      expect(page).toMatch(new RegExp(`^\\| \`${option}\` `, "m"));
    for (const option of ["maxTraces", "maxSpansPerTrace", "maxEventsPerTrace"]) {
      expect(page).toMatch(new RegExp(`^\\| \`${option}\` `, "m"));
      expect(() => new TraceStore({ [option]: 1 })).not.toThrow();
    }
  });
});
