// One attempt of a claimed run, from its refusal checks through the handler (or chain) to the
// fenced write that ends it; the Runner (runner.ts) claims runs and hands each one here.
import type { ExecContext } from "../context/exec-context.js";
import { ErrorCode, errorPolicyOf, isNervaError } from "../errors.js";
import { thrownResult } from "../runtime/results.js";
import type { AgentRuntime } from "../runtime/types.js";
import { ValidatedInput, type AgentResult } from "../types/agent.js";
import { AgentStatus } from "../types/status.js";
import type { TokenUsageWire } from "../types/usage.js";
import { retryDelaySeconds } from "./backoff.js";
import { watchLocalCancel } from "./cancel-watchers.js";
import { RunPaused, type ActiveRun, type ThrownError } from "./run-context.js";
import { inRunSpan } from "./run-span.js";
import type { ClaimRequest, ClaimedRun, RunOutcome, RunStore } from "./store.js";
import { RunStatus, type RunError } from "./types.js";

/** One run this worker is executing. */
export interface Execution {
  readonly active: ActiveRun;
  readonly ctx: ExecContext;
  /** The Runner is stopping: hand the run back instead of recording an outcome. */
  releasing: boolean;
  /** A cancel was seen (this process, the store's notice or a heartbeat): it ends `cancelled`. */
  cancelled: boolean;
  beating: boolean;
}

/** What an attempt uses of its Runner. */
export interface AttemptScope {
  readonly store: RunStore;
  readonly runtime: AgentRuntime;
  readonly leaseMs: number;
  readonly heartbeatMs: number;
  readonly onError: (err: unknown) => void;
  /** The claim the slot an attempt frees would make next, or `null` (the Runner is stopping). */
  readonly nextClaim?: () => ClaimRequest | null;
  /** Starts a run claimed with a finish, in the slot that finish freed. */
  readonly begin?: (claimed: ClaimedRun) => void;
}

/** Resolves after `ms`, or at once when `signal` aborts. */
export const sleep = (ms: number, signal?: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    if (signal?.aborted === true) return resolve();
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });

/** Why an attempt failed, and whether another attempt may help. */
export function classifyFailure(result: AgentResult, thrown: ThrownError | null): RunError {
  const message = result.error ?? `Handler "${result.handler}" ended with status ${result.status}.`;
  if (result.status === AgentStatus.TIMEOUT) {
    return { code: ErrorCode.TIMEOUT, message, retriable: true };
  }
  if (result.status === AgentStatus.WRONG_HANDLER) {
    return { code: "WRONG_HANDLER", message, retriable: false };
  }
  if (thrown !== null && message.includes(thrown.message)) {
    return { code: thrown.code, message, retriable: thrown.retriable };
  }
  // A NervaError the handler threw outside a step (or in another process): the runtime kept its
  // code in data.code.
  const code = result.data.code;
  const policy = errorPolicyOf(code);
  if (policy !== undefined) return { code: code as string, message, retriable: policy.retriable };
  return { code: "HANDLER_ERROR", message, retriable: true };
}

/**
 * Runs one attempt of `claimed` (heartbeating its lease and watching for a cancel meanwhile) and
 * records how it ended with a fenced write: finished, retried later, or handed back while the
 * Runner stops. A pause or a lost lease leaves the run as the store has it.
 */
