// Keeps docs/policy.md honest beyond its TypeScript snippets (which docs/snippets.test.ts runs):
// the YAML example is a valid policy, and the error it quotes is the one users get.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { DeclarativePolicyEngine, parsePolicyText } from "@nerva/core/policy";
import { RedisLimitStoreOptionsSchema } from "@nerva/core/redis";

const page = readFileSync(join(dirname(fileURLToPath(import.meta.url)), "policy.md"), "utf8");
const yamlBlocks = [...page.matchAll(/^```yaml\n([\s\S]*?)^```$/gm)].map((m) => m[1] as string);

describe("docs/policy.md", () => {
  it("shows a valid policy document using every section", () => {
    expect(yamlBlocks).toHaveLength(1);
    const doc = parsePolicyText(yamlBlocks[0] as string, { format: "yaml", source: "policy.md" });
    expect(doc.rules[0]).toMatchObject({ name: "refunds-need-staff", kind: "tool" });
    expect(doc.approvals[0]).toMatchObject({ approverRoles: ["manager"], exemptRoles: ["admin"] });
    expect(doc.rateLimits.map((l) => l.per)).toEqual(["user", "handler"]);
    expect(doc.budgets.map((b) => b.per)).toEqual(["request", "user"]);
    expect(() => new DeclarativePolicyEngine(doc)).not.toThrow();
  });

  it("states the real bounds of a document and quotes the real nesting error", () => {
    const quoted = /`(Invalid policy in deep\.yaml \(line 2\): [^`]+)`/.exec(page)?.[1];
    expect(quoted).toBeDefined();
    const nested = (depth: number) => `version: 1\nx: ${"[".repeat(depth)}${"]".repeat(depth)}\n`;
    // At 64 levels the schema speaks (x is no policy field); at 65 the bound does.
    expect(() => parsePolicyText(nested(63), { format: "yaml" })).toThrow(/Unrecognized key/);
    let message = "";
    try {
      parsePolicyText(nested(5000), { format: "yaml", source: "deep.yaml" });
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message.startsWith(quoted as string)).toBe(true);
    expect(page).toContain("at most 1 MiB (1,048,576 characters)");
    const big = `version: 1\n#${"x".repeat(1_048_576)}`;
    expect(() => parsePolicyText(big, { format: "yaml" })).toThrow(/over the limit of 1048576/);
  });

  it("quotes the real validation error", () => {
    const bad = (yamlBlocks[0] as string).replace("limit: 60", "limit: 0");
    let message = "";
    try {
      parsePolicyText(bad, { format: "yaml", source: "./policy.yaml" });
    } catch (err) {
      message = (err as Error).message;
    }
    const quoted = /`(Invalid policy in \.\/policy\.yaml: [^`]+)`/.exec(page)?.[1];
    expect(quoted).toBeDefined();
    expect(message.startsWith(quoted as string)).toBe(true);
  });

  it("documents exactly the options RedisLimitStore accepts, with their real defaults", () => {
    const section = page.slice(
      page.indexOf("## Where limits live"),
      page.indexOf("## Delegations made directly"),
    );
    const options = section.slice(0, section.indexOf("- **One round trip"));
    const named = new Set([...options.matchAll(/`(\w+)`/g)].map((m) => m[1]));
    for (const key of Object.keys(RedisLimitStoreOptionsSchema.shape)) expect(named).toContain(key);
    const defaults = RedisLimitStoreOptionsSchema.parse({});
    expect(section).toContain(`\`prefix\` (default\n\`${defaults.prefix}\`)`);
    expect(section).toContain(`\`timeoutSeconds\` (default ${defaults.timeoutSeconds})`);
    expect(section).toContain("`maxPendingSettlements`, default 10,000");
    expect(defaults.maxPendingSettlements).toBe(10_000);
  });
});
