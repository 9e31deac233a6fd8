// docs/http-bridges.md: its runnable snippet runs in docs/snippets.test.ts; this keeps its tables
// equal to the code — every option of the schema listed, every status row as the bridges answer.
import { describe, expect, it } from "vitest";
import { AgentStatus, ErrorCode, NervaError } from "@nerva/core";
import {
  HTTP_STATUS_BY_AGENT_STATUS,
  NervaHttpOptionsSchema,
  httpStatusOf,
  parseHttpOptions,
} from "@nerva/core/http";
import { pageText } from "./bridge-docs.js";

const page = pageText("http-bridges.md");

/** Rows of the markdown table whose header starts with `| first |`. */
function table(first: string): string[][] {
  const lines = page.split("\n");
  const start = lines.findIndex((l) => new RegExp(`^\\|\\s*${first}\\s*\\|`).test(l));
  expect(start, `table starting with ${first}`).toBeGreaterThan(-1);
  const rows: string[][] = [];
  for (let i = start + 2; i < lines.length && lines[i]?.startsWith("|"); i++) {
    rows.push(
      (lines[i] as string)
        .split(/(?<!\\)\|/)
        .slice(1, -1)
        .map((c) => c.trim()),
    );
  }
  return rows;
}
const names = (cell: string) => [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1] as string);

describe("docs/http-bridges.md", () => {
  it("lists every option, with its default", () => {
    const rows = table("option");
    const listed = rows.map((r) => names(r[0] as string)[0]);
    expect(listed.sort()).toEqual(Object.keys(NervaHttpOptionsSchema.shape).sort());
    const defaults = parseHttpOptions();
    for (const [cell, fallback] of rows) {
      const key = names(cell as string)[0] as keyof typeof defaults;
      const literal = /^`(.+)`$/.exec(fallback as string)?.[1];
      if (literal !== undefined) expect(JSON.stringify(defaults[key]), key).toBe(literal);
    }
    expect(defaults.anonymousPermissions.canUseAgent("any")).toBe(false);
    expect(defaults.permissions.canUseTool("any")).toBe(true);
  });

  it("gives the status the bridges answer for each error code", () => {
    const covered = new Set<string>();
    for (const [codes, status] of table("code")) {
      for (const code of names(codes as string)) {
        covered.add(code);
        expect(httpStatusOf(new NervaError(code as ErrorCode, "x")), code).toBe(Number(status));
      }
    }
    for (const code of Object.values(ErrorCode).filter((c) => !covered.has(c))) {
      expect(httpStatusOf(new NervaError(code, "x")), `${code} (anything else)`).toBe(500);
    }
  });

  it("gives the status of each agent result status", () => {
    const listed = new Set<string>();
    for (const [statuses, http] of table("`status`")) {
      for (const status of names(statuses as string)) {
        listed.add(status);
        expect(HTTP_STATUS_BY_AGENT_STATUS[status as AgentStatus], status).toBe(Number(http));
      }
    }
    expect([...listed].sort()).toEqual(Object.values(AgentStatus).sort());
  });
});
