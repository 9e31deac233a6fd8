import type { ExecContext } from "../context/exec-context.js";
import type { Span } from "../context/span.js";
import { ErrorCode, NervaError } from "../errors.js";
import {
  MiddlewareStage,
  type InvocationRequest,
  type OrchestratorResponse,
  type PipelineStage,
} from "../middleware/types.js";
import { askPolicy, kRefusals, refusalCount } from "../policy/check.js";
import { decisionError } from "../policy/decision.js";
import { Checkpoint, type PolicyAction } from "../policy/types.js";
import { messageOf } from "../runtime/results.js";
import { ValidatedInput, agentResult, type AgentInput, type AgentResult } from "../types/agent.js";
import { AgentStatus } from "../types/status.js";
import type { TokenUsage } from "../types/usage.js";
import type { CallOptions, Wiring } from "./options.js";
import type { RouteResult } from "../router/types.js";
import {
  discoverStage,
  endFormatSpan,
  endRouteSpan,
  failStage,
  formatAttributes,
  storeStage,
} from "./stages.js";

const EMPTY_LIST: readonly Readonly<Record<string, string>>[] = Object.freeze([]);
/** Refusals during a handler's run that decide the request's outcome when the handler failed. */
const ELEVATED: ReadonlySet<unknown> = new Set([
  ErrorCode.APPROVAL_PENDING,
  ErrorCode.BUDGET_EXCEEDED,
  ErrorCode.RATE_LIMITED,
]);

/**
 * One request through the pipeline, in the fork `rctx` whose current span is `span` (the
 * `handle` span, ended here):
 *
 * `before_route` → policy (before routing) → `router.classify` → `after_route` → for each ranked
 * candidate: `before_invoke` → policy (before invocation) → `runtime.invoke` → `after_invoke`
 * (falling through to the next candidate on `wrong_handler`) → `responder.format` →
 * `before_respond` → memory turns (only for an answer that is really given) → usage charged.
 */
