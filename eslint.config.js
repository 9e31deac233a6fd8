import { join } from "node:path";
import js from "@eslint/js";
import importX, { createNodeResolver } from "eslint-plugin-import-x";
import tseslint from "typescript-eslint";

/**
 * Packages talk to each other only through their public entry points: no relative imports into
 * another package, no deep imports such as `@nerva/core/src/...` or `@nerva/core/dist/...`.
 */
export const packageBoundaryRules = {
  "import-x/no-relative-packages": "error",
  "no-restricted-imports": [
    "error",
    {
      patterns: [
        {
          regex: "^@nerva/[^/]+/(src|dist|internal)(/|$)",
          message:
            "Import another package only through its public entry point (e.g. '@nerva/core').",
        },
        {
          regex: "^(\\.\\./)+(packages/)?(core|express|nestjs|fastify|otel)/(src|dist)(/|$)",
          message: "Import another package by its name ('@nerva/core'), not by a relative path.",
        },
      ],
    },
  ],
};

/**
 * The floors of `packages/core/src`, lowest first. A folder (or top-level file) imports only its
 * own folder and the floors below its own: nothing up, nothing sideways within a floor, so no
 * cycle between folders. ARCHITECTURE.md ("Floors") says what each floor holds.
 */
export const coreFloors = [
  ["errors.ts"],
  ["internal"],
  ["types"],
  ["context"],
  ["tracing"],
  ["runtime"],
  ["tools", "router", "responder", "registry", "policy"],
  ["memory", "middleware"],
  ["orchestrator"],
  ["runs"],
  ["graph", "declarative-policy"],
  ["http", "viewer", "wire", "mcp-server", "backend"],
  ["ui-stream", "ag-ui"],
  ["testing", "sqlite", "redis", "index.ts", "wire.ts", "policy.ts"],
];

const coreSrc = join(import.meta.dirname, "packages/core/src");

/** One `import-x/no-restricted-paths` zone per folder: what it may not import. */
export const coreFloorZones = coreFloors
  .flatMap((floor, level) => {
    const above = coreFloors.slice(level).flat();
    return floor.map((name) => {
      const names = above.filter((other) => other !== name);
      const lower = coreFloors.slice(0, level).flat().join(", ") || "nothing";
      return {
        target: join(coreSrc, name),
        from: names.map((other) => join(coreSrc, other)),
        message: ` ${name} is on floor ${level} of @nerva/core: it may import only ${lower}. Move the type or helper it needs down a floor (ARCHITECTURE.md, "Floors").`,
      };
    });
  })
  .filter((zone) => zone.from.length > 0);

/**
 * The floors inside `graph/`, lowest first: describing a graph, executing one run of it, hosting
 * it (entry points, triggers, sessions). The same rule as `coreFloors`, one folder per floor;
 * `graph/index.ts`, the barrel, may import all three.
 */
export const graphFloors = ["define", "execute", "host"];

/** One zone per graph floor: what it may not import (the graph floors above it). */
export const graphFloorZones = graphFloors
  .map((name, level) => ({
    target: join(coreSrc, "graph", name),
    from: graphFloors.slice(level + 1).map((other) => join(coreSrc, "graph", other)),
    message: ` graph/${name} is on graph floor ${level} (${graphFloors.join(" < ")}): it may not import ${graphFloors.slice(level + 1).join(" or ")}. Move what it needs down to the floor that both can see (ARCHITECTURE.md, "Floors").`,
  }))
  .filter((zone) => zone.from.length > 0);

/** Import-x rules on the core's own (non-test) sources: floors, and no cycle between files. */
export const coreFloorRules = {
  "import-x/no-restricted-paths": ["error", { zones: [...coreFloorZones, ...graphFloorZones] }],
  "import-x/no-cycle": ["error", { ignoreExternal: true }],
};

export default tseslint.config(
  {
    ignores: [
      "**/dist/**",
      "**/.tshy/**",
      "**/.tshy-build/**",
      "test/consumers/apps/**",
      "**/node_modules/**",
      "**/.turbo/**",
      "coverage/**",
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    plugins: { "import-x": importX },
    languageOptions: {
      globals: {
        console: "readonly",
        process: "readonly",
        setTimeout: "readonly",
        clearTimeout: "readonly",
        setInterval: "readonly",
        clearInterval: "readonly",
        setImmediate: "readonly",
        performance: "readonly",
        AbortController: "readonly",
        AbortSignal: "readonly",
        URL: "readonly",
        Buffer: "readonly",
        structuredClone: "readonly",
        queueMicrotask: "readonly",
        fetch: "readonly",
        TextEncoder: "readonly",
        TextDecoder: "readonly",
        global: "readonly",
        globalThis: "readonly",
      },
    },
    rules: {
      ...packageBoundaryRules,
      "@typescript-eslint/no-unused-vars": [
        "error",
        { argsIgnorePattern: "^_", varsIgnorePattern: "^_" },
      ],
      "no-restricted-syntax": [
        "error",
        {
          selector:
            "CallExpression[callee.object.name=/^(it|test|describe)$/][callee.property.name='only']",
          message: "Focused tests hide the rest of the suite.",
        },
      ],
    },
  },
  {
    // Promise mistakes are bugs the compiler's types can see: a floating promise loses its
    // rejection, a promise passed where a callback's result is ignored runs unawaited.
    files: ["**/*.ts", "**/*.mts", "**/*.cts"],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/no-misused-promises": "error",
    },
  },
  {
    files: ["packages/core/src/**/*.ts", "packages/core/src/**/*.cts"],
    ignores: ["**/*.test.ts", "**/*.test-support.ts", "**/fixtures/**"],
    settings: {
      // no-cycle reads the modules it follows: these are TypeScript.
      "import-x/extensions": [".ts", ".cts", ".mts", ".js", ".cjs", ".mjs"],
      "import-x/parsers": { "@typescript-eslint/parser": [".ts", ".cts", ".mts"] },
      // Sources import each other as `./x.js`; the files are `x.ts`.
      "import-x/resolver-next": [
        createNodeResolver({
          extensions: [".ts", ".cts", ".mts", ".js", ".cjs", ".mjs", ".json", ".node"],
          extensionAlias: {
            ".js": [".ts", ".js"],
            ".cjs": [".cts", ".cjs"],
            ".mjs": [".mts", ".mjs"],
          },
        }),
      ],
    },
    rules: coreFloorRules,
  },
);
