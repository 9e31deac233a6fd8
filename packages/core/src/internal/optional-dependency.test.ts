import { describe, expect, it } from "vitest";
import { ErrorCode, NervaError } from "../errors.js";
import { importOptional, requireOptional } from "./optional-dependency.js";

const expectMissing = (err: unknown, name: string, install: string) => {
  expect(err).toBeInstanceOf(NervaError);
  const e = err as NervaError<"MISSING_DEPENDENCY">;
  expect(e.code).toBe(ErrorCode.MISSING_DEPENDENCY);
  expect(e.message).toBe(
    `Feature X needs the optional package "${name}", which is not installed. Install it next to @nerva/core: npm install ${install} (or pnpm add ${install}).`,
  );
  expect(e.details).toEqual({ package: name, install: `npm install ${install}` });
};

describe("optional dependencies: one loader, one message shape", () => {
  it("require: a missing package names itself and its install command", () => {
    let err: unknown;
    try {
      requireOptional("nerva-no-such-package", "Feature X", "nerva-no-such-package@^1");
    } catch (e) {
      err = e;
    }
    expectMissing(err, "nerva-no-such-package", "nerva-no-such-package@^1");
  });

  it("import: the same for an ES module, a file inside a package included", async () => {
    const name = "@nerva-test/not-installed-anywhere";
    const err = await importOptional(
      name,
      () => import(`${name}/client/index.js`),
      "Feature X",
    ).catch((e: unknown) => e);
    expectMissing(err, name, name);
  });

  it("passes through failures other than the package being absent", async () => {
    const broken = new Error("syntax error in the package");
    await expect(importOptional("zod", () => Promise.reject(broken), "Feature X")).rejects.toBe(
      broken,
    );
    // A package that is installed but misses one of its own imports is not "not installed".
    const inner = Object.assign(new Error("Cannot find module 'left-pad'"), {
      code: "ERR_MODULE_NOT_FOUND",
    });
    await expect(importOptional("zod", () => Promise.reject(inner), "Feature X")).rejects.toBe(
      inner,
    );
  });

  it("loads what is installed", async () => {
    expect(requireOptional<{ z: unknown }>("zod", "Feature X").z).toBeDefined();
    expect((await importOptional("zod", () => import("zod"), "Feature X")).z).toBeDefined();
  });
});
