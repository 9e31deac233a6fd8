// The consumer matrix: every package packed with `pnpm pack` (as it would be published) and
// installed with npm into fresh projects outside the workspace, which then build and run. The apps
// are in ./apps; their "@nerva/*" dependencies are replaced by the tarballs. npm's cache lives in
// node_modules/.cache, so a second run downloads nothing; the registry is the only thing needed.
import { execFile } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const root = join(dirname(fileURLToPath(import.meta.url)), "../..");
const apps = join(root, "test/consumers/apps");
const npmCache = join(root, "node_modules/.cache/nerva-consumers-npm");
const PACKAGES = ["core", "express", "fastify", "nestjs", "ai-sdk", "cli", "otel"];
const MINUTES = 60_000;

const work = mkdtempSync(join(tmpdir(), "nerva-consumers-"));
const tarballs = new Map<string, string>();

/** Runs a command; a failure throws with its output, so CI shows what broke. */
async function run(cmd: string, args: string[], cwd: string): Promise<string> {
  try {
    const { stdout } = await promisify(execFile)(cmd, args, {
      cwd,
      encoding: "utf8",
      maxBuffer: 64 * 1024 * 1024,
      env: { ...process.env, npm_config_cache: npmCache, npm_config_update_notifier: "false" },
    });
    return stdout;
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string };
    throw new Error(
      `${cmd} ${args.join(" ")} failed in ${cwd}\n${e.stdout ?? ""}\n${e.stderr ?? e.message}`,
      { cause: err },
    );
  }
}

/** Reads, changes and writes back a JSON file. */
function editJson(
  file: string,
  edit: (json: Record<string, Record<string, string>>) => void,
): void {
  const json = JSON.parse(readFileSync(file, "utf8")) as Record<string, Record<string, string>>;
  edit(json);
  writeFileSync(file, JSON.stringify(json, null, 2));
}

/**
 * Copies app `name` to a fresh folder `as`, lets `edit` change it (a variant of the app), points
 * its @nerva/* dependencies at the tarballs, installs.
 */
async function install(name: string, as = name, edit?: (dir: string) => void): Promise<string> {
  const dir = join(work, as);
  cpSync(join(apps, name), dir, { recursive: true });
  edit?.(dir);
  const file = join(dir, "package.json");
  const pkg = JSON.parse(readFileSync(file, "utf8")) as Record<string, Record<string, string>>;
  for (const field of ["dependencies", "devDependencies"]) {
    for (const dep of Object.keys(pkg[field] ?? {})) {
      const tarball = tarballs.get(dep);
      if (tarball !== undefined) pkg[field]![dep] = `file:${tarball}`;
    }
  }
  writeFileSync(file, JSON.stringify(pkg, null, 2));
  await run("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline"], dir);
  return dir;
}

/** What the HTTP apps print: the same three requests against each framework. */
function expectAnswers(out: string): void {
  const result = JSON.parse(out.trim().split("\n").pop()!) as {
    me: { status: number; body: unknown };
    anonymous: { status: number; body: { error: { code: string; requestId: string } } };
    story: { type: string; body: string };
  };
  expect(result.me).toEqual({
    status: 200,
    body: { user: "alice", text: "alice asked: who am I" },
  });
  expect(result.anonymous.status).toBe(401);
  expect(result.anonymous.body.error.code).toBe("UNAUTHENTICATED");
  expect(result.anonymous.body.error.requestId).toMatch(/^[0-9a-f-]{36}$/);
  expect(result.story.type).toMatch(/^text\/event-stream/);
  expect(result.story.body).toContain("data: Once ");
  expect(result.story.body).toContain("data: upon a time.");
  expect(result.story.body).toContain("event: done");
}

beforeAll(async () => {
  // The same script README.md tells users to run.
  const out = await run(
    process.execPath,
    [join(root, "scripts/pack.mjs"), join(work, "tarballs")],
    root,
  );
  for (const line of out.trim().split("\n")) {
    const packed = JSON.parse(line) as { name: string; filename: string };
    tarballs.set(packed.name, packed.filename);
  }
  expect([...tarballs.keys()].sort()).toEqual(PACKAGES.map((p) => `@nerva/${p}`).sort());
}, 5 * MINUTES);

// Six installs: removing them takes a while on a busy machine.
afterAll(() => rm(work, { recursive: true, force: true }), 5 * MINUTES);

