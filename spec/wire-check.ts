// What the spec tests share: strict ajv validators compiled from the files in spec/, and the
// assertion that a value is valid JSON for a wire type under both its spec file and zod.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { ErrorCode, NervaError } from "@nerva/core";
import { wireSchemas } from "@nerva/core/wire";
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import ajvFormats from "ajv-formats";
import { expect } from "vitest";

// ajv-formats is CommonJS: an ES module's default import is its `module.exports`, whose `default`
// property is the plugin (TypeScript types the default import the same way under NodeNext).
const addFormats = ajvFormats.default;

export const SPEC_DIR = dirname(fileURLToPath(import.meta.url));
export type WireName = keyof typeof wireSchemas;

export const readJson = (path: string): unknown => JSON.parse(readFileSync(path, "utf8"));

/** A strict ajv with formats enforced, as a careful implementation in another language would be. */
export function newAjv(): Ajv2020 {
  const ajv = new Ajv2020({ strict: true, allowUnionTypes: true, allErrors: true });
  addFormats(ajv);
  return ajv;
}

export interface SpecFile {
  $id: string;
  $defs?: Record<string, unknown>;
  [keyword: string]: unknown;
}
export const schemaOf = (name: string) => readJson(join(SPEC_DIR, `${name}.json`)) as SpecFile;

/** One validator per spec file, each compiled by its own ajv: every file stands alone. */
const validators = new Map<string, ValidateFunction>();
export function validator(name: string): ValidateFunction {
  let v = validators.get(name);
  if (v === undefined) {
    v = newAjv().compile(schemaOf(name));
    validators.set(name, v);
  }
  return v;
}

/** Asserts `value` is valid JSON for wire type `name` under both the spec file and zod. */
export function expectWireValid(name: WireName, value: unknown): void {
  const json: unknown = JSON.parse(JSON.stringify(value));
  const validate = validator(name);
  expect(validate(json), `${name}: ${JSON.stringify(validate.errors)}`).toBe(true);
  const parsed = wireSchemas[name].safeParse(json);
  expect(parsed.success, `${name}: ${parsed.error?.message}`).toBe(true);
}

/** JSON.stringify then parse: what actually crosses a boundary. */
export const overTheWire = (value: unknown): unknown => JSON.parse(JSON.stringify(value));

/** Asserts `fn` throws a NervaError INVALID_INPUT whose message matches `field`. */
export function expectInvalid(fn: () => unknown, field: RegExp): void {
  let thrown: unknown;
  try {
    fn();
  } catch (err) {
    thrown = err;
  }
  expect(thrown).toBeInstanceOf(NervaError);
  expect((thrown as NervaError).code).toBe(ErrorCode.INVALID_INPUT);
  expect((thrown as NervaError).message).toMatch(field);
}
