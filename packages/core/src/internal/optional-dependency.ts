import { ErrorCode, NervaError } from "../errors.js";
import { requireHere } from "./package-files.js";

/**
 * The one loader of optional dependencies (better-sqlite3, dockerode, the MCP SDK, yaml, ...).
 * They are optional peer dependencies of @nerva/core, loaded on first use so that users who never
 * touch the feature never install them. A missing package is `NervaError` MISSING_DEPENDENCY with
 * one message shape: what needs it, its name, and the command that installs it.
 */

/** True when `err` says that `name` itself (not something it imports) could not be found. */
function isMissing(err: unknown, name: string): boolean {
  if (typeof err !== "object" || err === null) return false;
  const code = (err as { code?: unknown }).code;
  const message = String((err as { message?: unknown }).message ?? "");
  return (code === "ERR_MODULE_NOT_FOUND" || code === "MODULE_NOT_FOUND") && message.includes(name);
}

/**
 * The MISSING_DEPENDENCY error for package `name`, needed by `feature`. `install` is what to
 * install (a version range, e.g. `better-sqlite3@^12`), the package name by default.
 *
 * @example
 * throw missingDependency("yaml", "Loading a YAML policy", "yaml@^2", err);
 */
export function missingDependency(
  name: string,
  feature: string,
  install = name,
  cause?: unknown,
): NervaError<"MISSING_DEPENDENCY"> {
  const command = `npm install ${install}`;
  return new NervaError(
    ErrorCode.MISSING_DEPENDENCY,
    `${feature} needs the optional package "${name}", which is not installed. Install it next to @nerva/core: ${command} (or pnpm add ${install}).`,
    { cause, details: { package: name, install: command } },
  );
}

/**
 * Loads a CommonJS optional package synchronously (native addons such as better-sqlite3).
 *
 * @example
 * const Database = requireOptional<DatabaseConstructor>("better-sqlite3", "SqliteRunStore", "better-sqlite3@^12");
 */
export function requireOptional<T>(name: string, feature: string, install = name): T {
  try {
    return requireHere(name) as T;
  } catch (err) {
    if (isMissing(err, name)) throw missingDependency(name, feature, install, err);
    throw err;
  }
}

/**
 * Loads an ES module optional package (or a file inside it). `load` does the `import(...)` so
 * that bundlers see a literal specifier; any failure other than the package being absent is
 * rethrown as it is.
 *
 * @example
 * const { default: Docker } = await importOptional("dockerode", () => import("dockerode"), "ContainerRuntime");
 */
export async function importOptional<T>(
  name: string,
  load: () => Promise<T>,
  feature: string,
  install = name,
): Promise<T> {
  try {
    return await load();
  } catch (err) {
    if (isMissing(err, name)) throw missingDependency(name, feature, install, err);
    throw err;
  }
}
