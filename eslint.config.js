import js from "@eslint/js";
import importX from "eslint-plugin-import-x";
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
);
