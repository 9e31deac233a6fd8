import type { z } from "zod";

/**
 * Every code a {@link NervaError} can carry. Callers branch on `code`, never on the message.
 * Bridges map codes to HTTP statuses (see the bridges' status tables).
 */
export const ErrorCode = {
  /** A value handed to Nerva (an AgentInput, a wire document) failed validation. */
  INVALID_INPUT: "INVALID_INPUT",
  /** Options passed to a constructor or `register` failed validation. */
  INVALID_OPTIONS: "INVALID_OPTIONS",
  /** A handler name was registered twice on the same runtime. */
  DUPLICATE_HANDLER: "DUPLICATE_HANDLER",
  /** `invokeChain` was called with no handlers. */
  EMPTY_CHAIN: "EMPTY_CHAIN",
  /** The deadline of a context passed. */
  TIMEOUT: "TIMEOUT",
  /** A context was cancelled. */
  CANCELLED: "CANCELLED",
  /** The context's permissions do not allow the requested agent or tool. */
  PERMISSION_DENIED: "PERMISSION_DENIED",
  /** A policy refused the request. */
  POLICY_DENIED: "POLICY_DENIED",
  /** The request waits for a human approval before it may run. */
  APPROVAL_PENDING: "APPROVAL_PENDING",
  /** A rate limit was hit; `details.retryAfterSeconds` says when to retry. */
  RATE_LIMITED: "RATE_LIMITED",
  /** A token or cost budget was exhausted. */
  BUDGET_EXCEEDED: "BUDGET_EXCEEDED",
  /** A circuit breaker is open; `details.retryAt` says when it probes again. */
  CIRCUIT_OPEN: "CIRCUIT_OPEN",
  /** The request carries no authenticated user where one is required. */
  UNAUTHENTICATED: "UNAUTHENTICATED",
  /** A named thing (handler, tool, run) does not exist. */
  NOT_FOUND: "NOT_FOUND",
  /** A bug or an unexpected failure inside Nerva or a plug-in. */
  INTERNAL: "INTERNAL",
  /** An optional dependency (a native or heavy package) is not installed. */
  MISSING_DEPENDENCY: "MISSING_DEPENDENCY",
  /** A durable run's worker lost its lease (another worker took the run over): its write is refused. */
  LEASE_LOST: "LEASE_LOST",
  /** The thing exists but is in the wrong state for the call, e.g. resuming a run that is not paused. */
  INVALID_STATE: "INVALID_STATE",
  /** A backing store (SQLite file, Redis) cannot be reached or is locked; retry later. */
  UNAVAILABLE: "UNAVAILABLE",
} as const;
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

/** One problem found while validating a value: where it is and what is wrong with it. */
export interface ValidationIssue {
  /** Dotted path of the offending field, e.g. `options.circuitBreaker.failureThreshold`. */
  readonly path: string;
  readonly message: string;
}

/**
 * The one error class Nerva throws. `code` says what kind of failure it is; the message names
 * the offending field and how to fix it; `issues` lists every validation problem found.
 *
 * @example
 * try {
 *   new InProcessRuntime({ timeoutSeconds: -1 });
 * } catch (err) {
 *   if (err instanceof NervaError && err.code === "INVALID_OPTIONS") console.error(err.issues);
 * }
 */
export class NervaError extends Error {
  override readonly name = "NervaError";
  readonly code: ErrorCode;
  readonly issues: readonly ValidationIssue[];
  /** Machine-readable extras, e.g. `{ retryAfterSeconds: 30 }` for RATE_LIMITED. */
  readonly details: Readonly<Record<string, unknown>>;

  constructor(
    code: ErrorCode,
    message: string,
    options: {
      cause?: unknown;
      issues?: readonly ValidationIssue[];
      details?: Record<string, unknown>;
    } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.issues = options.issues ?? [];
    this.details = Object.freeze({ ...options.details });
  }
}

/** True when `err` is a {@link NervaError}, optionally with the given code. */
export function isNervaError(err: unknown, code?: ErrorCode): err is NervaError {
  return err instanceof NervaError && (code === undefined || err.code === code);
}

/**
 * Validates `value` with `schema`; on failure throws a NervaError whose message lists each bad
 * field under `label` (e.g. `options`) followed by `fix`.
 */
export function parseOrThrow<S extends z.ZodType>(
  schema: S,
  value: unknown,
  code: ErrorCode,
  label: string,
  fix: string,
): z.output<S> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issues = parsed.error.issues.map((issue) => ({
    path: [label, ...issue.path.map(String)].join("."),
    message: issue.message.replace(/^Invalid input: /, ""),
  }));
  const detail = issues.map((i) => `${i.path}: ${i.message}`).join("; ");
  throw new NervaError(code, `Invalid ${label}: ${detail}. ${fix}`, {
    cause: parsed.error,
    issues,
  });
}
