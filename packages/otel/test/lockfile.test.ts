// One @opentelemetry/api for the whole workspace. `ai` asks for 1.10.0; the SDK 2.x packages
// accept only < 1.10.0. With two copies, a tracer provider registered through one is invisible
// to code holding the other, and its spans are silently dropped. pnpm-workspace.yaml overrides
// the version; this test fails if the lockfile ever resolves a second one.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = join(dirname(fileURLToPath(import.meta.url)), "../../..");
const lockfile = readFileSync(join(root, "pnpm-lock.yaml"), "utf8");

describe("the lockfile", () => {
  it("resolves exactly one @opentelemetry/api, a 1.9.x", () => {
    const versions = new Set(
      [...lockfile.matchAll(/@opentelemetry\/api@(\d+\.\d+\.\d+)/g)].map((m) => m[1]),
    );
    expect([...versions]).toHaveLength(1);
    expect([...versions][0]).toMatch(/^1\.9\.\d+$/);
  });

  it("pins it with a pnpm override, which the lockfile records", () => {
    const workspace = readFileSync(join(root, "pnpm-workspace.yaml"), "utf8");
    const pinned = /overrides:\s*\n\s+"?@opentelemetry\/api"?:\s*(\S+)/.exec(workspace)?.[1];
    expect(pinned).toMatch(/^1\.9\.\d+$/);
    expect(lockfile).toMatch(
      new RegExp(`overrides:\\s*\\n\\s+'@opentelemetry/api': ${pinned!.replace(/\./g, "\\.")}`),
    );
  });

  it("resolves one copy of each OpenTelemetry SDK package @nerva/otel uses", () => {
    for (const name of ["core", "resources", "sdk-trace-base", "sdk-trace", "otlp-transformer"]) {
      const versions = new Set(
        [...lockfile.matchAll(new RegExp(`^  '@opentelemetry/${name}@([\\d.]+)'`, "gm"))].map(
          (m) => m[1],
        ),
      );
      expect([...versions], name).toHaveLength(1);
    }
  });
});
