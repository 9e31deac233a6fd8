// Policy documents are parsed from text the app may not have written itself: nesting, alias
// expansion ("billion laughs") and size must be bounded before the YAML composer or the schema
// recurse, and every violation must be a NervaError naming the source, never a RangeError.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { ErrorCode, NervaError } from "../errors.js";
import {
  MAX_POLICY_TEXT_LENGTH,
  loadPolicyFile,
  parsePolicyDocument,
  parsePolicyText,
} from "./document.js";

const dir = mkdtempSync(join(tmpdir(), "nerva-policy-limits-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function refusal(fn: () => unknown): NervaError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(NervaError);
    expect((err as NervaError).code).toBe(ErrorCode.INVALID_OPTIONS);
    return err as NervaError;
  }
  throw new Error("expected a NervaError");
}

type Style = "flow-seq" | "flow-map" | "block-seq" | "block-map";

/** YAML for `x:` holding `depth` nested collections in `style`. */
function deepYaml(depth: number, style: Style): string {
  switch (style) {
    case "flow-seq":
      return `version: 1\nx: ${"[".repeat(depth)}${"]".repeat(depth)}\n`;
    case "flow-map":
      return `version: 1\nx: ${"{k: ".repeat(depth)}1${"}".repeat(depth)}\n`;
    case "block-seq": {
      const lines = ["version: 1", "x:"];
      for (let i = 0; i < depth; i++)
        lines.push(`${" ".repeat(i + 2)}-${i === depth - 1 ? " 1" : ""}`);
      return lines.join("\n") + "\n";
    }
    case "block-map": {
      const lines = ["version: 1", "x:"];
      for (let i = 0; i < depth; i++)
        lines.push(`${" ".repeat(i + 2)}k:${i === depth - 1 ? " 1" : ""}`);
      return lines.join("\n") + "\n";
    }
  }
}

describe("policy document bounds", () => {
  it.each(["flow-seq", "flow-map", "block-seq", "block-map"] as const)(
    "refuses YAML nested thousands of levels deep (%s) with the line, before composing it",
    (style) => {
      // Deep enough to overflow yaml's composer; block styles indent, so they stay under the size limit.
      const depth = style.startsWith("block") ? 1400 : 20_000;
      const err = refusal(() =>
        parsePolicyText(deepYaml(depth, style), { format: "yaml", source: "deep.yaml" }),
      );
      expect(err.message).toMatch(
        /^Invalid policy in deep\.yaml \(line \d+\): nested deeper than 64 levels\. A policy document nests at most 64 levels/,
      );
      expect(err.details).toEqual({ source: "deep.yaml" });
    },
  );

  it("refuses JSON nested too deep, and a value passed in directly", () => {
    const text = `{"version":1,"rules":${"[".repeat(100_000)}${"]".repeat(100_000)}}`;
    const fromText = refusal(() => parsePolicyText(text, { format: "json", source: "p.json" }));
    expect(fromText.message).toMatch(/^Invalid policy in p\.json: nested deeper than 64 levels/);
    const fromValue = refusal(() => parsePolicyDocument(JSON.parse(text), "inline"));
    expect(fromValue.message).toMatch(/^Invalid policy in inline: nested deeper than 64 levels/);
  });

  it("draws the line at 64 levels, the document object included", () => {
    // At the limit the schema speaks (x is not a policy field); one deeper, the bound does.
    expect(
      refusal(() => parsePolicyText(deepYaml(63, "flow-seq"), { format: "yaml" })).message,
    ).toMatch(/Unrecognized key: "x"/);
    expect(
      refusal(() => parsePolicyText(deepYaml(64, "flow-seq"), { format: "yaml" })).message,
    ).toMatch(/nested deeper than 64 levels/);
  });

  it("bounds alias expansion (billion laughs), within and across nesting", () => {
    const laughs = [
      "version: 1",
      'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]',
      ...["b", "c", "d", "e", "f", "g", "h", "i"].map(
        (name, i) => `${name}: &${name} [${new Array(9).fill(`*${"abcdefghi"[i]}`).join(",")}]`,
      ),
    ].join("\n");
    const err = refusal(() => parsePolicyText(laughs, { format: "yaml", source: "lol.yaml" }));
    expect(err.message).toMatch(/^Invalid policy in lol\.yaml: its aliases expand too far/);
    // Aliases stacking nesting: each level is an alias of the one before, so the text is flat.
    const stacked = ["version: 1", "l0: &l0 [1]"];
    for (let i = 1; i <= 80; i++) stacked.push(`l${i}: &l${i} [*l${i - 1}]`);
    const deep = refusal(() => parsePolicyText(stacked.join("\n"), { format: "yaml" }));
    expect(deep.message).toMatch(/nested deeper than 64 levels|aliases expand too far/);
  });

  it("refuses policy text over the size limit without parsing it", () => {
    const text = `version: 1\n# ${"x".repeat(MAX_POLICY_TEXT_LENGTH)}\n`;
    const err = refusal(() => parsePolicyText(text, { format: "yaml", source: "big.yaml" }));
    expect(err.message).toMatch(
      /^Invalid policy in big\.yaml: \d+ characters, over the limit of 1048576/,
    );
  });

  it("loads a deep file as a NervaError naming the file", async () => {
    const path = join(dir, "deep.yaml");
    writeFileSync(path, deepYaml(10_000, "flow-map"));
    await expect(loadPolicyFile(path)).rejects.toMatchObject({
      code: ErrorCode.INVALID_OPTIONS,
      message: expect.stringContaining(`Invalid policy in ${path} (line 2): nested deeper than 64`),
    });
  });

  it("answers any nesting in any style with a document or a NervaError, never a RangeError (generated)", () => {
    fc.assert(
      fc.property(
        fc.constantFrom<Style>("flow-seq", "flow-map", "block-seq", "block-map"),
        fc.oneof(fc.integer({ min: 1, max: 70 }), fc.integer({ min: 70, max: 1200 })),
        (style, depth) => {
          const err = refusal(() => parsePolicyText(deepYaml(depth, style), { format: "yaml" }));
          // The document object is level 1.
          if (depth + 1 > 64) expect(err.message).toMatch(/nested deeper than 64 levels/);
          else expect(err.message).toMatch(/Unrecognized key: "x"/);
        },
      ),
      { numRuns: 80 },
    );
  });
});
