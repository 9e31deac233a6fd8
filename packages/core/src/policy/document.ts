import { readFile } from "node:fs/promises";
import { z } from "zod";
import { ErrorCode, NervaError } from "../errors.js";
import { DEFAULT_JSON_LIMITS, jsonLimitViolation } from "../internal/json-limits.js";
import { requireOptional } from "../internal/optional-dependency.js";

const name = z.string().min(1).max(128);
const names = z.array(z.string().min(1).max(256)).min(1);
const roles = z.array(z.string().min(1).max(256));
const kind = z.enum(["agent", "tool", "any"]);
const seconds = z.number().positive().finite();

const RuleSchema = z
  .object({
    name,
    effect: z.enum(["allow", "deny"]),
    kind: kind.default("any"),
    /** Glob patterns (`*` matches any run of characters) of agent or tool names. */
    names: names.default(["*"]),
    /** The rule applies only to contexts holding one of these roles. */
    roles: roles.optional(),
    /** The rule does not apply to contexts holding one of these roles. */
    unlessRoles: roles.optional(),
    reason: z.string().max(500).optional(),
  })
  .strict();

const ApprovalRuleSchema = z
  .object({
    name,
    kind: kind.default("any"),
    names,
    /** Who may decide. Required: an approval anyone could grant would not gate anything. */
    approverRoles: roles.min(1),
    /** Contexts holding one of these roles skip the gate. */
    exemptRoles: roles.default([]),
    allowSelfApproval: z.boolean().default(false),
    ttlSeconds: seconds.default(86_400),
    reason: z.string().max(500).optional(),
  })
  .strict();

const RateLimitSchema = z
  .object({
    name,
    /** `user`: requests per user (before routing). `handler`: invocations of a handler by anyone. `user_handler`: per user and handler. */
    per: z.enum(["user", "handler", "user_handler"]),
    limit: z.number().int().min(1),
    windowSeconds: seconds,
    /** For `handler` and `user_handler`: which handlers (globs); default all. */
    names: names.default(["*"]),
  })
  .strict();

const BudgetSchema = z
  .object({
    name,
    /** `request`: the usage of one request tree. `user`: usage charged to the user over `windowSeconds`. */
    per: z.enum(["request", "user"]),
    windowSeconds: seconds.default(86_400),
    maxTokens: z.number().int().min(1).optional(),
    maxCostUsd: z.number().positive().finite().optional(),
    /**
     * `per: user`: tokens a request holds against the budget from its admission until it is
     * charged, so concurrent requests cannot all pass a check made before any of them is
     * charged. Default: a tenth of `maxTokens` (rounded up); 0 turns holds off.
     */
    reserveTokens: z.number().int().min(0).optional(),
    /** `per: user`: the same for cost. Default: a tenth of `maxCostUsd`; 0 turns holds off. */
    reserveCostUsd: z.number().min(0).finite().optional(),
  })
  .strict()
  .refine((b) => b.maxTokens !== undefined || b.maxCostUsd !== undefined, {
    message: "needs maxTokens or maxCostUsd",
  })
  .refine(
    (b) => b.per === "user" || (b.reserveTokens === undefined && b.reserveCostUsd === undefined),
    {
      path: ["per"],
      message: "reserveTokens and reserveCostUsd apply to per: user budgets only",
    },
  )
  .refine((b) => b.reserveTokens === undefined || b.maxTokens !== undefined, {
    path: ["reserveTokens"],
    message: "needs maxTokens",
  })
  .refine((b) => b.reserveCostUsd === undefined || b.maxCostUsd !== undefined, {
    path: ["reserveCostUsd"],
    message: "needs maxCostUsd",
  });

/** The schema of a policy document (YAML or JSON). */
export const PolicyDocumentSchema = z
  .object({
    version: z.literal(1),
    /** Effect when no rule matches an agent or tool (permissions are checked first regardless). */
    default: z.enum(["allow", "deny"]).default("allow"),
    rules: z.array(RuleSchema).default([]),
    approvals: z.array(ApprovalRuleSchema).default([]),
    rateLimits: z.array(RateLimitSchema).default([]),
    budgets: z.array(BudgetSchema).default([]),
  })
  .strict()
  .superRefine((doc, ctx) => {
    const seen = new Set<string>();
    for (const section of ["rules", "approvals", "rateLimits", "budgets"] as const) {
      doc[section].forEach((entry, i) => {
        if (seen.has(entry.name)) {
          ctx.addIssue({
            code: "custom",
            path: [section, i, "name"],
            message: `duplicate name "${entry.name}"; names must be unique across the document`,
          });
        }
        seen.add(entry.name);
      });
    }
  });
