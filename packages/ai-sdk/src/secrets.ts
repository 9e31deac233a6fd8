// The secrets a model is configured with, and their masking wherever provider text is quoted.
// Patterns catch keys of known shapes; a configured key is masked by its own value, whatever its
// shape, and so is any long fragment of it a provider echoes ("key starts gsk_1a2b3c4d...").

/** What replaces a secret in quoted text. */
export const REDACTED = "[redacted]";

// Keys of known shapes, for keys the adapter was not told about.
const SHAPED =
  /\b(?:sk|pk|rk|key|sess|xai)-[A-Za-z0-9_-]{8,}|\b(?:gsk|hf|ghp|gho|github_pat|sk_live|sk_test|rk_live)_[A-Za-z0-9_]{8,}|\bBearer\s+[A-Za-z0-9._~+/=-]{8,}|\bAIza[0-9A-Za-z_-]{20,}/g;

// Runs of key-like characters; one of 8 or more that is part of a secret is a fragment of it.
const TOKEN = /[A-Za-z0-9._~+/=-]{8,}/g;

/** Shortest value accepted as a secret: shorter ones would mask ordinary words. */
export const MIN_SECRET_LENGTH = 8;

// Header names whose values are credentials.
const AUTH_HEADER = /auth|api[-_]?key|token|secret|key$/i;

/**
 * `text` with every secret masked: each value of `secrets` (and the part of it after a scheme
 * such as `Bearer `), any run of 8+ key characters that is part of one, and keys of known shapes.
 */
export function maskSecrets(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const s of secrets) if (out.includes(s)) out = out.split(s).join(REDACTED);
  if (secrets.length > 0) {
    out = out.replace(TOKEN, (t) => (secrets.some((s) => s.includes(t)) ? REDACTED : t));
  }
  return out.replace(SHAPED, REDACTED);
}

function addSecret(out: Set<string>, value: string): void {
  const bare = value.replace(/^(?:Bearer|Basic|Token)\s+/i, "");
  for (const v of [value, bare]) if (v.length >= MIN_SECRET_LENGTH) out.add(v);
}

/**
 * The credentials a provider's model is configured with, as far as it shows them: the values of
 * the auth headers its `config.headers` gives (every `@ai-sdk/*` provider keeps its key there),
 * plus `extra`. Never throws; a provider whose key is missing gives none.
 */
export function configuredSecrets(model: unknown, extra: readonly string[]): string[] {
  const out = new Set<string>();
  for (const s of extra) addSecret(out, s);
  const config = (model as { config?: { headers?: unknown } } | null)?.config;
  let headers: unknown = config?.headers;
  try {
    if (typeof headers === "function") headers = (headers as () => unknown)();
  } catch {
    headers = undefined; // e.g. "API key is missing": then there is no key to leak
  }
  if (headers instanceof Promise) {
    headers.catch(() => undefined);
    headers = undefined;
  }
  if (typeof headers === "object" && headers !== null) {
    for (const [name, value] of Object.entries(headers as Record<string, unknown>)) {
      if (typeof value === "string" && AUTH_HEADER.test(name)) addSecret(out, value);
    }
  }
  return [...out];
}

/**
 * Masks `secrets` in place in every string reachable from `err` (its message, stack, response
 * body, data, headers, URL, causes), so that an error kept as a `cause` carries no key either.
 * Bounded: at most `depth` levels and 1,000 objects; frozen objects are left as they are.
 */
export function scrubSecrets(err: unknown, secrets: readonly string[], depth = 6): void {
  const seen = new Set<object>();
  const visit = (value: object, level: number): void => {
    if (seen.has(value) || seen.size >= 1_000 || level > depth) return;
    seen.add(value);
    for (const key of Object.getOwnPropertyNames(value)) {
      const d = Object.getOwnPropertyDescriptor(value, key);
      if (d === undefined || !("value" in d)) continue;
      const v: unknown = d.value;
      if (typeof v === "string") {
        const masked = maskSecrets(v, secrets);
        if (masked !== v && (d.writable || d.configurable)) {
          try {
            Object.defineProperty(value, key, { ...d, value: masked });
          } catch {
            // a frozen object: nothing to do about it
          }
        }
      } else if (typeof v === "object" && v !== null) {
        visit(v, level + 1);
      }
    }
  };
  if (typeof err === "object" && err !== null) visit(err, 0);
}