export async function runRequest(
  w: Wiring,
  message: string,
  rctx: ExecContext,
  span: Span,
  call: CallOptions,
): Promise<OrchestratorResponse> {
  const channel = call.channel;
  const firstRefusal = refusalCount(rctx);
  const usageBefore = rctx.tokenUsage;
  const pipeline = w.pipeline;
  let stage: PipelineStage = MiddlewareStage.BEFORE_ROUTE;
  try {
    const msg = w.hasBeforeRoute
      ? await pipeline.run(MiddlewareStage.BEFORE_ROUTE, message, rctx)
      : message;
    stage = "route";
    if (w.policy !== null) {
      await gate(w, { checkpoint: Checkpoint.BEFORE_ROUTE, message: msg }, rctx);
    }
    let route = call.agent === null ? await classify(w, msg, rctx) : named(call.agent, rctx);
    if (w.hasAfterRoute) {
      stage = MiddlewareStage.AFTER_ROUTE;
      route = await pipeline.run(MiddlewareStage.AFTER_ROUTE, route, rctx);
    }
    stage = "invoke";
    const tools = w.tools === null || !w.exposeTools ? EMPTY_LIST : await toolList(w, rctx);
    // Built from values already checked (the message, the discovered tool list), so runtimes
    // take it as validated instead of parsing it again.
    const input: AgentInput = new ValidatedInput(msg, call.args, tools, EMPTY_LIST);
    let result: AgentResult | null = null;
    const candidates = route.candidates;
    const tries = Math.min(candidates.length, w.maxCandidates);
    for (let i = 0; i < tries; i++) {
      let request: InvocationRequest = {
        handler: (candidates[i] as { name: string }).name,
        input,
      };
      if (w.hasBeforeInvoke) {
        stage = MiddlewareStage.BEFORE_INVOKE;
        request = await pipeline.run(MiddlewareStage.BEFORE_INVOKE, request, rctx);
        stage = "invoke";
      }
      result =
        w.policy === null && w.stats === null
          ? await w.runtime.invoke(request.handler, request.input, rctx)
          : await invoke(w, request, rctx);
      if (w.hasAfterInvoke) {
        stage = MiddlewareStage.AFTER_INVOKE;
        result = await pipeline.run(MiddlewareStage.AFTER_INVOKE, result, rctx);
        stage = "invoke";
      }
      if (result.status !== AgentStatus.WRONG_HANDLER) break;
      if (i + 1 < tries) {
        rctx.event("orchestrator.fallthrough", {
          from: result.handler,
          to: (candidates[i + 1] as { name: string }).name,
        });
      }
    }
    result ??= agentResult("", {
      status: AgentStatus.WRONG_HANDLER,
      error:
        "No handler can take this message (the router found no candidate this context may use).",
    });
    if (result.status !== AgentStatus.SUCCESS) raiseRefusal(result, rctx, firstRefusal);

    stage = "respond";
    const formatSpan = rctx.startSpan("responder.format", formatAttributes(result, channel));
    const formatting = w.scopeResponder ? rctx.fork({ span: formatSpan }) : rctx;
    let response: OrchestratorResponse;
    try {
      response = await w.responder.format(result, channel, formatting);
    } catch (err) {
      failStage(formatSpan, err);
    } finally {
      if (formatting !== rctx) formatting.dispose();
    }
    endFormatSpan(formatSpan, response);
    if (w.hasBeforeRespond) {
      stage = MiddlewareStage.BEFORE_RESPOND;
      response = await pipeline.run(MiddlewareStage.BEFORE_RESPOND, response, rctx);
      stage = "respond";
    }
    // Only now is the answer given: an answer refused by a before_respond hook is never stored.
    if (w.remember && w.memory !== null && result.status === AgentStatus.SUCCESS) {
      await rememberTurns(w, msg, result, rctx);
    }
    usageAttributes(rctx, usageBefore, span);
    if (w.policy !== null) await charge(w, rctx, usageBefore);
    span.setAttribute("handler", response.handler);
    span.setAttribute("status", response.status);
    if (response.status === AgentStatus.SUCCESS) span.end("ok");
    else span.end("error", response.error ?? response.status);
    return response;
  } catch (err) {
    await pipeline.onError(err, rctx, stage);
    usageAttributes(rctx, usageBefore, span);
    if (w.policy !== null) await charge(w, rctx, usageBefore);
    span.end("error", messageOf(err));
    throw err;
  }
}

/** The router's candidates for `msg`, in a `router.classify` span. */
async function classify(w: Wiring, msg: string, rctx: ExecContext): Promise<RouteResult> {
  const routeSpan = rctx.startSpan("router.classify");
  const routing = w.scopeRouter ? rctx.fork({ span: routeSpan }) : rctx;
  let route: RouteResult;
  try {
    route = await w.router.classify(msg, routing);
  } catch (err) {
    failStage(routeSpan, err);
  } finally {
    if (routing !== rctx) routing.dispose();
  }
  endRouteSpan(routeSpan, route);
  return route;
}

/** The one candidate a call named (`options.agent`), if its context may use it. */
function named(agent: string, rctx: ExecContext): RouteResult {
  if (!rctx.permissions.canUseAgent(agent)) {
    throw new NervaError(
      ErrorCode.PERMISSION_DENIED,
      `This context may not use the agent "${agent}".`,
      { details: { handler: agent } },
    );
  }
  const candidate = { name: agent, score: 1, reason: "named by the call" };
  return { candidates: [candidate], best: candidate };
}

/** Asks the policy at a checkpoint of the pipeline; a refusal rejects with its NervaError. */
async function gate(w: Wiring, action: PolicyAction, rctx: ExecContext): Promise<void> {
  const refused = await askPolicy(w.policy!, action, rctx);
  if (refused !== null) throw decisionError(refused);
}

