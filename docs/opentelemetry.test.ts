// Keeps docs/opentelemetry.md honest beyond its snippets (which docs/snippets.test.ts runs): the
// mapping table is what the sink does, every option and export is named, and the tests the page
// points to for its no-run blocks exist.
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { ExecContext } from "@nerva/core";
import * as entry from "@nerva/otel";
import { InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const page = readFileSync(join(root, "docs/opentelemetry.md"), "utf8");

/** Rows of the markdown table whose header starts with `first`. */
function table(first: string): string[][] {
  const start = page.indexOf(`| ${first}`);
  const end = page.indexOf("\n\n", start);
  return page
    .slice(start, end)
    .split("\n")
    .slice(2)
    .map((row) =>
      row
        .split("|")
        .slice(1, -1)
        .map((c) => c.trim()),
    );
}

describe("docs/opentelemetry.md", () => {
  it("its mapping table is what the sink exports", () => {
    const exporter = new InMemorySpanExporter();
    const sink = entry.createOtelSink({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    const ctx = ExecContext.create({ traceSink: sink });
    const made: [string, Record<string, string>][] = [
      ["handle", {}],
      ["runtime.invoke", { handler: "{handler}" }],
      ["tools.call", { tool: "{tool}" }],
      ["chat", { "gen_ai.request.model": "{model}" }],
      ["delegate", {}],
    ];
    for (const [name, attrs] of made) ctx.startSpan(name, attrs).end();
    const exported = exporter.getFinishedSpans();
    const rows = table("Nerva span");
    expect(rows).toHaveLength(made.length);
    for (const [i, row] of rows.entries()) {
      const span = exported[i]!;
      const [, otelName, operation] = row;
      const expectedName = otelName === "unchanged" ? made[i]![0] : otelName!.replace(/`/g, "");
      expect(span.name, row.join(" | ")).toBe(expectedName);
      const op = operation === "—" ? undefined : operation!.replace(/`/g, "");
      expect(span.attributes["gen_ai.operation.name"]).toBe(op);
    }
  });

  it("lists every option of createOtelSink", () => {
    const source = readFileSync(join(root, "packages/otel/src/options.ts"), "utf8");
    const block = source.slice(
      source.indexOf("export interface OtelSinkOptions"),
      source.indexOf("\n}", source.indexOf("export interface OtelSinkOptions")),
    );
    const options = [...block.matchAll(/^ {2}(\w+)\?:/gm)].map((m) => m[1]!);
    expect(options.length).toBeGreaterThan(5);
    const documented = table("option").map((r) => r[0]!.replace(/`/g, ""));
    expect(documented.sort()).toEqual(options.sort());
  });

  it("names every export of @nerva/otel", () => {
    for (const name of Object.keys(entry)) expect(page, name).toContain(name);
  });

  it("points its no-run blocks to tests that exist", () => {
    const named = [...page.matchAll(/`(packages\/otel\/test\/[\w.-]+\.test\.ts)`/g)].map(
      (m) => m[1]!,
    );
    expect(named.length).toBeGreaterThanOrEqual(3);
    for (const file of named) expect(existsSync(join(root, file)), file).toBe(true);
  });
});
