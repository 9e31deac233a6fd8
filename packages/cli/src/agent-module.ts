import { existsSync } from "node:fs";
import { isAbsolute, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { ErrorCode, NervaError } from "@nerva/core";
import { shellWord } from "./flags.js";

/**
 * Imports the agent module at `path` (registering tsx's loader for a TypeScript one, when tsx
 * is installed) so that a missing file or a module that fails to load is one clear error.
 * `AgentRunner.load(path)` then imports the same URL: the module is evaluated once.
 */
export async function importAgentModule(path: string): Promise<Record<string, unknown>> {
  if (!existsSync(path)) {
    throw new NervaError(
      ErrorCode.INVALID_INPUT,
      `The agent module ${shellWord(path)} does not exist: pass the path of a module that exports { graph }.`,
    );
  }
  if (/\.[cm]?tsx?$/.test(path)) {
    try {
      const api = (await import("tsx/esm/api")) as { register: () => unknown };
      api.register();
    } catch {
      // Without tsx the import below fails with Node's own message naming the extension.
    }
  }
  const url = pathToFileURL(isAbsolute(path) ? path : resolve(process.cwd(), path)).href;
  try {
    return (await import(url)) as Record<string, unknown>;
  } catch (err) {
    const why = (err as Error)?.message?.split("\n")[0] ?? String(err);
    throw new NervaError(
      ErrorCode.INVALID_INPUT,
      `The agent module ${shellWord(path)} failed to load: ${why}`,
    );
  }
}

/** The SQLite file a module's own `config` names, if any. */
export function configuredFile(mod: Record<string, unknown>): string | null {
  const d = mod.default as { config?: unknown } | undefined;
  const store = ((mod.config ?? d?.config) as { store?: unknown } | undefined)?.store;
  const file = (store as { sqlite?: unknown } | undefined)?.sqlite;
  return typeof file === "string" ? file : null;
}

/** Refuses a Redis URL where a command keeps its runs in a SQLite file. */
export function sqliteOnly(command: string, store: string | boolean | undefined): void {
  if (typeof store === "string" && /^rediss?:\/\//.test(store)) {
    throw new NervaError(
      ErrorCode.INVALID_INPUT,
      `nerva ${command} keeps its runs in a SQLite file (--store runs.db); a queue on Redis is inspected and steered with nerva runs --store ${store}.`,
    );
  }
}