describe("the packed tarballs", () => {
  it("carry LICENSE, README and both builds, and no source condition or sources", async () => {
    for (const [name, tarball] of tarballs) {
      const files = (await run("tar", ["-tzf", tarball], work)).split("\n").filter(Boolean);
      expect(files, name).toContain("package/LICENSE");
      expect(files, name).toContain("package/README.md");
      expect(files, name).toContain("package/dist/esm/index.js");
      expect(files, name).toContain("package/dist/commonjs/index.js");
      expect(
        files.filter((f) => f.endsWith(".ts") && !f.endsWith(".d.ts")),
        name,
      ).toEqual([]);
      const text = await run("tar", ["-xzOf", tarball, "package/package.json"], work);
      const manifest = JSON.parse(text) as { exports: unknown; license: string };
      expect(JSON.stringify(manifest.exports), name).toContain('"require":');
      // No "source" condition, nor the workspace's "@nerva/source": nothing points at .ts files.
      expect(JSON.stringify(manifest.exports), name).not.toMatch(/source|(?<!\.d)\.ts"/);
      expect(text, name).not.toContain("workspace:");
      expect(manifest.license, name).toBe("MIT");
    }
  });
});

// Concurrent: most of the time goes to npm downloading and installing.
describe.concurrent("consumer apps installed from the tarballs", () => {
  // The app `nest new` makes with Nest 11, and the same on Nest 10 (its TypeScript and target).
  const nest10 = (dir: string) => {
    editJson(join(dir, "package.json"), (pkg) => {
      for (const name of ["@nestjs/common", "@nestjs/core", "@nestjs/platform-express"]) {
        pkg["dependencies"]![name] = "^10.4.15";
      }
      Object.assign(pkg["devDependencies"]!, {
        "@nestjs/testing": "^10.4.15",
        "@types/express": "^4.17.21",
        typescript: "~5.1.6",
      });
    });
    editJson(join(dir, "tsconfig.json"), (tsconfig) => {
      tsconfig["compilerOptions"]!["target"] = "ES2021";
    });
  };
  for (const [nest, edit] of [
    ["11", undefined],
    ["10", nest10],
  ] as const) {
    it(
      `a \`nest new\`-shaped CommonJS app on Nest ${nest}: tsc builds it, its ts-jest e2e test boots NervaModule`,
      async () => {
        const dir = await install("nest-cjs", `nest${nest}-cjs`, edit);
        await run("npm", ["run", "build"], dir);
        expect(readdirSync(join(dir, "dist"))).toContain("main.js");
        const out = await run(
          "npx",
          ["jest", "--config", "./test/jest-e2e.json", "--ci", "--json"],
          dir,
        );
        const report = JSON.parse(out) as { numPassedTests: number; numFailedTests: number };
        expect(report).toMatchObject({ numPassedTests: 3, numFailedTests: 0 });
      },
      10 * MINUTES,
    );
  }

  it(
    "an Express 4 app in plain CommonJS JavaScript",
    async () => {
      const dir = await install("express4-cjs");
      const out = await run(process.execPath, ["server.js"], dir);
      expect(JSON.parse(out).express).toMatch(/^4\./);
      expectAnswers(out);
    },
    10 * MINUTES,
  );

  it(
    "an Express 5 app in TypeScript compiled to ES modules (req.nervaCtx typed)",
    async () => {
      const dir = await install("express5-esm");
      await run("npm", ["run", "build"], dir);
      expectAnswers(await run(process.execPath, ["dist/main.js"], dir));
    },
    10 * MINUTES,
  );

  it(
    "a Fastify app as an ES module",
    async () => {
      const dir = await install("fastify-esm");
      expectAnswers(await run(process.execPath, ["server.mjs"], dir));
      // docs/fastify.md's complete app type-checks here too, with nothing of the repository's own
      // (its request.user augmentation included): what a reader copying it gets.
      const page = readFileSync(join(root, "docs/fastify.md"), "utf8");
      const app = /```ts\n(import assert[\s\S]*?)```/.exec(page)?.[1];
      expect(app).toBeDefined();
      writeFileSync(join(dir, "docs-app.ts"), app as string);
      await run(process.execPath, [join(dir, "node_modules/typescript/bin/tsc"), "-p", "."], dir);
    },
    10 * MINUTES,
  );

  it(
    "TypeScript 5.0, 5.4 and latest type-check it under commonjs, node16, nodenext and bundler",
    async () => {
      const dir = await install("typescript");
      for (const ts of ["ts50", "ts54", "typescript"]) {
        const tsc = join(dir, "node_modules", ts, "bin/tsc");
        await Promise.all(
          ["commonjs", "node16", "nodenext", "bundler"].map((config) =>
            run(process.execPath, [tsc, "-p", `tsconfig.${config}.json`], dir),
          ),
        );
      }
      // The check is not vacuous: a context typed `any` fails it.
      writeFileSync(
        join(dir, "src/any.ts"),
        "export const x: (0 extends 1 & any ? true : false) = false;\n",
      );
      await expect(
        run(
          process.execPath,
          [join(dir, "node_modules/typescript/bin/tsc"), "-p", "tsconfig.nodenext.json"],
          dir,
        ),
      ).rejects.toThrow(/src\/any\.ts/);
    },
    10 * MINUTES,
  );

  it(
    "an app on zod 3 with @nerva/ai-sdk and @nerva/otel",
    async () => {
      const dir = await install("zod3");
      const result = JSON.parse(await run(process.execPath, ["main.mjs"], dir));
      expect(result).toEqual({
        appZodIsV3: true,
        v4Schema: true,
        output: "hello from zod 3",
        spans: expect.arrayContaining(["invoke_agent greeter"]),
        refused: "INVALID_INPUT",
        sdkNode: { code: "MISSING_DEPENDENCY", package: "@opentelemetry/sdk-node" },
      });
      // createOtelSink alone pulls no @opentelemetry/sdk-node (~50 MB with what it loads).
      expect(existsSync(join(dir, "node_modules/@opentelemetry/sdk-node"))).toBe(false);
    },
    10 * MINUTES,
  );
});

describe("publishing", () => {
  it(
    "`pnpm publish -r --dry-run` would publish every package",
    async () => {
      const out = await run("pnpm", ["publish", "-r", "--dry-run", "--no-git-checks"], root);
      const published = [...out.matchAll(/^\+ (@nerva\/[a-z-]+)@\d+\.\d+\.\d+/gm)].map((m) => m[1]);
      expect(published.sort()).toEqual(PACKAGES.map((p) => `@nerva/${p}`).sort());
    },
    5 * MINUTES,
  );
});
