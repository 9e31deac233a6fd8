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
  /** A circuit breaker is open; `details.retryAfterSeconds` says when it probes again. */
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
 * The `details` each code carries, beyond any other machine-readable extras. A code listed here
 * must be given these details when it is thrown with a literal code, so that user code reads
 * `err.details.approvalId` with no cast once it has checked `err.code`.
 */
export interface ErrorDetailsByCode {
  APPROVAL_PENDING: { readonly approvalId: string; readonly rule?: string };
  RATE_LIMITED: { readonly retryAfterSeconds: number };
  BUDGET_EXCEEDED: { readonly retryAfterSeconds?: number };
  CIRCUIT_OPEN: { readonly retryAfterSeconds: number };
  MISSING_DEPENDENCY: { readonly package: string; readonly install?: string };
}

/** Extras any error may carry (e.g. `rule`, `checkpoint`, `source`). */
export type ExtraDetails = { readonly [key: string]: unknown };

/** The `details` of an error with code `C`. */
export type ErrorDetails<C extends ErrorCode> = C extends keyof ErrorDetailsByCode
  ? ErrorDetailsByCode[C] & ExtraDetails
  : ExtraDetails;

/** Options of the {@link NervaError} constructor. */
export interface NervaErrorOptions<C extends ErrorCode = ErrorCode> {
  cause?: unknown;
  issues?: readonly ValidationIssue[];
  details?: ErrorDetails<C>;
}

/** Codes whose details have a required field. */
type CodesWithRequiredDetails = {
  [K in keyof ErrorDetailsByCode]: object extends ErrorDetailsByCode[K] ? never : K;
}[keyof ErrorDetailsByCode];

/** The options argument: required, with its details, for {@link CodesWithRequiredDetails}. */
type OptionsArgs<C extends ErrorCode> = C extends CodesWithRequiredDetails
  ? [options: NervaErrorOptions<C> & { details: ErrorDetails<C> }]
  : [options?: NervaErrorOptions<C>];

/** Marks Nerva errors across copies of this package (two installed versions, bundled copies). */
const BRAND = Symbol.for("nerva.error");

/**
 * The one error class Nerva throws. `code` says what kind of failure it is; the message names
 * the offending field and how to fix it; `issues` lists every validation problem found;
 * `details` is typed per code (see {@link ErrorDetailsByCode}).
 *
 * `instanceof NervaError` and {@link isNervaError} also recognise an error thrown by another
 * installed copy of `@nerva/core`, as tRPC recognises its errors.
 *
 * @example
 * try {
 *   new InProcessRuntime({ timeoutSeconds: -1 });
 * } catch (err) {
 *   if (isNervaError(err, "INVALID_OPTIONS")) console.error(err.issues);
 *   if (isNervaError(err, "APPROVAL_PENDING")) console.log(err.details.approvalId);
 * }
 */
export class NervaError<C extends ErrorCode = ErrorCode> extends Error {
  override readonly name = "NervaError";
  readonly code: C;
  readonly issues: readonly ValidationIssue[];
  /** Machine-readable extras, e.g. `{ retryAfterSeconds: 30 }` for RATE_LIMITED. */
  readonly details: Readonly<ErrorDetails<C>>;

  constructor(code: C, message: string, ...[options = {}]: OptionsArgs<C>) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.issues = options.issues ?? [];
    this.details = Object.freeze({ ...options.details }) as ErrorDetails<C>;
  }

  /** Accepts a NervaError of any installed copy of this package (see {@link isNervaError}). */
  static override [Symbol.hasInstance](value: unknown): value is NervaError {
    if (this !== NervaError) return Function.prototype[Symbol.hasInstance].call(this, value);
    return (
      typeof value === "object" &&
      value !== null &&
      (value as { [BRAND]?: unknown })[BRAND] === true &&
      typeof (value as { code?: unknown }).code === "string"
    );
  }
}
Object.defineProperty(NervaError.prototype, BRAND, { value: true });

/** A NervaError whose `details` are narrowed by checking its `code`. */
export type AnyNervaError<C extends ErrorCode = ErrorCode> = C extends ErrorCode
  ? NervaError<C>
  : never;

/**
 * True when `err` is a {@link NervaError} (of any installed copy of this package), optionally
 * with the given code. Narrows `details` to the code's shape.
 *
 * @example
 * if (isNervaError(err, "RATE_LIMITED")) res.set("retry-after", String(err.details.retryAfterSeconds));
 */
export function isNervaError<C extends ErrorCode = ErrorCode>(
  err: unknown,
  code?: C,
): err is AnyNervaError<C> {
  return err instanceof NervaError && (code === undefined || err.code === code);
}

/** The message of anything thrown: an error's message (or name), a thrown string, or a description. */
export function messageOf(err: unknown): string {
  if (err instanceof Error) return err.message || err.name;
  return typeof err === "string" ? err : `non-error value thrown: ${String(err)}`;
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
