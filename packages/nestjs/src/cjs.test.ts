import { spawn, execFile, type ChildProcess } from "node:child_process";
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
} from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";

/**
 * A NestJS app compiled by tsc to CommonJS (`module: commonjs`, decorator metadata, constructor
 * injection by type) must load the CommonJS builds of @nerva/nestjs and @nerva/core. This runs
 * against the built packages (dist/), as an app would.
 */

const here = dirname(fileURLToPath(import.meta.url));
const nestjsDir = resolve(here, "..");
const coreDir = resolve(nestjsDir, "../core");
const fixture = resolve(nestjsDir, "test/fixtures/cjs-app");
const workspace = resolve(nestjsDir, "../..");

/** Newest modification time (ms) of the files under `dir` matching `filter`. */
function newest(dir: string, filter: (name: string) => boolean): number {
  let max = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    // Dot folders hold scratch files of other tests (docs/nestjs.test.ts), not sources.
    if (entry.name.startsWith(".")) continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) max = Math.max(max, newest(path, filter));
    else if (filter(entry.name)) max = Math.max(max, statSync(path).mtimeMs);
  }
  return max;
}

function assertBuilt(): void {
  const missing = [
    join(coreDir, "dist/commonjs/index.js"),
    join(coreDir, "dist/commonjs/http/index.js"),
    join(nestjsDir, "dist/commonjs/index.js"),
  ].filter((p) => !existsSync(p));
  if (missing.length > 0) {
    throw new Error(
      `This test runs the built packages; missing ${missing.join(", ")}. Run \`pnpm build\` first.`,
    );
  }
  const isSource = (n: string) => n.endsWith(".ts") && !n.endsWith(".test.ts");
  const stale = [
    [join(nestjsDir, "src"), join(nestjsDir, "dist")],
    [join(coreDir, "src/http"), join(coreDir, "dist/commonjs/http")],
  ].filter(([src, dist]) => newest(src as string, isSource) > newest(dist as string, () => true));
  if (stale.length > 0) {
    throw new Error(
      `dist is older than src for ${stale.map(([s]) => s).join(", ")}. Run \`pnpm build\` first.`,
    );
  }
}

/** node_modules for the temp app: links to the workspace packages and Nest's own install. */
function linkModules(root: string): void {
  const nm = join(root, "node_modules");
  const link = (name: string, target: string) => {
    mkdirSync(dirname(join(nm, name)), { recursive: true });
    symlinkSync(realpathSync(target), join(nm, name), "dir");
  };
  // Direct dependencies of @nerva/nestjs are linked in its node_modules (pnpm layout).
  const pkgDir = (name: string) => join(nestjsDir, "node_modules", name);
  link("@nerva/nestjs", nestjsDir);
  link("@nerva/core", coreDir);
  for (const name of [
    "@nestjs/common",
    "@nestjs/core",
    "@nestjs/platform-express",
    "reflect-metadata",
    "rxjs",
  ]) {
    link(name, pkgDir(name));
  }
  link("@types/node", join(workspace, "node_modules/@types/node"));
}

let temp: string | null = null;
let child: ChildProcess | null = null;
afterAll(() => {
  child?.kill("SIGKILL");
  if (temp !== null) rmSync(temp, { recursive: true, force: true });
});

describe("@nerva/nestjs in a NestJS app compiled to CommonJS", () => {
  it(
    "compiles with tsc (module: commonjs), starts with node and answers over HTTP",
    { timeout: 90_000 },
    async () => {
      assertBuilt();
      temp = mkdtempSync(join(tmpdir(), "nerva-cjs-"));
      cpSync(fixture, temp, {
        recursive: true,
        filter: (src) => !src.includes("node_modules") && !src.endsWith("/dist"),
      });
      linkModules(temp);
      const tsc = createRequire(join(workspace, "package.json")).resolve("typescript/bin/tsc");
      await promisify(execFile)(process.execPath, [tsc, "-p", join(temp, "tsconfig.json")], {
        cwd: temp,
      });
      const main = join(temp, "dist/main.js");
      expect(existsSync(main)).toBe(true);

      const proc = spawn(process.execPath, [main], {
        cwd: temp,
        env: { PATH: process.env.PATH, PORT: "0" },
        stdio: ["ignore", "pipe", "pipe"],
      });
      child = proc;
      let stderr = "";
      proc.stderr?.on("data", (d: Buffer) => (stderr += d.toString()));
      const url = await new Promise<string>((resolveUrl, reject) => {
        let out = "";
        proc.stdout?.on("data", (d: Buffer) => {
          out += d.toString();
          const match = /listening (http:\/\/\S+)/.exec(out);
          if (match?.[1] !== undefined) resolveUrl(match[1]);
        });
        proc.once("exit", (code) => reject(new Error(`app exited with ${code}: ${stderr}`)));
      });

      const res = await fetch(`${url}/hello`);
      expect(res.status).toBe(200);
      const body = (await res.json()) as Record<string, string>;
      expect(body).toMatchObject({
        greeting: "hello anonymous",
        output: "echo: ping",
        moduleSystem: "commonjs",
      });
      expect(body.requestId).toBe(res.headers.get("x-request-id"));
      expect(stderr).toBe("");

      proc.kill("SIGTERM");
      await new Promise((r) => proc.once("exit", r));
      child = null;
    },
  );
});