export async function executeAttempt(
  a: AttemptScope,
  execution: Execution,
  claimed: ClaimedRun,
): Promise<void> {
  const { active, ctx } = execution;
  const run = claimed.run;
  const beat = setInterval(() => heartbeat(a, execution), a.heartbeatMs);
  const onCancel = (): void => cancelled(execution);
  const unwatchLocal = watchLocalCancel(a.store, run.id, onCancel);
  const unwatch = a.store.watchCancel?.(run.id, onCancel);
  try {
    if (run.cancelRequested) {
      execution.cancelled = true;
    } else {
      const refused = refusal(a.runtime, run.handlers, ctx);
      if (refused !== null) {
        await persist(a, active, () =>
          a.store.finish(active.lease, {
            status: RunStatus.FAILED,
            result: null,
            error: refused,
          }),
        );
        return;
      }
    }
    let result: AgentResult | null = null;
    if (!execution.cancelled) {
      try {
        result = await inRunSpan(ctx, run, (scoped) =>
          invokeChain(a.runtime, { ...execution, ctx: scoped }, run.handlers, run.input),
        );
      } catch (err) {
        if (err instanceof RunPaused || active.paused !== null) return;
        active.note(err);
        result = thrownResult(run.handlers[run.handlers.length - 1] as string, err);
      }
    }
    if (active.lost !== null || active.paused !== null) return;
    // A step the handler left running: its start goes in the history before the outcome.
    await active.writeStarts().catch(() => undefined);
    if (execution.releasing) {
      await persist(a, active, () => a.store.release(active.lease));
      return;
    }
    const outcome = withUsage(outcomeOf(execution, run, result), ctx, run);
    if (
      outcome.status !== RunStatus.SUCCEEDED &&
      outcome.status !== RunStatus.CANCELLED &&
      outcome.error.retriable &&
      run.attempt < run.maxAttempts
    ) {
      const delaySeconds = retryDelaySeconds(run.retry, run.attempt);
      const error = outcome.error;
      await persist(a, active, () => a.store.retry(active.lease, delaySeconds, error));
    } else {
      await persist(a, active, () => finishAndNext(a, active, outcome));
    }
  } finally {
    clearInterval(beat);
    unwatchLocal();
    unwatch?.();
  }
}

/**
 * Records the outcome; where the store can claim in the same call (`finishAndClaim`), also claims
 * the run this slot takes next and starts it.
 */
async function finishAndNext(
  a: AttemptScope,
  active: ActiveRun,
  outcome: RunOutcome,
): Promise<void> {
  const request = a.store.finishAndClaim === undefined ? null : (a.nextClaim?.() ?? null);
  if (request === null || a.begin === undefined) {
    await a.store.finish(active.lease, outcome);
    return;
  }
  const { next } = await a.store.finishAndClaim!(active.lease, outcome, request);
  if (next !== null) a.begin(next);
}

/** A permanent reason not to run `handlers` at all (unknown or not permitted), or `null`. */
function refusal(
  runtime: AgentRuntime,
  handlers: readonly string[],
  ctx: ExecContext,
): RunError | null {
  const known = new Set(runtime.handlerNames());
  const unknown = handlers.filter((h) => !known.has(h));
  if (unknown.length > 0) {
    return {
      code: ErrorCode.NOT_FOUND,
      message: `Unknown handler${unknown.length > 1 ? "s" : ""} ${unknown.map((h) => `"${h}"`).join(", ")} on this worker's runtime (registered: ${[...known].sort().join(", ") || "none"}).`,
      retriable: false,
    };
  }
  const denied = handlers.filter((h) => !ctx.permissions.canUseAgent(h));
  if (denied.length > 0) {
    return {
      code: ErrorCode.PERMISSION_DENIED,
      message: `The enqueuer's permissions do not allow agent${denied.length > 1 ? "s" : ""} ${denied.map((h) => `"${h}"`).join(", ")}.`,
      retriable: false,
    };
  }
  return null;
}

function outcomeOf(
  execution: Execution,
  run: ClaimedRun["run"],
  result: AgentResult | null,
): RunOutcome {
  if (execution.cancelled || result === null) {
    return {
      status: RunStatus.CANCELLED,
      result,
      error: {
        code: ErrorCode.CANCELLED,
        message: `Run ${run.id} was cancelled.`,
        retriable: false,
      },
    };
  }
  if (result.status === AgentStatus.SUCCESS) return { status: RunStatus.SUCCEEDED, result };
  const error = classifyFailure(result, execution.active.thrown);
  const timedOut = result.status === AgentStatus.TIMEOUT || execution.ctx.isTimedOut();
  return { status: timedOut ? RunStatus.TIMED_OUT : RunStatus.FAILED, result, error };
}

/**
 * `outcome` with what the attempt spent (the context's usage less what the enqueuer's context
 * carried in), when it spent anything.
 */