/** A policy document as written (defaults optional). */
export type PolicyDocumentInit = z.input<typeof PolicyDocumentSchema>;
/** A validated policy document. */
export type PolicyDocument = z.output<typeof PolicyDocumentSchema>;

/** `rules[0].names[2]` from a zod path. */
function formatPath(path: readonly PropertyKey[]): string {
  let out = "";
  for (const part of path) {
    out += typeof part === "number" ? `[${part}]` : `${out === "" ? "" : "."}${String(part)}`;
  }
  return out === "" ? "(document root)" : out;
}

/**
 * Validates a policy document; throws NervaError INVALID_OPTIONS naming `source` (a file name or
 * a label) and the path of every bad field inside it.
 *
 * @example
 * const doc = parsePolicyDocument({ version: 1, rateLimits: [{ name: "u", per: "user", limit: 10, windowSeconds: 60 }] });
 */
export function parsePolicyDocument(value: unknown, source = "policy"): PolicyDocument {
  // Validation recurses: refuse what could overflow the stack there, without recursing here.
  const violation = jsonLimitViolation(value, DEFAULT_JSON_LIMITS);
  if (violation !== null) throw tooComplex(source, violation);
  const parsed = PolicyDocumentSchema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issues = parsed.error.issues.map((issue) => ({
    path: formatPath(issue.path),
    message: issue.message.replace(/^Invalid input: /, ""),
  }));
  const detail = issues.map((i) => `${i.path}: ${i.message}`).join("; ");
  throw new NervaError(
    ErrorCode.INVALID_OPTIONS,
    `Invalid policy in ${source}: ${detail}. See docs/policy.md for the document format.`,
    { cause: parsed.error, issues, details: { source } },
  );
}

/** Largest policy text accepted, in UTF-16 code units (about 1 MiB of ASCII). */
export const MAX_POLICY_TEXT_LENGTH = 1024 * 1024;
/** Aliases a YAML policy may expand (the yaml package's `maxAliasCount`; bounds "billion laughs"). */
const MAX_YAML_ALIASES = 100;

function tooComplex(source: string, violation: string, line?: number): NervaError {
  return new NervaError(
    ErrorCode.INVALID_OPTIONS,
    `Invalid policy in ${source}${line === undefined ? "" : ` (line ${line})`}: ${violation}. A policy document nests at most ${DEFAULT_JSON_LIMITS.maxDepth} levels and holds at most ${DEFAULT_JSON_LIMITS.maxNodes} values; see docs/policy.md for the format.`,
    { issues: [{ path: "(document root)", message: violation }], details: { source } },
  );
}

/** The parts of a yaml CST token (`yaml`'s `CST.Token`) the depth walk reads. */
interface CstToken {
  readonly type: string;
  readonly offset: number;
  readonly value?: CstToken;
  readonly items?: readonly { readonly key?: CstToken | null; readonly value?: CstToken }[];
}

interface YamlModule {
  parse(text: string, options?: { prettyErrors?: boolean; maxAliasCount?: number }): unknown;
  Parser: new () => { parse(text: string): Iterable<CstToken> };
}

/**
 * The offset of the first collection nested deeper than `maxDepth` in YAML `text`, or `null`.
 * yaml's own composer recurses once per level; its CST parser does not, and neither does this
 * walk over the CST, so deep nesting is refused before anything can overflow the stack.
 */
