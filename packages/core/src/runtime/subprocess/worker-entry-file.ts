import { createHash } from "node:crypto";
import { existsSync, renameSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { ErrorCode, NervaError } from "../../errors.js";
import { moduleUrl } from "../../internal/module-url.js";
import { fromSource } from "../../internal/package-files.js";

let entry: { file: string; execArgv: string[] } | null = null;

interface Esbuild {
  buildSync(options: Record<string, unknown>): { outputFiles?: { contents: Uint8Array }[] };
}

/**
 * Where the worker entry script is and how to start it. Built code runs `worker-entry.js` with
 * plain node. Running from the TypeScript sources (tests, development), the entry is bundled once
 * with esbuild into a content-addressed file in the temp directory (a worker then starts as fast
 * as a built one); without esbuild it falls back to the much slower tsx loader.
 */
export function workerEntry(): { file: string; execArgv: string[] } {
  if (entry !== null) return entry;
  const dir = fileURLToPath(new URL("../runtime/subprocess/", moduleUrl));
  if (!fromSource) {
    entry = { file: join(dir, "worker-entry.js"), execArgv: [] };
    return entry;
  }
  const source = join(dir, "worker-entry.ts");
  const here = join(dir, "worker-entry-file.ts");
  const require = createRequire(here);
  let tsx: string | null;
  try {
    tsx = require.resolve("tsx");
  } catch {
    tsx = null;
  }
  let esbuild: Esbuild | null = null;
  for (const from of [here, tsx]) {
    if (from === null || esbuild !== null) continue;
    try {
      esbuild = createRequire(from)("esbuild") as Esbuild;
    } catch {
      esbuild = null;
    }
  }
  if (esbuild !== null) {
    const out = esbuild.buildSync({
      entryPoints: [source],
      bundle: true,
      platform: "node",
      format: "esm",
      target: "node20",
      write: false,
      logLevel: "silent",
    });
    const code = out.outputFiles?.[0]?.contents;
    if (code !== undefined) {
      const hash = createHash("sha256").update(code).digest("hex").slice(0, 16);
      const file = join(tmpdir(), `nerva-worker-${hash}.mjs`);
      if (!existsSync(file)) {
        const partial = `${file}.${process.pid}.tmp`;
        writeFileSync(partial, code);
        renameSync(partial, file);
      }
      entry = { file, execArgv: [] };
      return entry;
    }
  }
  if (tsx === null) {
    throw new NervaError(
      ErrorCode.MISSING_DEPENDENCY,
      "SubprocessRuntime is running from TypeScript sources and needs esbuild or tsx to start its workers: install one, or use the built package.",
      { details: { package: "tsx", install: "npm install --save-dev tsx" } },
    );
  }
  entry = { file: source, execArgv: ["--import", pathToFileURL(tsx).href] };
  return entry;
}
