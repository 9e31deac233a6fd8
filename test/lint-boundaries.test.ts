// The lint fences: packages import one another only through public entry points, and inside
// @nerva/core a folder imports only the floors below its own (ARCHITECTURE.md, "Floors").
import { ESLint } from "eslint";
import { readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { coreFloors } from "../eslint.config.js";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
// The snippets linted here are not files on disk, so no TypeScript project holds them: the fence
// rules need no type information, and the type-aware rules are turned off for them.
const eslint = new ESLint({
  cwd: root,
  overrideConfig: {
    files: ["**/*.ts"],
    languageOptions: { parserOptions: { projectService: false } },
    rules: {
      "@typescript-eslint/no-floating-promises": "off",
      "@typescript-eslint/no-misused-promises": "off",
    },
  },
});

async function boundaryErrors(code: string, file: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: join(root, file) });
  return (result?.messages ?? [])
    .filter(
      (m) => m.ruleId === "no-restricted-imports" || m.ruleId === "import-x/no-relative-packages",
    )
    .map((m) => m.message);
}

describe("package boundary lint rule", () => {
  it("refuses a relative import into another package", async () => {
    const errors = await boundaryErrors(
      'import { ExecContext } from "../../core/src/index.js";\nexport const x = ExecContext;\n',
      "packages/express/src/example.ts",
    );
    expect(errors.length).toBeGreaterThan(0);
  });

  it("refuses deep imports of a package's src, dist or internal folders", async () => {
    for (const deep of [
      "@nerva/core/src/errors.js",
      "@nerva/core/dist/index.js",
      "@nerva/core/internal/x.js",
    ]) {
      const errors = await boundaryErrors(
        `import * as m from "${deep}";\nexport const x = m;\n`,
        "packages/fastify/src/example.ts",
      );
      expect(errors, deep).toEqual([expect.stringContaining("public entry point")]);
    }
  });

  it("allows the public entries", async () => {
    const code =
      'import { ExecContext } from "@nerva/core";\nimport * as t from "@nerva/core/testing";\nexport const x = [ExecContext, t];\n';
    expect(await boundaryErrors(code, "packages/nestjs/src/example.ts")).toEqual([]);
  });

  it("allows relative imports inside a package", async () => {
    const code = 'import { NervaError } from "../errors.js";\nexport const x = NervaError;\n';
    expect(await boundaryErrors(code, "packages/core/src/runtime/example.ts")).toEqual([]);
  });
});

async function floorErrors(code: string, file: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: join(root, file) });
  return (result?.messages ?? [])
    .filter((m) => m.ruleId === "import-x/no-restricted-paths")
    .map((m) => m.message);
}

/** A module of `file` importing a name of `target` (paths inside packages/core/src). */
const importing = (target: string, name: string) =>
  `import { ${name} } from "${target}";\nexport const x = ${name};\n`;

