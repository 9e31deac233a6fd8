// This module's URL. The CommonJS build has no import.meta: tshy builds module-url-cjs.cts in
// this file's place there (a "-cjs.cts" file replaces its ".ts" namesake in that format only).
/** URL of this file: src/internal/module-url.ts, or dist/<esm|commonjs>/internal/module-url.js. */
// tshy compiles this file in the CommonJS build too (then puts module-url-cjs.cts in its place),
// where import.meta is an error: hence the ts-ignore (an expect-error would fail the ESM build).
// eslint-disable-next-line @typescript-eslint/ban-ts-comment
// @ts-ignore
export const moduleUrl: string = import.meta.url;
