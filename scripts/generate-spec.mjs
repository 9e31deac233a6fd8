#!/usr/bin/env node
// Generates spec/<Name>.json, one JSON Schema (draft 2020-12) per wire type, from the zod schemas
// collected in `wireSchemas` of the BUILT @nerva/core/wire (run `pnpm --filter @nerva/core build` first).
//
//   node scripts/generate-spec.mjs          write spec/*.json (and delete stale extra ones)
//   node scripts/generate-spec.mjs --check  write nothing; exit 1 listing stale, missing and
//                                           extra files (CI runs this through `pnpm spec:check`)
//
// Output is byte-for-byte reproducible: keywords in a fixed order, `$defs` sorted, two-space
// indentation and a trailing newline. Each file is self-contained: types embedded in another
// (Permissions and TokenUsage inside ExecContext) are copied into its `$defs`, so any JSON Schema
// validator can compile a file on its own, and only the root carries an `$id`, so all the files
// can also be loaded into one validator together (checked by `assertSelfContained`).
import { readFile, readdir, unlink, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join, relative } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const SPEC_DIR = join(ROOT, "spec");
const CORE_PKG = join(ROOT, "packages", "core", "package.json");
/** `$id` of spec/<Name>.json. A URN names the schema without pretending it is served anywhere. */
export const idOf = (name) => `urn:nerva:spec:${name}`;

async function loadCore() {
  try {
    return await import("@nerva/core/wire");
  } catch (err) {
    throw new Error(
      `Cannot load the built @nerva/core (${err.message}). Run \`pnpm --filter @nerva/core build\` first.`,
      { cause: err },
    );
  }
}

/** The zod that @nerva/core itself uses (the root package does not depend on zod directly). */
export async function loadZod() {
  const require = createRequire(CORE_PKG);
  const pkgPath = require.resolve("zod/package.json");
  const pkg = JSON.parse(await readFile(pkgPath, "utf8"));
  const entry = pkg.exports["."];
  const esm = typeof entry.import === "string" ? entry.import : entry.import.default;
  const mod = await import(pathToFileURL(join(dirname(pkgPath), esm)).href);
  return mod.z;
}

// ---- canonical form ------------------------------------------------------------------------

/** Keyword order within one schema object; keywords not listed follow alphabetically. */
const ORDER = [
  "$schema",
  "$id",
  "$ref",
  "title",
  "description",
  "type",
  "enum",
  "const",
  "format",
  "pattern",
  "minLength",
  "maxLength",
  "minimum",
  "exclusiveMinimum",
  "maximum",
  "exclusiveMaximum",
  "multipleOf",
  "items",
  "prefixItems",
  "minItems",
  "maxItems",
  "uniqueItems",
  "properties",
  "required",
  "propertyNames",
  "patternProperties",
  "additionalProperties",
  "anyOf",
  "oneOf",
  "allOf",
  "not",
  "default",
  "examples",
];
const LAST = ["$defs"];
const SUBSCHEMA = new Set([
  "items",
  "additionalProperties",
  "propertyNames",
  "not",
  "contains",
  "if",
  "then",
  "else",
  "unevaluatedItems",
  "unevaluatedProperties",
]);
const SUBSCHEMA_LIST = new Set(["anyOf", "oneOf", "allOf", "prefixItems"]);
/** Maps of name → schema. `properties` keep declaration order (the field order of the type). */
const SUBSCHEMA_MAP = new Set(["properties", "patternProperties", "$defs"]);

function rank(key) {
  const i = ORDER.indexOf(key);
  if (i >= 0) return [0, i, key];
  if (LAST.includes(key)) return [2, LAST.indexOf(key), key];
  return [1, 0, key];
}

function compareKeys(a, b) {
  const [ga, ia, ka] = rank(a);
  const [gb, ib, kb] = rank(b);
  if (ga !== gb) return ga - gb;
  if (ia !== ib) return ia - ib;
  return ka < kb ? -1 : ka > kb ? 1 : 0;
}

/** Reorders a schema's keywords; values that are data (enum, default, ...) are kept verbatim. */
function canonical(schema) {
  if (typeof schema !== "object" || schema === null || Array.isArray(schema)) return schema;
  const out = {};
  for (const key of Object.keys(schema).sort(compareKeys)) {
    const value = schema[key];
    if (SUBSCHEMA.has(key)) out[key] = canonical(value);
    else if (SUBSCHEMA_LIST.has(key)) out[key] = value.map(canonical);
    else if (SUBSCHEMA_MAP.has(key)) {
      const names = Object.keys(value);
      if (key === "$defs") names.sort();
      out[key] = Object.fromEntries(names.map((n) => [n, canonical(value[n])]));
    } else out[key] = value;
  }
  return out;
}

/** Replaces every `{ $ref: from }` under `node` with `{ $ref: to }`. */
function retarget(node, from, to) {
  if (Array.isArray(node)) return node.map((n) => retarget(n, from, to));
  if (typeof node !== "object" || node === null) return node;
  return Object.fromEntries(
    Object.entries(node).map(([k, v]) => [
      k,
      k === "$ref" && v === from ? to : retarget(v, from, to),
    ]),
  );
}

/**
 * One self-contained JSON Schema for wire type `name`. zod emits a root `$ref` to
 * `#/$defs/<name>` because the schema carries an id; the definition is hoisted to the root so the
 * file *is* the type, and the remaining `$defs` (embedded types) get their name as a title.
 */
