import { cpSync, mkdtempSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import ts from "typescript";
import { afterAll, describe, expect, it } from "vitest";
import { isExecContext } from "./context/check.js";
import { ExecContext } from "./context/exec-context.js";
import { ErrorCode, NervaError, isNervaError } from "./errors.js";

const here = dirname(fileURLToPath(import.meta.url));

describe("details typed per code", () => {
  it("narrows details by code with no cast", () => {
    const err: unknown = new NervaError(ErrorCode.APPROVAL_PENDING, "wait", {
      details: { approvalId: "apr_1", rule: "refunds" },
    });
    if (!isNervaError(err)) throw new Error("not a NervaError");
    // Checked by the compiler (pnpm typecheck): after the code check, details are typed.
    if (err.code === ErrorCode.APPROVAL_PENDING) {
      const id: string = err.details.approvalId;
      expect(id).toBe("apr_1");
    }
    if (isNervaError(err, ErrorCode.RATE_LIMITED)) {
      const seconds: number = err.details.retryAfterSeconds;
      expect.unreachable(String(seconds));
    }
  });

  it("requires the details a code promises when the code is a literal", () => {
    // @ts-expect-error APPROVAL_PENDING needs details.approvalId
    const missing = new NervaError(ErrorCode.APPROVAL_PENDING, "wait");
    // @ts-expect-error RATE_LIMITED needs details.retryAfterSeconds, not retryAt
    const wrong = new NervaError(ErrorCode.RATE_LIMITED, "slow", { details: { retryAt: 1 } });
    // Codes without promised details take none, and any code held in a variable compiles.
    const fromVariable = (code: ErrorCode) => new NervaError(code, "x");
    const fine = [new NervaError(ErrorCode.TIMEOUT, "late"), fromVariable(ErrorCode.RATE_LIMITED)];
    expect([missing.details, wrong.details, fine[0]!.details]).toEqual([{}, { retryAt: 1 }, {}]);
  });
});

describe("the HTTP status table covers every code", () => {
  it("a new ErrorCode without a status fails to compile", () => {
    const errorsFile = join(here, "errors.ts");
    const statusFile = join(here, "http/status.ts");
    const options: ts.CompilerOptions = {
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      strict: true,
      noEmit: true,
      skipLibCheck: true,
      types: ["node"],
    };
    const diagnosticsWith = (extraCode: string | null): string[] => {
      const host = ts.createCompilerHost(options);
      const read = host.readFile.bind(host);
      host.readFile = (file) => {
        const text = read(file);
        if (extraCode === null || file !== errorsFile || text === undefined) return text;
        return text.replace(
          "export const ErrorCode = {",
          `export const ErrorCode = {\n  ${extraCode}: "${extraCode}",`,
        );
      };
      const program = ts.createProgram([statusFile], options, host);
      return ts
        .getPreEmitDiagnostics(program)
        .filter((d) => d.file?.fileName === statusFile)
        .map((d) => ts.flattenDiagnosticMessageText(d.messageText, "\n"));
    };
    expect(diagnosticsWith(null)).toEqual([]);
    const errors = diagnosticsWith("BRAND_NEW_CODE");
    expect(errors.join("\n")).toMatch(/BRAND_NEW_CODE/);
  }, 60_000);
});

describe("two installed copies of the package", () => {
  // A second copy of the built package, loaded as its own module graph: what an app gets when
  // it and a bridge resolve different versions of @nerva/core.
  const dir = mkdtempSync(join(here, "..", ".copy-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const loadCopy = async () => {
    cpSync(join(here, "..", "dist"), join(dir, "dist"), { recursive: true });
    return (await import(pathToFileURL(join(dir, "dist", "esm", "index.js")).href)) as {
      NervaError: typeof NervaError;
      ExecContext: typeof ExecContext;
      isNervaError: typeof isNervaError;
    };
  };

  it("recognise each other's errors and contexts", async () => {
    const other = await loadCopy();
    expect(other.NervaError).not.toBe(NervaError);
    const foreign = new other.NervaError(ErrorCode.TIMEOUT, "late");
    expect(foreign instanceof NervaError).toBe(true);
    expect(isNervaError(foreign, ErrorCode.TIMEOUT)).toBe(true);
    expect(isNervaError(foreign, ErrorCode.CANCELLED)).toBe(false);
    expect(other.isNervaError(new NervaError(ErrorCode.TIMEOUT, "late"))).toBe(true);
    expect(new Error("x") instanceof NervaError).toBe(false);
    expect({ code: "TIMEOUT" } instanceof NervaError).toBe(false);

    const ctx = other.ExecContext.create({ userId: "u1" });
    expect(isExecContext(ctx)).toBe(true);
    expect(isExecContext({ requestId: "r" })).toBe(false);
  });

  it("subclasses keep ordinary instanceof", () => {
    class MyError extends NervaError {}
    const mine = new MyError(ErrorCode.TIMEOUT, "late");
    expect(mine instanceof MyError).toBe(true);
    expect(new NervaError(ErrorCode.TIMEOUT, "late") instanceof MyError).toBe(false);
    expect(mine instanceof NervaError).toBe(true);
  });
});
