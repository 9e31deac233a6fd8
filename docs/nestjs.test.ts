// docs/nestjs.md: its complete example uses decorators, which the plain snippet runner does not
// compile, so it runs here, from a folder whose tsconfig enables them (packages/nestjs), on the
// Express and the Fastify platform. The short block at the top must be the same code.
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import * as bridge from "@nerva/nestjs";
import * as http from "@nerva/core/http";
import { docsDir, missingLines, pageText, tsBlocks } from "./bridge-docs.js";

const scratch = join(docsDir, "../packages/nestjs/src/.doc-snippets");
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe("docs/nestjs.md", () => {
  const [summary, full] = tsBlocks("nestjs.md");

  it("shows in its short block only lines of the complete example", () => {
    expect(full).toMatch(/NestFactory\.create\(AppModule, new ExpressAdapter\(\)/);
    expect(missingLines(summary as string, full as string)).toEqual([]);
  });

  it.each(["express", "fastify"] as const)(
    "runs the complete example on the %s platform",
    { timeout: 30_000 },
    async (platform) => {
      let code = full as string;
      if (platform === "fastify") {
        code = code
          .replace(
            'import { ExpressAdapter } from "@nestjs/platform-express";',
            'import { FastifyAdapter } from "@nestjs/platform-fastify";',
          )
          .replace("new ExpressAdapter()", "new FastifyAdapter()");
        expect(code).toContain("new FastifyAdapter()");
      }
      mkdirSync(scratch, { recursive: true });
      const file = join(scratch, `nestjs-md-${platform}.ts`);
      writeFileSync(file, `${code}\nexport {};\n`);
      await import(pathToFileURL(file).href);
    },
  );

  it("names what @nerva/nestjs exports", () => {
    const page = pageText("nestjs.md");
    for (const name of [
      "NervaModule",
      "NervaCtx",
      "InjectOrchestrator",
      "InjectRuntime",
      "NervaExceptionFilter",
      "toSSEObservable",
      "sendSSE",
      "NERVA_ORCHESTRATOR",
      "NERVA_RUNTIME",
      "NERVA_OPTIONS",
      "NERVA_BRIDGE",
    ]) {
      expect(page).toContain(name);
      expect(bridge).toHaveProperty(name);
    }
    // Shared helpers come from @nerva/core/http: a bridge exports only its own glue.
    for (const name of ["jsonBodyOf"]) {
      expect(http).toHaveProperty(name);
      expect(bridge).not.toHaveProperty(name);
    }
  });
});
