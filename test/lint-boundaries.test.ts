// The lint fence: packages import one another only through public entry points.
import { ESLint } from "eslint";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

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
