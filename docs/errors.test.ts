// Keeps the table in docs/errors.md equal to the code: every ErrorCode is listed once, with the
// HTTP status the bridges really answer.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { ErrorCode } from "@nerva/core";
import { HTTP_STATUS_BY_ERROR_CODE } from "@nerva/core/http";

const page = readFileSync(join(dirname(fileURLToPath(import.meta.url)), "errors.md"), "utf8");
const rows = [...page.matchAll(/^\|\s*`([A-Z_]+)`\s*\|[^|]+\|\s*(\d{3})\s*\|$/gm)].map((m) => ({
  code: m[1] as string,
  status: Number(m[2]),
}));

describe("docs/errors.md", () => {
  it("lists every error code exactly once", () => {
    expect(rows.map((r) => r.code).sort()).toEqual(Object.values(ErrorCode).sort());
  });

  it("gives each code the HTTP status the bridges answer", () => {
    for (const { code, status } of rows) {
      expect(status, code).toBe(HTTP_STATUS_BY_ERROR_CODE[code as ErrorCode]);
    }
  });
});
