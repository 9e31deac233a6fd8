// The public surface is deliberate: every entry point's export list (pinned in test/surface/, one
// file per entry) and what each package publishes are checked here, so that an addition (or a test
// file slipping into a tarball) is a visible change, not an accident.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");

/** Every name (values and types) a module exports, as the compiler sees it. */
function exportsOf(file: string): string[] {
  const program = ts.createProgram([file], {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    noEmit: true,
    skipLibCheck: true,
  });
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(file);
  const symbol = source === undefined ? undefined : checker.getSymbolAtLocation(source);
  if (symbol === undefined) throw new Error(`cannot read the exports of ${file}`);
  return checker
    .getExportsOfModule(symbol)
    .map((s) => s.name)
    .sort();
}

/** The subsystems of @nerva/core, each on its own subpath (`@nerva/core/<name>`). */
const SUBSYSTEMS = [
  "context",
  "runtime",
  "router",
  "tools",
  "responder",
  "memory",
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
];

/**
 * The entry file of subsystem `sub`, as the package declares it (`tshy.exports`): most are
 * `<sub>/index.ts`; `policy.ts` sits above its folders, since the declarative engine it exports
 * is built on runs/.
 */
function entryOf(sub: string): string {
  const pkg = JSON.parse(readFileSync(join(root, "packages/core/package.json"), "utf8")) as {
    tshy: { exports: Record<string, string> };
  };
  const entry = pkg.tshy.exports[`./${sub}`];
  if (entry === undefined) throw new Error(`@nerva/core has no ./${sub} entry in tshy.exports`);
  return join(root, "packages/core", entry);
}

describe("@nerva/core root entry", () => {
  it("holds at most 80 names, no option schema, each also on its subsystem's subpath", () => {
    const names = exportsOf(join(root, "packages/core/src/index.ts"));
    expect(names.length).toBeLessThanOrEqual(80);
    // Zod schemas of options live on their subpaths (`StateSchema` is a graph's state type).
    expect(names.filter((n) => n.endsWith("Schema"))).toEqual(["StateSchema"]);
    const onSubpaths = new Set(SUBSYSTEMS.flatMap((sub) => exportsOf(entryOf(sub))));
    const errors = exportsOf(join(root, "packages/core/src/errors.ts"));
    // The orchestrator is whole at the root: it has no subpath of its own.
    expect(names.filter((n) => !onSubpaths.has(n) && !errors.includes(n))).toEqual([
      "AgentKit",
      "HandleOptions",
      "KitHandler",
      "Orchestrator",
      "OrchestratorOptions",
      "OrchestratorStream",
    ]);
  }, 60_000);

  it("gives every subsystem a subpath in the package's exports", () => {
    const pkg = JSON.parse(readFileSync(join(root, "packages/core/package.json"), "utf8")) as {
      exports: Record<string, unknown>;
    };
    for (const sub of SUBSYSTEMS) {
      expect(Object.keys(pkg.exports), sub).toContain(`./${sub}`);
      expect(exportsOf(entryOf(sub)).length).toBeGreaterThan(0);
    }
  }, 60_000);

  it("leaves the worker protocol and the subprocess runtime to their subpaths", () => {
    const names = new Set(exportsOf(join(root, "packages/core/src/index.ts")));
    for (const name of ["SubprocessRuntime", "serveWorker", "FrameDecoder", "encodeFrame"]) {
      expect(names.has(name), name).toBe(false);
    }
    expect(exportsOf(join(root, "packages/core/src/runtime/subprocess/index.ts"))).toContain(
      "SubprocessRuntime",
    );
    expect(exportsOf(join(root, "packages/core/src/runtime/protocol/index.ts"))).toContain(
      "encodeFrame",
    );
  }, 60_000);
});

describe("bridges", () => {
  it("export only their own glue, nothing of @nerva/core/http", () => {
    const http = new Set(exportsOf(join(root, "packages/core/src/http/index.ts")));
    for (const bridge of ["express", "fastify", "nestjs"]) {
      const names = exportsOf(join(root, `packages/${bridge}/src/index.ts`));
      expect(
        names.filter((n) => http.has(n)),
        bridge,
      ).toEqual([]);
    }
  }, 60_000);
});

