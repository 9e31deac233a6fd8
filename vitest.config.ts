import { defineConfig } from "vitest/config";

export default defineConfig({
  // Workspace packages export their TypeScript sources under the "@nerva/source" condition, so tests
  // run against the code as written without a build step in between. Vitest resolves modules
  // in its SSR environment, hence both settings.
  resolve: { conditions: ["@nerva/source"] },
  ssr: { resolve: { conditions: ["@nerva/source"] } },
  test: {
    include: [
      "packages/*/src/**/*.test.ts",
      "packages/*/test/**/*.test.ts",
      "apps/*/src/**/*.test.ts",
      "apps/*/test/**/*.test.ts",
      "spec/**/*.test.ts",
      "docs/**/*.test.ts",
      "bench/**/*.test.ts",
      "test/**/*.test.ts",
    ],
    testTimeout: 20_000,
    hookTimeout: 60_000,
    pool: "forks",
    server: {
      deps: {
        // eventsource-parser (under the AI SDK) also publishes its TypeScript sources under a
        // "source" export condition; inlined, Vite compiles them instead of Node failing on .ts.
        inline: [/\/node_modules\/(ai|@ai-sdk\/[^/]+|eventsource-parser)\//],
      },
    },
  },
});
