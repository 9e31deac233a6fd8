import { checkContext } from "../context/check.js";
import { isUnwind } from "../context/run-slot.js";
import type { ExecContext } from "../context/exec-context.js";
import type { Span, SpanKind } from "../context/span.js";
import type { StartSpanOptions } from "../context/options.js";
import { ErrorCode, NervaError, type ValidationIssue } from "../errors.js";
import {
  AgentInputSchema,
  ValidatedInput,
  createAgentInput,
  type AgentInput,
  type AgentInputInit,
  type AgentResult,
} from "../types/agent.js";
import { AgentStatus } from "../types/status.js";
import type { CircuitBreaker } from "./circuit-breaker.js";
import { endedResult, errorResult, thrownResult } from "./results.js";

/** What the guard needs to know about a registered handler. */
export interface GuardedHandler {
  /** Effective timeout of one invocation. */
  readonly timeoutSeconds: number;
  readonly breaker: CircuitBreaker | null;
}

/**
 * Runs one handler and resolves to its result: it must honour `scoped.signal` and may reject
 * (a rejection becomes an ERROR result).
 */
export type Execute = (input: AgentInput, scoped: ExecContext) => Promise<AgentResult>;

function invalid(path: string, message: string, fix: string): NervaError {
  const issues: ValidationIssue[] = [{ path, message }];
  return new NervaError(ErrorCode.INVALID_INPUT, `Invalid ${path}: ${message}. ${fix}`, { issues });
}

// Kept here for the modules that import it from the runtime; it lives with the context.
export { checkContext } from "../context/check.js";

/** Validates the arguments of `invoke`/`delegate` and returns the validated AgentInput. */
export function checkInvokeArgs(handler: unknown, input: unknown, ctx: unknown): AgentInput {
  if (typeof handler !== "string" || handler.length === 0) {
    throw invalid(
      "handler",
      "must be a non-empty string",
      "Pass the name a handler was registered under.",
    );
  }
  checkContext(ctx);
  if (input instanceof ValidatedInput) return input;
  const quick = messageOnly(input);
  if (quick !== null) return quick;
  return createAgentInput(input as AgentInputInit);
}

const MAX_MESSAGE = AgentInputSchema.shape.message.maxLength ?? Infinity;

/**
 * The most common input, a plain `{ message }`, checked by hand: exactly what the schema would
 * accept and produce, without its allocations. Anything else goes through the schema.
 */
function messageOnly(input: unknown): AgentInput | null {
  if (
    typeof input !== "object" ||
    input === null ||
    Object.getPrototypeOf(input) !== Object.prototype
  ) {
    return null;
  }
  const message = (input as { message?: unknown }).message;
  if (typeof message !== "string" || message.length > MAX_MESSAGE) return null;
  for (const key in input) if (key !== "message") return null;
  return new ValidatedInput(message);
}

/** The ERROR result for a handler name nobody registered. */
export function unknownHandlerResult(handler: string, known: readonly string[]): AgentResult {
  const list =
    known.length === 0 ? "none are registered" : `registered: ${[...known].sort().join(", ")}`;
  return errorResult(handler, `Unknown handler "${handler}" (${list}).`);
}

/** Ends the `runtime.invoke` span of `result` and returns the result. */
function endInvokeSpan(span: Span, result: AgentResult): AgentResult {
  if (result.status === AgentStatus.SUCCESS) {
    span.end("ok");
  } else {
    span.setAttribute("status", result.status);
    const code = result.data.code;
    if (typeof code === "string") span.setAttribute("code", code);
    span.end("error", result.error ?? result.status);
  }
  return result;
}

const CLIENT: StartSpanOptions = Object.freeze({ kind: "client" });

/**
 * The part of `invoke` every runtime shares: a `runtime.invoke` span, the circuit breaker, and a
 * deadline that really ends the call — the handler gets a fork of `ctx` whose `signal` aborts at
 * min(handler timeout, request deadline) or on cancel, and the result resolves at that moment
 * even if the handler ignores the signal. Never rejects. `handler` and `execute` are `undefined`
 * for a name nobody registered (an ERROR result naming the registered ones). `kind` is the span's:
 * `client` when the handler runs in another process.
 */
export function invokeGuarded(
  name: string,
  handler: GuardedHandler | undefined,
  known: () => readonly string[],
  input: AgentInput,
  ctx: ExecContext,
  execute: Execute | undefined,
  kind: SpanKind = "internal",
): Promise<AgentResult> {
  const span = ctx.startSpan(
    "runtime.invoke",
    { handler: name },
    kind === "internal" ? undefined : CLIENT,
  );
  if (handler === undefined || execute === undefined) {
    return Promise.resolve(endInvokeSpan(span, unknownHandlerResult(name, known())));
  }

  const permit = handler.breaker?.tryAcquire() ?? null;
  if (permit !== null && !permit.admitted) {
    const seconds = permit.retryAfterSeconds;
    ctx.event("circuit.rejected", { handler: name, retry_after_seconds: seconds });
    return Promise.resolve(
      endInvokeSpan(
        span,
        errorResult(
          name,
          `Circuit open for handler "${name}" (${permit.reason}): call rejected; next probe in ${Math.ceil(seconds)} s.`,
        ),
      ),
    );
  }

  return new Promise<AgentResult>((resolve) => {
    let settled = false;
    // Neither outcome counts in the breaker: a cancel, or a handler unwound on purpose (a pause).
    let uncounted = false;
    const finish = (result: AgentResult): void => {
      if (settled) return;
      settled = true;
      if (permit !== null) handler.breaker?.record(permit, uncounted ? null : result.status);
      resolve(endInvokeSpan(span, result));
    };
    const scoped = ctx.fork({
      span,
      agentName: name,
      timeoutSeconds: handler.timeoutSeconds,
      onEnd: (reason) => {
        uncounted = reason.code === ErrorCode.CANCELLED;
        finish(endedResult(name, reason, span.startMs));
      },
    });
    if (settled) return;
    let running: Promise<AgentResult>;
    try {
      // Inside the trace sink's runInSpan: spans the host's tracer makes in the handler nest here.
      // (No closure without a sink: this is every invoke's path.)
      running =
        ctx.traceSink === null
          ? execute(input, scoped)
          : ctx.runInSpan(span, () => execute(input, scoped));
    } catch (err) {
      running = Promise.reject(err);
    }
    running.then(
      (result) => {
        if (result.status !== AgentStatus.SUCCESS) endIfPastDeadline(scoped);
        finish(result);
        scoped.dispose();
      },
      (err: unknown) => {
        endIfPastDeadline(scoped);
        if (isUnwind(err)) uncounted = true;
        finish(thrownResult(name, err));
        scoped.dispose();
      },
    );
  });
}

/**
 * A handler that failed once its deadline had passed failed because of it, even when a deeper
 * context's timer fired first and the failure reached here before this context's own timer:
 * reading `endReason` ends the context now, and its `onEnd` reports TIMEOUT before the failure.
 */
function endIfPastDeadline(scoped: ExecContext): void {
  void scoped.endReason;
}