function yamlTooDeepAt(yaml: YamlModule, text: string, maxDepth: number): number | null {
  const tokens: CstToken[] = [];
  const depths: number[] = [];
  for (const token of new yaml.Parser().parse(text)) {
    if (token.type === "document" && token.value !== undefined) {
      tokens.push(token.value);
      depths.push(0);
    }
  }
  while (tokens.length > 0) {
    const token = tokens.pop()!;
    const depth = depths.pop()!;
    if (token.items === undefined) continue;
    if (depth + 1 > maxDepth) return token.offset;
    for (const item of token.items) {
      if (item.key !== undefined && item.key !== null) {
        tokens.push(item.key);
        depths.push(depth + 1);
      }
      if (item.value !== undefined) {
        tokens.push(item.value);
        depths.push(depth + 1);
      }
    }
  }
  return null;
}

function lineAt(text: string, offset: number): number {
  let line = 1;
  for (let i = text.indexOf("\n"); i !== -1 && i < offset; i = text.indexOf("\n", i + 1)) line++;
  return line;
}

/**
 * Parses policy text (`yaml` or `json`) and validates it. Syntax errors name `source` and the
 * line; YAML needs the optional package `yaml` (MISSING_DEPENDENCY otherwise). Bounded before
 * any recursive work: at most {@link MAX_POLICY_TEXT_LENGTH} characters, 64 levels of nesting,
 * a million values (aliases counted each time they are used) and 100 alias expansions.
 *
 * @example
 * const doc = parsePolicyText("version: 1\nrules: []\n", { format: "yaml", source: "inline" });
 */
export function parsePolicyText(
  text: string,
  options: { format: "yaml" | "json"; source?: string },
): PolicyDocument {
  const source = options.source ?? "policy";
  if (text.length > MAX_POLICY_TEXT_LENGTH) {
    throw new NervaError(
      ErrorCode.INVALID_OPTIONS,
      `Invalid policy in ${source}: ${text.length} characters, over the limit of ${MAX_POLICY_TEXT_LENGTH}; a policy document is configuration, keep it small (see docs/policy.md).`,
      { details: { source } },
    );
  }
  let value: unknown;
  try {
    if (options.format === "json") {
      value = JSON.parse(text);
    } else {
      const yaml = requireOptional<YamlModule>("yaml", "Loading a YAML policy", "yaml@^2");
      const deepAt = yamlTooDeepAt(yaml, text, DEFAULT_JSON_LIMITS.maxDepth);
      if (deepAt !== null) {
        throw tooComplex(
          source,
          `nested deeper than ${DEFAULT_JSON_LIMITS.maxDepth} levels`,
          lineAt(text, deepAt),
        );
      }
      value = yaml.parse(text, { prettyErrors: true, maxAliasCount: MAX_YAML_ALIASES });
    }
  } catch (err) {
    if (err instanceof NervaError) throw err;
    if (err instanceof ReferenceError && err.message.startsWith("Excessive alias count")) {
      throw tooComplex(
        source,
        `its aliases expand too far (more than the ${MAX_YAML_ALIASES} alias uses allowed, counted with what each alias contains)`,
      );
    }
    const line = (err as { linePos?: { line: number }[] }).linePos?.[0]?.line;
    throw new NervaError(
      ErrorCode.INVALID_OPTIONS,
      `Invalid policy in ${source}${line === undefined ? "" : ` (line ${line})`}: not valid ${options.format.toUpperCase()}: ${err instanceof Error ? err.message.split("\n")[0] : String(err)}`,
      { cause: err, details: { source } },
    );
  }
  return parsePolicyDocument(value, source);
}

/**
 * Reads and validates a policy file; `.json` is JSON, `.yaml`/`.yml` is YAML. Errors name the file.
 *
 * @example
 * const doc = await loadPolicyFile("./policy.yaml");
 */
export async function loadPolicyFile(path: string): Promise<PolicyDocument> {
  const format = /\.json$/i.test(path) ? "json" : /\.ya?ml$/i.test(path) ? "yaml" : null;
  if (format === null) {
    throw new NervaError(
      ErrorCode.INVALID_OPTIONS,
      `Invalid policy file "${path}": the name must end in .yaml, .yml or .json.`,
      { details: { source: path } },
    );
  }
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (err) {
    throw new NervaError(
      ErrorCode.INVALID_OPTIONS,
      `Cannot read policy file "${path}": ${err instanceof Error ? err.message : String(err)}`,
      { cause: err, details: { source: path } },
    );
  }
  return parsePolicyText(text, { format, source: path });
}
