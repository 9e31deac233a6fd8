import { ErrorCode, NervaError } from "@nerva/core";

/** The part of the `ai` package this adapter calls at run time. */
export type AiModule = typeof import("ai");

const INSTALL = "ai@^6.0.326";

let loaded: AiModule | null = null;
let loading: Promise<AiModule> | null = null;

/** True when `err` says that `name` itself (not something it imports) could not be found. */
function isMissing(err: unknown, name: string): boolean {
  if (typeof err !== "object" || err === null) return false;
  const code = (err as { code?: unknown }).code;
  const message = String((err as { message?: unknown }).message ?? "");
  return (
    (code === "ERR_MODULE_NOT_FOUND" || code === "MODULE_NOT_FOUND") &&
    message.includes(`'${name}'`)
  );
}

/** The MISSING_DEPENDENCY error for the `ai` package (same shape as `@nerva/core`'s loaders). */
export function missingAi(cause: unknown): NervaError<"MISSING_DEPENDENCY"> {
  return new NervaError(
    ErrorCode.MISSING_DEPENDENCY,
    `@nerva/ai-sdk needs the package "ai" (the Vercel AI SDK, version 6), which is not installed. Install it next to @nerva/ai-sdk: npm install ${INSTALL} (or pnpm add ${INSTALL}).`,
    { cause, details: { package: "ai", install: `npm install ${INSTALL}` } },
  );
}

/**
 * Imports `ai` with `load`, turning "package not found" into a `NervaError` MISSING_DEPENDENCY
 * naming it (any other failure is rethrown as it is).
 */
export async function importAi(load: () => Promise<AiModule>): Promise<AiModule> {
  try {
    return await load();
  } catch (err) {
    throw isMissing(err, "ai") ? missingAi(err) : err;
  }
}

/**
 * Loads `ai` on first use, so that a missing peer dependency is a `NervaError`
 * MISSING_DEPENDENCY naming it instead of a module-resolution crash at import time.
 */
export function loadAi(): Promise<AiModule> {
  if (loaded !== null) return Promise.resolve(loaded);
  loading ??= importAi(() => import("ai")).then(
    (mod) => (loaded = mod),
    (err: unknown) => {
      loading = null;
      throw err;
    },
  );
  return loading;
}

/** The loaded module, or `null` before the first {@link loadAi} resolved (the hot path skips an await). */
export function aiIfLoaded(): AiModule | null {
  return loaded;
}
