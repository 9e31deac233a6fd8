// Keeps docs/models.md honest beyond its snippets (which docs/snippets.test.ts runs): every span
// attribute and event the adapter writes is documented (and nothing it does not write), and every
// export of the package's entry points is named on the page.
import { readFileSync, readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import * as entry from "@nerva/ai-sdk";
import * as testing from "@nerva/ai-sdk/testing";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const page = readFileSync(join(root, "docs/models.md"), "utf8");

function sources(dir: string): string {
  return readdirSync(dir, { withFileTypes: true })
    .flatMap((d) =>
      d.isDirectory()
        ? [sources(join(dir, d.name))]
        : d.name.endsWith(".ts") && !/\.test(-support)?\.ts$/.test(d.name)
          ? [readFileSync(join(dir, d.name), "utf8")]
          : [],
    )
    .join("\n");
}
const code = sources(join(root, "packages/ai-sdk/src"));

describe("docs/models.md", () => {
  it("documents every span attribute the adapter writes, and only those", () => {
    const written = new Set(
      [...code.matchAll(/"((?:gen_ai|nerva|http|error)\.[a-z_.]+)"/g)]
        .map((m) => m[1]!)
        .filter((k) => k !== "nerva.scripted" && k !== "gen_ai.tool.call.id"), // a provider name; a core span's
    );
    const table = page.slice(
      page.indexOf("| attribute"),
      page.indexOf("\n\n", page.indexOf("| attribute")),
    );
    const documented = new Set(
      [...table.matchAll(/`((?:gen_ai|nerva|http|error)\.[a-z_.]+)`/g)].map((m) => m[1]!),
    );
    expect([...documented].sort()).toEqual([...written].sort());
  });

  it("names every event the package records", () => {
    const events = [...code.matchAll(/\.event\("([a-z_.]+)"/g)].map((m) => m[1]!);
    expect(events.sort()).toEqual(["llm.price_unknown", "llm.retry", "responder.model_failed"]);
    for (const name of events) expect(page).toContain(`\`${name}\``);
  });

  it("names every export of @nerva/ai-sdk and @nerva/ai-sdk/testing", () => {
    for (const name of [...Object.keys(entry), ...Object.keys(testing)]) {
      if (name === "FLIGHT_RULES" || name === "normaliseProvider") continue; // details of named ones
      expect(page, name).toContain(name);
    }
  });
});
