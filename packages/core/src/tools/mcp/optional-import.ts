import { ErrorCode, NervaError } from "../../errors.js";

/** True when `err` says that `packageName` (or a file inside it) could not be found. */
function isMissing(err: unknown, packageName: string): boolean {
  if (typeof err !== "object" || err === null) return false;
  const code = (err as { code?: unknown }).code;
  const message = String((err as { message?: unknown }).message ?? "");
  return (
    (code === "ERR_MODULE_NOT_FOUND" || code === "MODULE_NOT_FOUND") &&
    message.includes(packageName)
  );
}

/**
 * Loads an optional dependency on first use. A missing package becomes `NervaError`
 * MISSING_DEPENDENCY naming the package and how to install it; any other load failure is
 * rethrown as is.
 */
export async function importOptional<T>(
  specifier: string,
  packageName: string,
  feature: string,
): Promise<T> {
  try {
    return (await import(specifier)) as T;
  } catch (err) {
    if (!isMissing(err, packageName)) throw err;
    throw new NervaError(
      ErrorCode.MISSING_DEPENDENCY,
      `${feature} needs the optional package "${packageName}", which is not installed. Install it next to @nerva/core: pnpm add ${packageName} (or npm install ${packageName}).`,
      { cause: err, details: { package: packageName } },
    );
  }
}
