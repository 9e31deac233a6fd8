import { readdirSync, statSync } from "node:fs";
import { extname, join } from "node:path";
import { HandlerNameSchema } from "../options.js";

/** How a handler file runs: in the warm Node worker pool, or as a process per call. */
export const HandlerKind = { MODULE: "module", EXECUTABLE: "executable" } as const;
export type HandlerKind = (typeof HandlerKind)[keyof typeof HandlerKind];

/** One handler found in `handlerDir`. */
export interface HandlerFile {
  readonly name: string;
  readonly kind: HandlerKind;
  /** Absolute path. */
  readonly file: string;
}

/** What a scan of `handlerDir` found. */
export interface HandlerScan {
  readonly handlers: ReadonlyMap<string, HandlerFile>;
  /** Names claimed by more than one file (e.g. `echo` and `echo.py`), with the files. */
  readonly conflicts: ReadonlyMap<string, readonly string[]>;
}

const MODULE_EXTENSIONS = new Set([".js", ".mjs", ".cjs"]);
/** Files that are data, docs or sources next to handlers, never handlers themselves. */
const IGNORED_EXTENSIONS = new Set([
  ".json",
  ".md",
  ".txt",
  ".map",
  ".ts",
  ".mts",
  ".cts",
  ".yaml",
  ".yml",
  ".toml",
  ".lock",
  ".log",
  ".pyc",
  ".cfg",
  ".ini",
]);

/**
 * Finds the handlers in `dir` (not in subdirectories). The lookup rule:
 * - the handler name is the file name without its last extension (`my_agent.py` → `my_agent`,
 *   `my_agent` → `my_agent`); names must match the handler-name rule, others are ignored;
 * - `.js`, `.mjs`, `.cjs` files are module handlers (run in the warm worker pool);
 * - data and doc files (`.json`, `.md`, `.txt`, `.ts`, `.yaml`...) are ignored, as are hidden
 *   files, files starting with `_` and directories;
 * - every other file is an executable handler, whether or not it is executable yet (a file that
 *   is not executable fails at invoke time with an ERROR saying so);
 * - two files claiming one name (`echo` and `echo.sh`) are a conflict.
 */
export function scanHandlerDir(dir: string): HandlerScan {
  const handlers = new Map<string, HandlerFile>();
  const claims = new Map<string, string[]>();
  for (const entry of readdirSync(dir)) {
    if (entry.startsWith(".") || entry.startsWith("_")) continue;
    const ext = extname(entry);
    const lower = ext.toLowerCase();
    if (IGNORED_EXTENSIONS.has(lower)) continue;
    const name = ext === "" ? entry : entry.slice(0, -ext.length);
    if (!HandlerNameSchema.safeParse(name).success) continue;
    const file = join(dir, entry);
    try {
      if (!statSync(file).isFile()) continue;
    } catch {
      continue; // a dangling symlink or a file removed while scanning
    }
    const kind = MODULE_EXTENSIONS.has(lower) ? HandlerKind.MODULE : HandlerKind.EXECUTABLE;
    handlers.set(name, { name, kind, file });
    const files = claims.get(name);
    if (files === undefined) claims.set(name, [file]);
    else files.push(file);
  }
  const conflicts = new Map<string, readonly string[]>();
  for (const [name, files] of claims) {
    if (files.length > 1) {
      conflicts.set(name, files.sort());
      handlers.delete(name);
    }
  }
  return { handlers, conflicts };
}
