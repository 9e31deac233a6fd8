// Keeps the table in docs/errors.md equal to the code: every ErrorCode is listed once, with the
// HTTP status the bridges really answer, whether a retry helps and whether clients see its message.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { ERROR_POLICY, ErrorCode, NervaError } from "@nerva/core";
import { toHttpError } from "@nerva/core/http";

const page = readFileSync(join(dirname(fileURLToPath(import.meta.url)), "errors.md"), "utf8");
const rows = [
  ...page.matchAll(
    /^\|\s*`([A-Z_]+)`\s*\|[^|]+\|\s*(\d{3})\s*\|\s*(yes|no)\s*\|\s*(yes|no)\s*\|$/gm,
  ),
].map((m) => ({
  code: m[1] as ErrorCode,
  status: Number(m[2]),
  retriable: m[3] === "yes",
  expose: m[4] === "yes",
}));

describe("docs/errors.md", () => {
  it("lists every error code exactly once", () => {
    expect(rows.map((r) => r.code).sort()).toEqual(Object.values(ErrorCode).sort());
  });

  it("gives each code the row of ERROR_POLICY", () => {
    for (const { code, ...row } of rows) expect(row, code).toEqual(ERROR_POLICY[code]);
  });

  it("gives each code the HTTP status the bridges answer, its message shown as the row says", () => {
    for (const { code, status, expose } of rows) {
      const answer = toHttpError(new NervaError(code, "the message of it"), "r1");
      expect(answer.status, code).toBe(status);
      expect(answer.body.error.message === "the message of it", code).toBe(expose);
    }
  });
});
