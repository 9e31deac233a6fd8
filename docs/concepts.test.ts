// Counts the Nerva API names each path of docs/concepts.md uses, with the TypeScript compiler, and
// holds the page to its targets (the fence's `names<=N`) and to the list it prints below each path.
// A name counts when its declaration is in a Nerva package and it is a class, function, method,
// accessor or exported constant, or a property Nerva adds to a framework's type (`req.nervaCtx`);
// option keys and the fields of results are data, not API, and are not counted.
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { afterAll, describe, expect, it } from "vitest";
import { codeBlocks } from "./code-blocks.js";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const page = join(root, "docs", "concepts.md");
const scratch = join(root, "docs", ".concepts");
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const COUNTED =
  ts.SymbolFlags.Class |
  ts.SymbolFlags.Function |
  ts.SymbolFlags.Method |
  ts.SymbolFlags.GetAccessor |
  ts.SymbolFlags.Variable;

function isNerva(decl: ts.Declaration): boolean {
  return /\/packages\/(core|express|fastify|nestjs|otel|ai-sdk|cli)\//.test(
    decl.getSourceFile().fileName,
  );
}

/** Inside `declare global { … }` or `declare module "…" { … }`: Nerva's addition to a framework. */
function augments(decl: ts.Declaration): boolean {
  for (let n: ts.Node | undefined = decl.parent; n !== undefined; n = n.parent) {
    if (ts.isModuleDeclaration(n)) return true;
  }
  return false;
}

/** The Nerva API names used in `code` between `// ---- path` and `// ---- check`. */
function apiNames(name: string, code: string): string[] {
  mkdirSync(scratch, { recursive: true });
  const file = join(scratch, `${name}.ts`);
  writeFileSync(file, code);
  const start = code.indexOf("// ---- path");
  const end = code.indexOf("// ---- check");
  expect(start, `${name}: a "// ---- path" line`).toBeGreaterThanOrEqual(0);
  expect(end, `${name}: a "// ---- check" line after it`).toBeGreaterThan(start);
  const program = ts.createProgram([file], {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    customConditions: ["@nerva/source"],
    types: ["node"],
    strict: true,
    skipLibCheck: true,
    noEmit: true,
  });
  // Unresolved names would silently count as nothing: the snippet must type-check.
  const problems = ts
    .getPreEmitDiagnostics(program)
    .map((d) => ts.flattenDiagnosticMessageText(d.messageText, "\n"));
  expect(problems, `${name} type-checks`).toEqual([]);
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(file) as ts.SourceFile;
  const found = new Set<string>();
  const visit = (node: ts.Node): void => {
    if (ts.isIdentifier(node) && node.getStart(source) > start && node.getStart(source) < end) {
      // An object literal's key is an option, not an API call.
      const key = ts.isPropertyAssignment(node.parent) && node.parent.name === node;
      let symbol = key ? undefined : checker.getSymbolAtLocation(node);
      if (symbol !== undefined && symbol.flags & ts.SymbolFlags.Alias) {
        symbol = checker.getAliasedSymbol(symbol);
      }
      const decl = symbol?.declarations?.[0];
      if (symbol !== undefined && decl !== undefined && isNerva(decl)) {
        if (symbol.flags & COUNTED || (symbol.flags & ts.SymbolFlags.Property && augments(decl))) {
          found.add(symbol.name);
        }
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return [...found].sort((a, b) => a.localeCompare(b, "en", { sensitivity: "base" }));
}

const markdown = (await import("node:fs")).readFileSync(page, "utf8");
const paths = codeBlocks(page).filter((b) => /names<=\d+/.test(b.info));

describe("docs/concepts.md", () => {
  it("has the three paths with the issue's targets", () => {
    expect(paths.map((p) => Number(/names<=(\d+)/.exec(p.info)?.[1]))).toEqual([6, 8, 9, 10]);
  });

  for (const [i, path] of paths.entries()) {
    it(`path at line ${path.line} uses at most ${/names<=(\d+)/.exec(path.info)?.[1]} API names, the ones it lists`, () => {
      const limit = Number(/names<=(\d+)/.exec(path.info)?.[1]);
      const names = apiNames(`path-${i}`, path.code);
      expect(names.length, names.join(", ")).toBeLessThanOrEqual(limit);
      // The "Names (n): `a`, `b`…" line after the block lists exactly what was counted.
      const after = markdown.split("\n").slice(path.line).join("\n");
      const listed = /\nNames \((\d+)\): ([^\n]+(?:\n[^\n]+)?)/.exec(
        after.slice(after.indexOf("```")),
      );
      expect(listed, "a Names (n): line after the block").not.toBeNull();
      const shown = [...(listed?.[2] ?? "").matchAll(/`([^`]+)`/g)].map((m) => m[1]);
      expect(
        [...shown].sort((a, b) => a!.localeCompare(b!, "en", { sensitivity: "base" })),
      ).toEqual(names);
      expect(Number(listed?.[1])).toBe(names.length);
    }, 120_000);
  }
});

describe("docs/concepts.md: where each name is imported from", () => {
  const table = markdown.slice(markdown.indexOf("| import from"));
  const rows = [
    ...table
      .slice(0, table.indexOf("\n\n"))
      .matchAll(/^\| `(@nerva\/core[^`]*)`\s*\|([^\n]+)\|$/gm),
  ];

  it("lists the root and every subsystem subpath of the package", async () => {
    const pkg = JSON.parse(
      (await import("node:fs")).readFileSync(join(root, "packages/core/package.json"), "utf8"),
    ) as { exports: Record<string, unknown> };
    const subsystems = ["context", "runtime", "router", "tools", "responder", "memory"]
      .concat([
        "registry",
        "policy",
        "middleware",
        "tracing",
        "runs",
        "graph",
        "http",
        "ui-stream",
        "ag-ui",
        "backend",
      ])
      .map((s) => `@nerva/core/${s}`);
    expect(rows.map((r) => r[1])).toEqual(["@nerva/core", ...subsystems]);
    for (const sub of subsystems) {
      expect(Object.keys(pkg.exports)).toContain(`.${sub.slice("@nerva/core".length)}`);
    }
  });

  it("names only what each entry exports, and the root's count", async () => {
    for (const [, from, what] of rows) {
      const entry = (await import(from!)) as Record<string, unknown>;
      for (const [, name] of what!.matchAll(/`(\w+)`/g)) {
        // Types (`RunStore`) have no runtime value; every other name must be a real export.
        if (name === "RunStore") continue;
        expect(entry, `${name} from ${from}`).toHaveProperty(name!);
      }
    }
    const rootNames = apiRootCount();
    expect(markdown).toContain(`little else (${rootNames} names)`);
  });
});

/** How many names (values and types) the root entry exports, as the compiler sees them. */
function apiRootCount(): number {
  const file = join(root, "packages/core/src/index.ts");
  const program = ts.createProgram([file], {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    noEmit: true,
    skipLibCheck: true,
  });
  const checker = program.getTypeChecker();
  const symbol = checker.getSymbolAtLocation(program.getSourceFile(file)!);
  return checker.getExportsOfModule(symbol!).length;
}
