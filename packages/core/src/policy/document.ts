import { readFile } from "node:fs/promises";
import { z } from "zod";
import { ErrorCode, NervaError } from "../errors.js";
import { requireOptional } from "../sqlite/driver.js";

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

interface YamlModule {
  parse(text: string, options?: { prettyErrors?: boolean }): unknown;
}

/**
 * Parses policy text (`yaml` or `json`) and validates it. Syntax errors name `source` and the
 * line; YAML needs the optional package `yaml` (MISSING_DEPENDENCY otherwise).
 *
 * @example
 * const doc = parsePolicyText("version: 1\nrules: []\n", { format: "yaml", source: "inline" });
 */
export function parsePolicyText(
  text: string,
  options: { format: "yaml" | "json"; source?: string },
): PolicyDocument {
  const source = options.source ?? "policy";
  let value: unknown;
  try {
    if (options.format === "json") {
      value = JSON.parse(text);
    } else {
      const yaml = requireOptional<YamlModule>("yaml", "Loading a YAML policy", '"yaml@^2"');
      value = yaml.parse(text, { prettyErrors: true });
    }
  } catch (err) {
    if (err instanceof NervaError) throw err;
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