async function invoke(
  w: Wiring,
  request: InvocationRequest,
  rctx: ExecContext,
): Promise<AgentResult> {
  const handler = request.handler;
  if (w.policy !== null) {
    await gate(
      w,
      {
        checkpoint: Checkpoint.BEFORE_INVOKE,
        kind: "agent",
        name: handler,
        message: request.input.message,
      },
      rctx,
    );
  }
  const stats = w.stats;
  if (stats === null) return w.runtime.invoke(handler, request.input, rctx);
  const started = performance.now();
  const result = await w.runtime.invoke(handler, request.input, rctx);
  await stats.record(
    "agent",
    handler,
    {
      ok: result.status === AgentStatus.SUCCESS,
      latencyMs: performance.now() - started,
      ...(result.error === null ? {} : { error: result.error }),
    },
    rctx,
  );
  return result;
}

async function toolList(
  w: Wiring,
  rctx: ExecContext,
): Promise<readonly Readonly<Record<string, string>>[]> {
  const infos = await discoverStage(w.tools!, rctx);
  return Object.freeze(
    infos.map((t) =>
      Object.freeze({
        name: t.name,
        description: t.description,
        parameters: JSON.stringify(t.parameters),
      }),
    ),
  );
}

/**
 * A handler that failed after a policy refused one of its tool calls or delegations with a
 * code the client can act on (approval pending, budget exceeded, rate limited) fails the
 * request with that refusal, so bridges answer 202/429 rather than a generic failure. The
 * refusals come from the request's slot (see `kRefusals`), whatever engine made them.
 */
function raiseRefusal(result: AgentResult, rctx: ExecContext, first: number): void {
  const refusals = rctx.local(kRefusals);
  if (refusals === undefined) return;
  for (let i = refusals.length - 1; i >= first; i--) {
    const d = refusals[i]!;
    if (!ELEVATED.has(d.code)) continue;
    throw new NervaError(
      d.code as ErrorCode,
      `${d.reason} (during ${result.handler}, which then failed: ${result.error ?? result.status})`,
      {
        details: {
          checkpoint: Checkpoint.DURING_EXECUTION,
          rule: d.rule,
          handler: result.handler,
          ...(d.retryAfterSeconds === undefined ? {} : { retryAfterSeconds: d.retryAfterSeconds }),
          ...(d.approvalId === undefined ? {} : { approvalId: d.approvalId }),
        },
      },
    );
  }
}

/** Stores the message and the answer as turns; a memory failure is an event, not a failure. */
async function rememberTurns(
  w: Wiring,
  message: string,
  result: AgentResult,
  rctx: ExecContext,
): Promise<void> {
  const memory = w.memory!;
  try {
    await storeStage(
      memory,
      { kind: "turn", role: "user", content: message },
      rctx,
      result.handler,
    );
    if (result.output !== "") {
      await storeStage(
        memory,
        {
          kind: "turn",
          role: "assistant",
          content: result.output,
          metadata: { handler: result.handler },
        },
        rctx,
        result.handler,
      );
    }
  } catch (err) {
    rctx.event("memory.error", { operation: "store", error: messageOf(err) });
  }
}

/** Puts the request's token usage and cost on its `handle` span. */
function usageAttributes(rctx: ExecContext, before: TokenUsage, span: Span): void {
  const after = rctx.tokenUsage;
  if (after.totalTokens > before.totalTokens || after.costUsd > before.costUsd) {
    span.setAttribute("tokens", after.totalTokens - before.totalTokens);
    span.setAttribute("cost_usd", after.costUsd - before.costUsd);
  }
}

/**
 * Settles the request with the policy: its real usage is charged (and what it held against
 * budgets released). A failure is an event.
 */
async function charge(w: Wiring, rctx: ExecContext, before: TokenUsage): Promise<void> {
  const after = rctx.tokenUsage;
  try {
    await w.policy!.charge(
      {
        promptTokens: after.promptTokens - before.promptTokens,
        completionTokens: after.completionTokens - before.completionTokens,
        totalTokens: after.totalTokens - before.totalTokens,
        costUsd: after.costUsd - before.costUsd,
      },
      rctx,
    );
  } catch (err) {
    rctx.event("policy.error", { operation: "charge", error: messageOf(err) });
  }
}
