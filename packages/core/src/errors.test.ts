import { cpSync, mkdtempSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import ts from "typescript";
import { afterAll, describe, expect, it } from "vitest";
import { isExecContext } from "./context/check.js";
import { ExecContext } from "./context/exec-context.js";
import {
  ERROR_POLICY,
  ErrorCode,
  NervaError,
  UnrecoverableError,
  errorPolicyOf,
  isNervaError,
} from "./errors.js";

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

describe("the error policy covers every code", () => {
  it("a new ErrorCode without a policy row fails to compile", () => {
    const errorsFile = join(here, "errors.ts");
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
      const program = ts.createProgram([errorsFile], options, host);
      return ts
        .getPreEmitDiagnostics(program)
        .filter((d) => d.file?.fileName === errorsFile)
        .map((d) => ts.flattenDiagnosticMessageText(d.messageText, "\n"));
    };
    expect(diagnosticsWith(null)).toEqual([]);
    const errors = diagnosticsWith("BRAND_NEW_CODE");
    expect(errors.join("\n")).toMatch(/BRAND_NEW_CODE/);
  }, 60_000);

  it("gives every code a status, a retry verdict and an exposure, exposing only client statuses", () => {
    for (const code of Object.values(ErrorCode)) {
      const { status, retriable, expose } = ERROR_POLICY[code];
      expect(Number.isInteger(status) && status >= 200 && status <= 599, code).toBe(true);
      expect(typeof retriable, code).toBe("boolean");
      // A message answered with a 5xx other than 503/504 may carry internals: never exposed.
      expect(expose, code).toBe(status < 500 || status === 503 || status === 504);
      expect(errorPolicyOf(code)).toBe(ERROR_POLICY[code]);
    }
    expect(Object.isFrozen(ERROR_POLICY) && Object.isFrozen(ERROR_POLICY.TIMEOUT)).toBe(true);
  });

  it("says a retry cannot help bad input, refusals, missing things and programmer errors", () => {
    const permanent = Object.values(ErrorCode).filter((c) => !ERROR_POLICY[c].retriable);
    expect(permanent.sort()).toEqual(
      [
        "INVALID_INPUT",
        "INVALID_OPTIONS",
        "PERMISSION_DENIED",
        "POLICY_DENIED",
        "NOT_FOUND",
        "UNAUTHENTICATED",
        "DUPLICATE_HANDLER",
        "EMPTY_CHAIN",
        "MISSING_DEPENDENCY",
        "UNRECOVERABLE",
      ].sort(),
    );
  });

  it("has no row for what is not an ErrorCode", () => {
    for (const code of ["HANDLER_ERROR", "toString", "__proto__", 42, null, undefined]) {
      expect(errorPolicyOf(code), String(code)).toBeUndefined();
    }
  });
});

describe("UnrecoverableError", () => {
  it("is a NervaError with code UNRECOVERABLE, its cause kept, that no retry helps", () => {
    const cause = new Error("402 from the card processor");
    const err: unknown = new UnrecoverableError("card declined", { cause });
    expect(err).toBeInstanceOf(NervaError);
    expect(err).toBeInstanceOf(UnrecoverableError);
    expect(isNervaError(err, ErrorCode.UNRECOVERABLE)).toBe(true);
    expect(err).toMatchObject({ name: "UnrecoverableError", message: "card declined", cause });
    expect(ERROR_POLICY.UNRECOVERABLE).toEqual({ status: 500, retriable: false, expose: false });
  });
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
