import type { z } from "zod";

/**
 * Every code a {@link NervaError} can carry. Callers branch on `code`, never on the message.
 * What each code means for HTTP, retries and clients is {@link ERROR_POLICY}.
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
  /** User code said that no retry can help (it threw an {@link UnrecoverableError}). */
  UNRECOVERABLE: "UNRECOVERABLE",
} as const;
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

/**
 * What Nerva does with an error of one code, wherever it surfaces.
 *
 * @example
 * const { status, retriable, expose } = ERROR_POLICY[ErrorCode.RATE_LIMITED]; // 429, true, true
 */
export interface ErrorPolicy {
  /** The HTTP status every bridge answers it with. */
  readonly status: number;
  /**
   * Whether another attempt may succeed. `false` fails a durable run, or a graph execution whose
   * node threw it, at once, whatever attempts remain.
   */
  readonly retriable: boolean;
  /**
   * Whether its message is written for clients and may be shown to them (in an HTTP answer, a
   * run's or a response's client view). Otherwise it is operator text: clients see a fixed one.
   */
  readonly expose: boolean;
}

const policy = (status: number, retriable: boolean, expose: boolean): ErrorPolicy =>
  Object.freeze({ status, retriable, expose });

/**
 * The one error policy: per {@link ErrorCode}, its HTTP status, whether a retry can help and
 * whether its message may be shown to a client. Every code has a row (a new code without one
 * does not compile); the bridges, the run worker, the graph executor and every client view read
 * it. An exposed code answers below 500, or 503 or 504; the others' messages may carry internals.
 *
 * | code | status | retriable | expose |
 * |---|---|---|---|
 * | INVALID_INPUT, INVALID_OPTIONS | 400 | no | yes |
 * | UNAUTHENTICATED | 401 | no | yes |
 * | PERMISSION_DENIED, POLICY_DENIED | 403 | no | yes |
 * | NOT_FOUND | 404 | no | yes |
 * | INVALID_STATE | 409 | yes | yes |
 * | RATE_LIMITED, BUDGET_EXCEEDED | 429 | yes | yes |
 * | CANCELLED | 499 | yes | yes |
 * | CIRCUIT_OPEN, UNAVAILABLE | 503 | yes | yes |
 * | TIMEOUT | 504 | yes | yes |
 * | APPROVAL_PENDING | 202 | yes | yes |
 * | DUPLICATE_HANDLER, EMPTY_CHAIN, MISSING_DEPENDENCY, UNRECOVERABLE | 500 | no | no |
 * | INTERNAL, LEASE_LOST | 500 | yes | no |
 *
 * @example
 * ERROR_POLICY[ErrorCode.NOT_FOUND]; // { status: 404, retriable: false, expose: true }
 */
export const ERROR_POLICY: Readonly<Record<ErrorCode, ErrorPolicy>> = Object.freeze({
  [ErrorCode.INVALID_INPUT]: policy(400, false, true),
  [ErrorCode.INVALID_OPTIONS]: policy(400, false, true),
  [ErrorCode.UNAUTHENTICATED]: policy(401, false, true),
  [ErrorCode.PERMISSION_DENIED]: policy(403, false, true),
  [ErrorCode.POLICY_DENIED]: policy(403, false, true),
  [ErrorCode.NOT_FOUND]: policy(404, false, true),
  // The state may change (a run pauses a moment later): another attempt may find it right.
  [ErrorCode.INVALID_STATE]: policy(409, true, true),
  [ErrorCode.RATE_LIMITED]: policy(429, true, true),
  [ErrorCode.BUDGET_EXCEEDED]: policy(429, true, true),
  [ErrorCode.CANCELLED]: policy(499, true, true),
  [ErrorCode.CIRCUIT_OPEN]: policy(503, true, true),
  [ErrorCode.UNAVAILABLE]: policy(503, true, true),
  [ErrorCode.TIMEOUT]: policy(504, true, true),
  [ErrorCode.APPROVAL_PENDING]: policy(202, true, true),
  // Programmer and deployment errors: the same code fails the same way until someone fixes it.
  [ErrorCode.DUPLICATE_HANDLER]: policy(500, false, false),
  [ErrorCode.EMPTY_CHAIN]: policy(500, false, false),
  [ErrorCode.MISSING_DEPENDENCY]: policy(500, false, false),
  [ErrorCode.UNRECOVERABLE]: policy(500, false, false),
  // Unknown failures may be passing ones; a worker that lost its lease is a server-side condition.
  [ErrorCode.INTERNAL]: policy(500, true, false),
  [ErrorCode.LEASE_LOST]: policy(500, true, false),
} satisfies Record<ErrorCode, ErrorPolicy>);

/**
 * The {@link ERROR_POLICY} row of `code`, or `undefined` when it is not an {@link ErrorCode}
 * (a code read from a result's `data`, a store or the wire).
 *
 * @example
 * errorPolicyOf(result.data.code)?.expose === true; // a message a client may read
 */
export function errorPolicyOf(code: unknown): ErrorPolicy | undefined {
  return typeof code === "string" && Object.hasOwn(ERROR_POLICY, code)
    ? ERROR_POLICY[code as ErrorCode]
    : undefined;
}

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
  override readonly name: string = "NervaError";
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

/**
 * The one way for user code to say "do not retry this": a durable run whose handler throws it
 * fails at once (`error.code` UNRECOVERABLE), whatever attempts remain, and so does a graph
 * execution whose node throws it. Anything else thrown is retried by the run's retry policy,
 * unless it is a {@link NervaError} whose code {@link ERROR_POLICY} marks not retriable.
 * Its message is operator text: clients see a fixed one.
 *
 * @example
 * runtime.register("charge", async (input) => {
 *   const reply = await charge(input.args);
 *   if (reply.declined) throw new UnrecoverableError("card declined");
 *   return reply.id;
 * });
 */
export class UnrecoverableError extends NervaError<"UNRECOVERABLE"> {
  override readonly name: string = "UnrecoverableError";
  constructor(message: string, options: { cause?: unknown; details?: ExtraDetails } = {}) {
    super(ErrorCode.UNRECOVERABLE, message, options);
  }
}

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
