// Types of scripts/generate-spec.mjs, for the TypeScript that imports it (spec/conformance.test.ts).
// The script stays plain JavaScript so `pnpm spec` runs with node alone, before any build.

/** The part of zod's namespace the generator uses (the root package does not depend on zod). */
export interface ZodJsonSchemaApi {
  toJSONSchema(
    schema: unknown,
    params: { target: "draft-2020-12"; io: "input" | "output" },
  ): Record<string, unknown>;
}

/** One spec/<Name>.json document. */
export interface SpecSchema {
  $schema: string;
  $id: string;
  title: string;
  $defs?: Record<string, Record<string, unknown>>;
  [keyword: string]: unknown;
}

/** `$id` of spec/<Name>.json: `urn:nerva:spec:<Name>`. */
export declare function idOf(name: string): string;

/** The zod that @nerva/core itself uses. */
export declare function loadZod(): Promise<ZodJsonSchemaApi>;

/** One self-contained JSON Schema (draft 2020-12) for wire type `name`, in canonical form. */
export declare function toSpecSchema(
  z: ZodJsonSchemaApi,
  name: string,
  schema: unknown,
): SpecSchema;

/**
 * Throws unless `doc` has no `$id` (or anchor) below its root and every `$ref` in it is local and
 * resolves, i.e. it compiles alone and next to the other spec files.
 */
export declare function assertSelfContained(doc: unknown): void;

/** File name (`<Name>.json`) → file content, for every wire type. */
export declare function renderAll(
  z: ZodJsonSchemaApi,
  wireSchemas: Readonly<Record<string, unknown>>,
): Map<string, string>;
