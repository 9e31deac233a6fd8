import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ErrorCode, NervaError } from "../errors.js";
import { DeclarativePolicyEngine } from "../declarative-policy/declarative-engine.js";
import { loadPolicyFile, parsePolicyDocument, parsePolicyText } from "./document.js";

const dir = mkdtempSync(join(tmpdir(), "nerva-policy-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function file(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

async function failure(promise: Promise<unknown>): Promise<NervaError> {
  try {
    await promise;
  } catch (err) {
    expect(err).toBeInstanceOf(NervaError);
    return err as NervaError;
  }
  throw new Error("expected a rejection");
}

const VALID_YAML = `
version: 1
rules:
  - name: no-guest-refunds
    effect: deny
    kind: tool
    names: ["refund*"]
    unlessRoles: [staff]
approvals:
  - name: big-actions
    names: [wire_transfer]
    approverRoles: [manager]
rateLimits:
  - name: per-user
    per: user
    limit: 10
    windowSeconds: 60
budgets:
  - name: per-request
    per: request
    maxTokens: 5000
`;

describe("policy documents", () => {
  it("loads YAML and JSON files, filling defaults", async () => {
    const doc = await loadPolicyFile(file("policy.yaml", VALID_YAML));
    expect(doc.default).toBe("allow");
    expect(doc.rules[0]).toMatchObject({ name: "no-guest-refunds", kind: "tool" });
    expect(doc.approvals[0]).toMatchObject({ exemptRoles: [], ttlSeconds: 86_400 });
    expect(doc.budgets[0]).toMatchObject({ per: "request", maxTokens: 5000 });
    const json = await loadPolicyFile(file("policy.json", JSON.stringify({ version: 1 })));
    expect(json).toEqual({
      version: 1,
      default: "allow",
      rules: [],
      approvals: [],
      rateLimits: [],
      budgets: [],
    });
    const engine = await DeclarativePolicyEngine.fromFile(join(dir, "policy.yaml"));
    expect(engine.document.rateLimits[0]?.limit).toBe(10);
  });

  it("names the file and the path inside it for an invalid document", async () => {
    const path = file(
      "bad.yaml",
      VALID_YAML.replace("limit: 10", "limit: 0").replace(
        "approverRoles: [manager]",
        "approverRoles: []",
      ),
    );
    const err = await failure(loadPolicyFile(path));
    expect(err.code).toBe(ErrorCode.INVALID_OPTIONS);
    expect(err.message).toContain(path);
    expect(err.message).toContain("rateLimits[0].limit");
    expect(err.message).toContain("approvals[0].approverRoles");
    expect(err.issues.map((i) => i.path)).toEqual(
      expect.arrayContaining(["rateLimits[0].limit", "approvals[0].approverRoles"]),
    );
    const fromEngine = await failure(DeclarativePolicyEngine.fromFile(path));
    expect(fromEngine.message).toContain("rateLimits[0].limit");
  });

  it("names the line of a YAML syntax error and refuses unknown extensions and missing files", async () => {
    const err = await failure(
      loadPolicyFile(file("syntax.yaml", "version: 1\nrules: [\n  - x: :\n")),
    );
    expect(err.message).toMatch(/syntax\.yaml \(line \d+\): not valid YAML/);
    const json = await failure(loadPolicyFile(file("syntax.json", "{ nope")));
    expect(json.message).toContain("not valid JSON");
    expect((await failure(loadPolicyFile(file("policy.txt", "")))).message).toContain(".yaml");
    expect((await failure(loadPolicyFile(join(dir, "missing.yaml")))).message).toContain(
      "Cannot read policy file",
    );
  });

  it("rejects unknown fields, duplicate names, and budgets without a limit", () => {
    expect(() => parsePolicyDocument({ version: 1, limits: [] }, "inline")).toThrow(
      /Invalid policy in inline: \(document root\)/,
    );
    expect(() =>
      parsePolicyDocument({
        version: 1,
        rules: [{ name: "a", effect: "deny" }],
        budgets: [{ name: "a", per: "request", maxTokens: 1 }],
      }),
    ).toThrow(/budgets\[0\]\.name: duplicate name "a"/);
    expect(() =>
      parsePolicyText('{"version":1,"budgets":[{"name":"b","per":"user"}]}', { format: "json" }),
    ).toThrow(/budgets\[0\]: needs maxTokens or maxCostUsd/);
    expect(() => parsePolicyDocument({ version: 2 })).toThrow(/version/);
  });
});
