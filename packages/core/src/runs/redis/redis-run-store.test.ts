import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { describeRunStoreContract } from "../../testing/run-store-contract.js";
import { RedisRunStore } from "./redis-run-store.js";
import { REDIS_URL, dropPrefixes, testPrefix } from "./redis.test-support.js";

const prefixes: string[] = [];
afterAll(() => dropPrefixes(prefixes));

describeRunStoreContract("RedisRunStore", async () => {
  const prefix = testPrefix("contract");
  prefixes.push(prefix);
  return {
    store: new RedisRunStore({ url: REDIS_URL, prefix }),
    reopen: async () => new RedisRunStore({ url: REDIS_URL, prefix }),
  };
});

describe("RedisRunStore options", () => {
  it("validates its options", () => {
    expect(() => new RedisRunStore({ prefix: "bad prefix" })).toThrow(/options\.prefix/);
    expect(() => new RedisRunStore({ nope: 1 } as never)).toThrow(/nope/);
  });
});

describe("RedisRunStore without its optional packages", () => {
  it.each(["bullmq", "ioredis"])("throws MISSING_DEPENDENCY naming %s", async (name) => {
    const hook = fileURLToPath(
      new URL("../../../test/fixtures/hide-required-packages.mjs", import.meta.url),
    );
    const entry = fileURLToPath(new URL("../../redis/index.ts", import.meta.url));
    const script = `
      import { RedisRunStore } from ${JSON.stringify(entry)};
      try { new RedisRunStore(); console.log("constructed?!"); }
      catch (e) { console.log(JSON.stringify({ code: e.code, message: e.message, details: e.details })); }`;
    const out = await new Promise<string>((resolve, reject) =>
      execFile(
        process.execPath,
        ["--import", hook, "--import", "tsx", "--input-type=module", "-e", script],
        { env: { ...process.env, NERVA_HIDE_PACKAGES: name }, timeout: 30_000 },
        (err, stdout, stderr) =>
          err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(stdout),
      ),
    );
    const reported = JSON.parse(out.trim()) as { code: string; message: string; details: unknown };
    expect(reported.code).toBe("MISSING_DEPENDENCY");
    expect(reported.message).toContain(`needs the optional package "${name}"`);
    expect(reported.details).toMatchObject({ package: name });
  });
});