describe("floors inside @nerva/core", () => {
  it("refuses an upward import: the context importing the durable runs", async () => {
    const errors = await floorErrors(
      importing("../runs/run-context.js", "ActiveRun"),
      "packages/core/src/context/example.ts",
    );
    expect(errors).toEqual([expect.stringMatching(/context is on floor \d+ .*may import only/)]);
  });

  it("refuses upward imports from every low floor, type-only ones included", async () => {
    const cases: [file: string, code: string][] = [
      ["packages/core/src/errors.ts", importing("./internal/json-limits.js", "checkJsonLimits")],
      [
        "packages/core/src/types/example.ts",
        'import type { Router } from "../router/types.js";\nexport type X = Router;\n',
      ],
      ["packages/core/src/tracing/example.ts", importing("../runtime/results.js", "errorResult")],
      ["packages/core/src/runs/example.ts", importing("../http/status.js", "toHttpError")],
      ["packages/core/src/runs/redis/example.ts", importing("../../graph/index.js", "defineGraph")],
      [
        "packages/core/src/graph/execute/example.ts",
        importing("../../http/index.js", "toHttpError"),
      ],
    ];
    for (const [file, code] of cases) expect(await floorErrors(code, file), file).toHaveLength(1);
  });

  it("refuses a sideways import between two folders of one floor", async () => {
    const errors = await floorErrors(
      importing("../policy/rate-limiter.js", "RateLimiter"),
      "packages/core/src/router/example.ts",
    );
    expect(errors).toHaveLength(1);
  });

  it("accepts downward imports and imports inside a folder", async () => {
    const cases: [file: string, code: string][] = [
      ["packages/core/src/context/example.ts", importing("../types/agent.js", "agentResult")],
      ["packages/core/src/context/example.ts", importing("./run-slot.js", "kRunContext")],
      ["packages/core/src/runs/example.ts", importing("../runtime/results.js", "errorResult")],
      ["packages/core/src/graph/example.ts", importing("../runs/run-queue.js", "RunQueue")],
      [
        "packages/core/src/graph/execute/example.ts",
        importing("../define/define-graph.js", "defineGraph"),
      ],
      [
        "packages/core/src/graph/host/example.ts",
        importing("../execute/executor.js", "GraphExecutor"),
      ],
      ["packages/core/src/graph/host/example.ts", importing("../define/nodes.js", "fnNode")],
      ["packages/core/src/graph/index.ts", importing("./host/graph-host.js", "GraphHost")],
      ["packages/core/src/testing/example.ts", importing("../http/index.js", "toHttpError")],
      ["packages/core/src/index.ts", importing("./graph/index.js", "defineGraph")],
    ];
    for (const [file, code] of cases) expect(await floorErrors(code, file), file).toEqual([]);
  });

  it("refuses imports up the graph's floors: define below execute below host", async () => {
    const cases: [file: string, code: string][] = [
      [
        "packages/core/src/graph/define/example.ts",
        importing("../execute/executor.js", "GraphExecutor"),
      ],
      [
        "packages/core/src/graph/define/example.ts",
        importing("../host/graph-host.js", "GraphHost"),
      ],
      [
        "packages/core/src/graph/execute/example.ts",
        'import type { GraphHostOptions } from "../host/host-options.js";\nexport type X = GraphHostOptions;\n',
      ],
    ];
    for (const [file, code] of cases) {
      expect(await floorErrors(code, file), file).toEqual([
        expect.stringMatching(/graph\/(define|execute) is on graph floor \d .*may not import/),
      ]);
    }
  });

  it("refuses an import cycle between files, and accepts a type-only import back", async () => {
    // context/exec-context.ts imports context/local.ts: local.ts importing it back is a cycle.
    const cycles = async (code: string) => {
      const file = join(root, "packages/core/src/context/local.ts");
      const [result] = await eslint.lintText(code, { filePath: file });
      return (result?.messages ?? []).filter((m) => m.ruleId === "import-x/no-cycle");
    };
    expect(await cycles(importing("./exec-context.js", "ExecContext"))).toHaveLength(1);
    const typeOnly =
      'import type { ExecContext } from "./exec-context.js";\nexport type X = ExecContext;\n';
    expect(await cycles(typeOnly)).toEqual([]);
  });

  it("does not fence test files, which may set up whatever they test", async () => {
    const code = importing("../runs/run-queue.js", "RunQueue");
    expect(await floorErrors(code, "packages/core/src/context/example.test.ts")).toEqual([]);
  });

  it("names every folder of packages/core/src on exactly one floor", () => {
    const named = coreFloors.flat();
    expect(new Set(named).size).toBe(named.length);
    const folders = readdirSync(join(root, "packages/core/src"), { withFileTypes: true })
      .filter((d) => d.isDirectory() || !/\.test\.ts$/.test(d.name))
      .map((d) => d.name)
      .filter((n) => !n.startsWith("."));
    expect([...folders].sort()).toEqual([...named].sort());
  });
});
