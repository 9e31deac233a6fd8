// Configured secrets, masked by their own values wherever text from outside (a child's stderr, an
// MCP server's errors and logs) is quoted: no pattern of known key shapes is needed to find them.

/** What replaces a secret in quoted text. */
export const REDACTED = "[redacted]";

/** Shortest value masked: shorter ones would mask ordinary words. */
const MIN_SECRET_LENGTH = 8;

// Host variables whose names say they hold a credential.
const SECRET_NAME = /KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH|PRIVATE|COOKIE|SESSION/i;

// Runs of key-like characters; one of 8 or more that is part of a secret is a fragment of it.
const TOKEN = /[A-Za-z0-9._~+/=-]{8,}/g;

/**
 * The values to mask of an environment handed to a child: every value the app set itself
 * (`set`: it configured them for this child, often credentials), and the values of variables
 * passed from the host (`passed`) whose names say they are credentials (`*_API_KEY`, `*TOKEN*`...);
 * values shorter than 8 characters are never masked.
 */
export function secretValues(
  set: Readonly<Record<string, string>>,
  passed: Readonly<Record<string, string>> = {},
): string[] {
  const out = new Set<string>();
  for (const value of Object.values(set)) if (value.length >= MIN_SECRET_LENGTH) out.add(value);
  for (const [name, value] of Object.entries(passed)) {
    if (value.length >= MIN_SECRET_LENGTH && SECRET_NAME.test(name)) out.add(value);
  }
  return [...out];
}

/** `text` with each of `secrets`, and any run of 8+ key characters that is part of one, masked. */
export function maskSecrets(text: string, secrets: readonly string[]): string {
  if (secrets.length === 0 || text === "") return text;
  let out = text;
  for (const s of secrets) if (out.includes(s)) out = out.split(s).join(REDACTED);
  return out.replace(TOKEN, (t) => (secrets.some((s) => s.includes(t)) ? REDACTED : t));
}