describe("Server-Sent Events", () => {
  it("one writer in @nerva/core/http, the reader in /testing, and bridges that add only glue", () => {
    const sse = (file: string) =>
      exportsOf(join(root, file)).filter((n) => /SSE|LastEvent|lastEvent/.test(n));
    expect(sse("packages/core/src/http/index.ts")).toEqual([
      "SSEEventSource",
      "SSEEventSourceOptions",
      "SSEMessage",
      "SSEOptions",
      "SSEOutcome",
      "createSSEEventSource",
      "lastEventSeq",
      "writeSSE",
    ]);
    expect(sse("packages/core/src/testing/index.ts")).toEqual([
      "ReadSSEOptions",
      "SSEEvent",
      "readSSEEvents",
    ]);
    expect(sse("packages/express/src/index.ts")).toEqual(["sendSSE"]);
    expect(sse("packages/fastify/src/index.ts")).toEqual(["sendSSE"]);
    expect(sse("packages/nestjs/src/index.ts")).toEqual(["sendSSE", "toSSEObservable"]);
  }, 60_000);
});

describe("published tarballs", () => {
  const packed = (pkg: string): string[] => {
    const out = execFileSync("npm", ["pack", "--dry-run", "--json", "--ignore-scripts"], {
      cwd: join(root, "packages", pkg),
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
    });
    return (JSON.parse(out) as { files: { path: string }[] }[])[0]!.files.map((f) => f.path);
  };

  for (const pkg of ["core", "express", "fastify", "nestjs", "ai-sdk", "cli", "otel"]) {
    it(`@nerva/${pkg} carries no tests, test support or fixtures`, () => {
      const files = packed(pkg);
      expect(files).toContain("dist/commonjs/index.js");
      const leaked = files.filter((f) =>
        /\.test\.|\.test-d\.|\.test-support\.|\/fixtures\/|\/image\/(handlers|modules|app)\//.test(
          f,
        ),
      );
      expect(leaked).toEqual([]);
    }, 60_000);
  }

  it("@nerva/core still ships the container agent that containerAgentPath() points at", () => {
    expect(packed("core")).toContain("src/runtime/container/image/agent/agent.mjs");
  }, 60_000);
});

describe("every entry point of every package", () => {
  /** `[label, file]` for each entry a package declares in `tshy.exports`. */
  const entries = ["core", "express", "fastify", "nestjs", "ai-sdk", "otel", "cli"].flatMap(
    (pkg) => {
      const manifest = JSON.parse(
        readFileSync(join(root, "packages", pkg, "package.json"), "utf8"),
      ) as { tshy: { exports: Record<string, string> } };
      return Object.entries(manifest.tshy.exports)
        .filter(([sub]) => sub !== "./package.json")
        .map(([sub, file]): [string, string] => [
          `@nerva/${pkg}${sub.slice(1)}`,
          join(root, "packages", pkg, file),
        ]);
    },
  );
  // One program for all of them: the compiler reads the shared sources once.
  const program = ts.createProgram(
    entries.map(([, file]) => file),
    {
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      target: ts.ScriptTarget.ES2022,
      noEmit: true,
      skipLibCheck: true,
    },
  );
  const checker = program.getTypeChecker();

  // Each list is pinned in test/surface/: an added or removed name is a visible diff there.
  for (const [label, file] of entries) {
    it(`${label} exports exactly the names in test/surface/`, async () => {
      const symbol = checker.getSymbolAtLocation(program.getSourceFile(file)!);
      const names = checker
        .getExportsOfModule(symbol!)
        .map((s) => s.name)
        .sort();
      const pinned = join(root, "test", "surface", `${label.replace(/\//g, "+")}.txt`);
      await expect(`${names.join("\n")}\n`).toMatchFileSnapshot(pinned);
    }, 120_000);
  }
});