function withUsage(outcome: RunOutcome, ctx: ExecContext, run: ClaimedRun["run"]): RunOutcome {
  const now = ctx.tokenUsage;
  const before = run.context.token_usage;
  const usage: TokenUsageWire = {
    prompt_tokens: Math.max(0, now.promptTokens - before.prompt_tokens),
    completion_tokens: Math.max(0, now.completionTokens - before.completion_tokens),
    total_tokens: Math.max(0, now.totalTokens - before.total_tokens),
    cost_usd: Math.max(0, now.costUsd - before.cost_usd),
  };
  return usage.total_tokens > 0 || usage.cost_usd > 0 ? { ...outcome, usage } : outcome;
}

/**
 * Runs one fenced write that ends an attempt. Store outages (UNAVAILABLE) are retried while the
 * lease may still be ours; LEASE_LOST ends it (another worker owns the run now).
 */
export async function persist(
  a: AttemptScope,
  active: ActiveRun,
  write: () => Promise<unknown>,
): Promise<void> {
  const until = Date.now() + a.leaseMs;
  for (let n = 0; ; n++) {
    try {
      await write();
      return;
    } catch (err) {
      if (isNervaError(err, ErrorCode.LEASE_LOST)) {
        active.lose(err);
        return;
      }
      if (!isNervaError(err, ErrorCode.UNAVAILABLE) || Date.now() > until) throw err;
      await sleep(Math.min(1000, 25 * 2 ** n));
    }
  }
}

/** A cancel was asked: abort the handler; the run will end `cancelled`. */
function cancelled(execution: Execution): void {
  if (execution.cancelled) return;
  execution.cancelled = true;
  execution.ctx.cancel("the run was cancelled");
}

function heartbeat(a: AttemptScope, execution: Execution): void {
  if (execution.beating || execution.active.lost !== null) return;
  execution.beating = true;
  a.store.heartbeat(execution.active.lease, a.leaseMs / 1000).then(
    ({ cancelRequested }) => {
      execution.beating = false;
      if (cancelRequested) cancelled(execution);
    },
    (err: unknown) => {
      execution.beating = false;
      if (isNervaError(err, ErrorCode.LEASE_LOST)) execution.active.lose(err);
      else a.onError(err);
    },
  );
}

/**
 * Runs the handler, or the chain: each handler's output is the next one's message, every
 * result but the last memoized as a step; a `needs_data`/`needs_credentials` result pauses the
 * run until `resume` brings `{ args }`, merged into the handler's args.
 */
async function invokeChain(
  runtime: AgentRuntime,
  execution: Execution,
  handlers: readonly string[],
  runInput: ClaimedRun["run"]["input"],
): Promise<AgentResult> {
  const { active, ctx } = execution;
  let input = new ValidatedInput(runInput.message, runInput.args, runInput.tools, runInput.history);
  let result: AgentResult | undefined;
  for (let i = 0; i < handlers.length; i++) {
    const name = handlers[i] as string;
    const last = i === handlers.length - 1;
    const key = `$chain/${i}`;
    const memo = last
      ? undefined
      : active.committed<{ result: AgentResult; args: Record<string, string> }>(key);
    let args = input.args;
    if (memo !== undefined) {
      result = memo.result;
      args = memo.args;
    } else {
      for (const answer of active.takeAnswers<{ args: Record<string, string> }>(key)) {
        args = { ...args, ...answer.args };
      }
      for (;;) {
        const stepCtx = last ? ctx : ctx.fork({ stream: null });
        try {
          result = await runtime.invoke(
            name,
            new ValidatedInput(input.message, args, input.tools, input.history),
            stepCtx,
          );
        } finally {
          if (!last) stepCtx.dispose();
        }
        const asks =
          result.status === AgentStatus.NEEDS_DATA ||
          result.status === AgentStatus.NEEDS_CREDENTIALS;
        if (!asks || ctx.endReason !== null) break;
        const answer = await active.ask<{ args: Record<string, string> }>(active.unique("i", key), {
          key,
          prompt: result.output || result.error,
          kind: result.status,
          data: result.data,
        });
        args = { ...args, ...answer.args };
      }
      if (result.status !== AgentStatus.SUCCESS) return result;
      const done = { result, args };
      if (!last) await active.memo(key, () => done, false);
    }
    input = new ValidatedInput(result.output, args, input.tools, input.history);
  }
  return result as AgentResult;
}