export function toSpecSchema(z, name, schema) {
  // io "input": the schema describes what a parser accepts, so fields with a default (e.g.
  // AgentInput.args) are optional on the wire, exactly as zod's parse treats them.
  const raw = z.toJSONSchema(schema, { target: "draft-2020-12", io: "input" });
  const defs = { ...(raw.$defs ?? {}) };
  let root;
  if (raw.$ref === `#/$defs/${name}` && defs[name] !== undefined) {
    root = defs[name];
    delete defs[name];
  } else {
    root = { ...raw };
    delete root.$ref;
    delete root.$defs;
  }
  delete root.$schema;
  delete root.id;
  delete root.$id;
  for (const [defName, def] of Object.entries(defs)) {
    // The definition of an embedded type is a copy; only the type's own file names it.
    delete def.id;
    delete def.$id;
    if (!defName.startsWith("__") && def.title === undefined) def.title = defName;
  }
  const doc = {
    $schema: "https://json-schema.org/draft/2020-12/schema",
    $id: idOf(name),
    title: name,
    ...root,
  };
  if (Object.keys(defs).length > 0) doc.$defs = defs;
  const out = canonical(retarget(doc, `#/$defs/${name}`, "#"));
  assertSelfContained(out);
  return out;
}

// ---- self-containment ----------------------------------------------------------------------

/** Resolves a local JSON pointer (`#`, `#/$defs/Span`) in `doc`; `undefined` if it dangles. */
function resolvePointer(doc, ref) {
  if (ref === "#") return doc;
  if (!ref.startsWith("#/")) return undefined;
  let node = doc;
  for (const raw of ref.slice(2).split("/")) {
    const key = decodeURIComponent(raw).replaceAll("~1", "/").replaceAll("~0", "~");
    if (typeof node !== "object" || node === null || !Object.hasOwn(node, key)) return undefined;
    node = node[key];
  }
  return node;
}

/** Calls `visit(schema, path)` on every subschema of `schema` (not on data such as `enum`). */
function eachSchema(schema, visit, path = "#") {
  if (typeof schema !== "object" || schema === null || Array.isArray(schema)) return;
  visit(schema, path);
  for (const [key, value] of Object.entries(schema)) {
    if (SUBSCHEMA.has(key)) eachSchema(value, visit, `${path}/${key}`);
    else if (SUBSCHEMA_LIST.has(key))
      value.forEach((v, i) => eachSchema(v, visit, `${path}/${key}/${i}`));
    else if (SUBSCHEMA_MAP.has(key))
      for (const [n, v] of Object.entries(value)) eachSchema(v, visit, `${path}/${key}/${n}`);
  }
}

/** Keywords that give a subschema its own identity or reach outside of the file. */
const IDENTITY = ["$id", "id", "$anchor", "$dynamicAnchor", "$dynamicRef"];

/**
 * Throws unless `doc` can be compiled on its own AND next to every other spec file in one
 * validator: the root `$id` is the only identity in the file (an embedded type such as `Span`
 * inside `ExecContext` carrying its own `$id` would clash with `Span.json` once both are
 * loaded), and every `$ref` is local and resolves.
 */
export function assertSelfContained(doc) {
  const problems = [];
  eachSchema(doc, (schema, path) => {
    for (const key of IDENTITY) {
      if (key in schema && !(key === "$id" && path === "#")) problems.push(`${path}: has ${key}`);
    }
    if ("$ref" in schema) {
      const ref = schema.$ref;
      if (typeof ref !== "string" || resolvePointer(doc, ref) === undefined)
        problems.push(`${path}: $ref ${JSON.stringify(ref)} does not resolve inside the file`);
    }
  });
  if (problems.length > 0) {
    throw new Error(
      `Schema ${doc.$id ?? "(no $id)"} is not self-contained:\n  ${problems.join("\n  ")}`,
    );
  }
}

/** File name → file content for every wire type. */
export function renderAll(z, wireSchemas) {
  const files = new Map();
  for (const name of Object.keys(wireSchemas).sort()) {
    const doc = toSpecSchema(z, name, wireSchemas[name]);
    files.set(`${name}.json`, `${JSON.stringify(doc, null, 2)}\n`);
  }
  return files;
}

async function existingSpecFiles() {
  const entries = await readdir(SPEC_DIR, { withFileTypes: true }).catch(() => []);
  return entries.filter((e) => e.isFile() && e.name.endsWith(".json")).map((e) => e.name);
}

async function main() {
  const check = process.argv.includes("--check");
  const [{ wireSchemas }, z] = await Promise.all([loadCore(), loadZod()]);
  const files = renderAll(z, wireSchemas);
  const present = await existingSpecFiles();
  const rel = (f) => relative(ROOT, join(SPEC_DIR, f));

  if (check) {
    const problems = [];
    for (const [file, content] of files) {
      if (!present.includes(file)) problems.push(`missing: ${rel(file)}`);
      else if ((await readFile(join(SPEC_DIR, file), "utf8")) !== content)
        problems.push(`stale:   ${rel(file)}`);
    }
    for (const file of present) {
      if (!files.has(file)) problems.push(`extra:   ${rel(file)} (no wire schema of that name)`);
    }
    if (problems.length > 0) {
      console.error(
        `spec/ does not match the zod schemas of @nerva/core:\n  ${problems.join("\n  ")}`,
      );
      console.error("Run `pnpm --filter @nerva/core build && pnpm spec` and commit spec/.");
      process.exitCode = 1;
      return;
    }
    console.log(`spec/ is up to date (${files.size} schemas).`);
    return;
  }

  for (const [file, content] of files) await writeFile(join(SPEC_DIR, file), content);
  for (const file of present) {
    if (!files.has(file)) {
      await unlink(join(SPEC_DIR, file));
      console.log(`removed ${rel(file)}`);
    }
  }
  console.log(`wrote ${files.size} schemas to ${relative(ROOT, SPEC_DIR)}/`);
}

// Run only as a script: the tests import toSpecSchema/renderAll from this file.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await main();
}
