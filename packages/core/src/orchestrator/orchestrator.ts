import { z } from "zod";
import type { ExecContext, StreamSink } from "../context/exec-context.js";
import type { Span } from "../context/span.js";
import { ErrorCode, NervaError, parseOrThrow } from "../errors.js";
import type { Memory } from "../memory/types.js";
import { MiddlewarePipeline } from "../middleware/pipeline.js";
import {
  MiddlewareStage,
  type InvocationRequest,
  type Middleware,
  type OrchestratorResponse,
  type PipelineStage,
} from "../middleware/types.js";
import { decisionError } from "../policy/decision.js";
import { Checkpoint, type PolicyAction, type PolicyEngine } from "../policy/types.js";
import type { Registry } from "../registry/types.js";
import type { Channel, Responder } from "../responder/types.js";
import type { RouteResult, Router } from "../router/types.js";
import { checkContext } from "../runtime/guard.js";
import { messageOf } from "../runtime/results.js";
import type { AgentHandler, AgentRuntime } from "../runtime/types.js";
import type { ToolManager } from "../tools/types.js";
import { ValidatedInput, agentResult, type AgentInput, type AgentResult } from "../types/agent.js";
import { AgentStatus } from "../types/status.js";
import type { TokenUsage } from "../types/usage.js";
import { ChunkQueue } from "./chunk-queue.js";
import { checkPolicy, createKit, type KitDeps } from "./kit.js";
import { PassthroughResponder } from "../responder/passthrough-responder.js";
import { StatsRecorder } from "./stats.js";
import type {
  AgentKit,
  HandleOptions,
  KitHandler,
  OrchestratorOptions,
  OrchestratorStream,
} from "./types.js";

const implementing = <T>(label: string, methods: readonly string[]) =>
  z.custom<T>(
    (v) =>
      typeof v === "object" &&
      v !== null &&
      methods.every((m) => typeof (v as Record<string, unknown>)[m] === "function"),
    `must implement ${label} (${methods.join(", ")})`,
  );

const ChannelSchema = z.union([
  z.string().min(1),
  z
    .object({
      format: z.enum(["plain", "markdown"]),
      maxLength: z.number().int().positive().nullable().optional(),
    })
    .strict(),
]);

const OptionsSchema = z
  .object({
    router: implementing<Router>("Router", ["classify"]),
    runtime: implementing<AgentRuntime>("AgentRuntime", ["invoke", "delegate"]),
    tools: implementing<ToolManager>("ToolManager", ["discover", "call"]).optional(),
    memory: implementing<Memory>("Memory", ["recall", "store"]).optional(),
    responder: implementing<Responder>("Responder", ["format", "formatChunk"]).optional(),
    registry: implementing<Registry>("Registry", ["register", "recordInvocation"]).optional(),
    policy: implementing<PolicyEngine>("PolicyEngine", ["evaluate", "charge"]).optional(),
    middleware: z.array(z.unknown()).optional(),
    channel: ChannelSchema.default("plain"),
    maxCandidates: z.number().int().min(1).max(20).default(3),
    remember: z.boolean().default(true),
    exposeTools: z.boolean().default(true),
  })
  .strict();

const MAX_MESSAGE = 1_000_000;
const EMPTY_ARGS: Readonly<Record<string, string>> = Object.freeze({});
const EMPTY_LIST: readonly Readonly<Record<string, string>>[] = Object.freeze([]);
/** The default of `options` (not a fresh `{}` per call). */
const NO_OPTIONS: HandleOptions = Object.freeze({});
/** Refusals during a handler's run that decide the request's outcome when the handler failed. */
const ELEVATED: ReadonlySet<string> = new Set([
  ErrorCode.APPROVAL_PENDING,
  ErrorCode.BUDGET_EXCEEDED,
  ErrorCode.RATE_LIMITED,
]);

function checkMessage(message: unknown): asserts message is string {
  if (typeof message !== "string" || message.length > MAX_MESSAGE) {
    throw new NervaError(
      ErrorCode.INVALID_INPUT,
      `Invalid message: must be a string of at most ${MAX_MESSAGE} characters (got ${typeof message === "string" ? `${message.length} characters` : typeof message}).`,
      { issues: [{ path: "message", message: "must be a string up to 1,000,000 characters" }] },
    );
  }
}

/**
 * Wires router, runtime, tools, memory, responder, registry, policy and middleware into one
 * request pipeline:
 *
 * `beforeRoute` → policy (before routing) → `router.classify` → `afterRoute` → for each ranked
 * candidate: `beforeInvoke` → policy (before invocation) → `runtime.invoke` → `afterInvoke`
 * (falling through to the next candidate on `wrong_handler`) → memory turns → `responder.format`
 * → `beforeRespond`.
 *
 * Policy refusals at a checkpoint reject with NervaError POLICY_DENIED / PERMISSION_DENIED /
 * RATE_LIMITED / BUDGET_EXCEEDED / APPROVAL_PENDING (the codes bridges map to HTTP statuses);
 * agent failures are values (`status`). Any error (middleware included) reaches every `onError`
 * and fails the request. Handlers reach tools, memory and delegation through an {@link AgentKit}
 * bound to their context (`orchestrator.handler(fn)` or `orchestrator.kit(ctx)`).
 *
 * @example
 * const orchestrator = new Orchestrator({ router, runtime, memory: new TieredMemory() });
 * const { text, status } = await orchestrator.handle("Book me a flight", ctx);
 * for await (const chunk of orchestrator.stream("Book me a flight", ctx)) process.stdout.write(chunk);
 */
export class Orchestrator {
  readonly #router: Router;
  readonly #runtime: AgentRuntime;
  readonly #tools: ToolManager | null;
  readonly #memory: Memory | null;
  readonly #responder: Responder;
  readonly #registry: Registry | null;
  readonly #policy: PolicyEngine | null;
  readonly #pipeline: MiddlewarePipeline;
  readonly #channel: Channel;
  readonly #maxCandidates: number;
  readonly #remember: boolean;
  readonly #exposeTools: boolean;
  readonly #deps: KitDeps;
  readonly #hasBeforeRoute: boolean;
  readonly #hasAfterRoute: boolean;
  readonly #hasBeforeInvoke: boolean;
  readonly #hasAfterInvoke: boolean;
  readonly #hasBeforeRespond: boolean;

  constructor(options: OrchestratorOptions) {
    const o = parseOrThrow(
      OptionsSchema,
      options,
      ErrorCode.INVALID_OPTIONS,
      "options",
      "Pass { router, runtime } and optionally tools, memory, responder, registry, policy, middleware: [...], channel, maxCandidates (1-20).",
    );
    this.#router = o.router;
    this.#runtime = o.runtime;
    this.#tools = o.tools ?? null;
    this.#memory = o.memory ?? null;
    this.#responder = o.responder ?? new PassthroughResponder();
    this.#registry = o.registry ?? null;
    this.#policy = o.policy ?? null;
    this.#pipeline = new MiddlewarePipeline((o.middleware ?? []) as Middleware[]);
    this.#channel = o.channel as Channel;
    this.#maxCandidates = o.maxCandidates;
    this.#remember = o.remember;
    this.#exposeTools = o.exposeTools;
    const stats = this.#registry === null ? null : new StatsRecorder(this.#registry, this.#runtime);
    this.#deps = {
      runtime: this.#runtime,
      tools: this.#tools,
      memory: this.#memory,
      policy: this.#policy,
      stats,
    };
    const p = this.#pipeline;
    this.#hasBeforeRoute = p.has(MiddlewareStage.BEFORE_ROUTE);
    this.#hasAfterRoute = p.has(MiddlewareStage.AFTER_ROUTE);
    this.#hasBeforeInvoke = p.has(MiddlewareStage.BEFORE_INVOKE);
    this.#hasAfterInvoke = p.has(MiddlewareStage.AFTER_INVOKE);
    this.#hasBeforeRespond = p.has(MiddlewareStage.BEFORE_RESPOND);
  }

  /**
   * Handles one message and resolves to the formatted response. If `ctx.stream` is set, chunks
   * of streaming handlers are formatted and pushed to it as they are produced.
   *
   * @example
   * const response = await orchestrator.handle("Book me a flight", ctx, { channel: "markdown" });
   */
  async handle(
    message: string,
    ctx: ExecContext,
    options: HandleOptions = NO_OPTIONS,
  ): Promise<OrchestratorResponse> {
    checkContext(ctx);
    checkMessage(message);
    const channel = this.#channelOf(options);
    const span = ctx.startSpan("handle", { message_length: message.length });
    const outer = ctx.stream;
    if (outer === null) {
      const rctx = ctx.fork({ span });
      try {
        return await this.#run(message, rctx, span, channel);
      } finally {
        rctx.dispose();
      }
    }
    const responder = this.#responder;
    const sink: StreamSink = {
      push: (chunk) => {
        const out = responder.formatChunk(chunk, channel, rctx);
        return out === "" ? undefined : outer.push(out);
      },
    };
    const rctx = ctx.fork({ span, stream: sink });
    try {
      const response = await this.#run(message, rctx, span, channel);
      const tail = responder.endStream?.(channel, rctx) ?? "";
      if (tail !== "") await outer.push(tail);
      return response;
    } finally {
      rctx.dispose();
    }
  }

  /**
   * Handles one message as a stream of formatted chunks, pushed as the handler produces them.
   * A handler that does not stream yields one final chunk (its formatted answer). Policy
   * refusals and other errors reject the iteration (and `response`) with the NervaError.
   *
   * @example
   * for await (const chunk of orchestrator.stream("Tell me a story", ctx)) socket.send(chunk);
   */
  stream(
    message: string,
    ctx: ExecContext,
    options: HandleOptions = NO_OPTIONS,
  ): OrchestratorStream {
    checkContext(ctx);
    checkMessage(message);
    const channel = this.#channelOf(options);
    const responder = this.#responder;
    let response: Promise<OrchestratorResponse> | null = null;
    let rctx: ExecContext | null = null;
    const start = (): Promise<OrchestratorResponse> => {
      if (response !== null) return response;
      const span = ctx.startSpan("handle", { message_length: message.length, stream: true });
      let pushed = false;
      const sink: StreamSink = {
        push: (chunk) => {
          const out = responder.formatChunk(chunk, channel, fork);
          if (out === "") return;
          pushed = true;
          return queue.push(out);
        },
      };
      const fork = ctx.fork({ span, stream: sink });
      rctx = fork;
      response = this.#run(message, fork, span, channel).then(
        (res) => {
          if (!pushed) {
            if (res.text !== "") queue.push(res.text);
          } else {
            if (res.status !== AgentStatus.SUCCESS) {
              const note = responder.formatChunk(
                `\n[${res.status}] ${res.error ?? "the handler did not succeed"}`,
                channel,
                fork,
              );
              if (note !== "") queue.push(note);
            }
            const tail = responder.endStream?.(channel, fork) ?? "";
            if (tail !== "") queue.push(tail);
          }
          queue.end();
          fork.dispose();
          return res;
        },
        (err: unknown) => {
          queue.fail(err);
          fork.dispose();
          throw err;
        },
      );
      // Read through `response` or the iterator; never an unhandled rejection when neither is.
      response.catch(() => undefined);
      return response;
    };
    const queue = new ChunkQueue(
      () => void start(),
      () => rctx?.cancel("the stream consumer stopped reading"),
    );
    return {
      [Symbol.asyncIterator]: () => queue,
      get response() {
        return start();
      },
    };
  }

  /**
   * The {@link AgentKit} for a handler running with `ctx`: tools, memory and delegation bound to
   * that context and governed by this orchestrator's policy.
   *
   * @example
   * runtime.register("agent", async (input, ctx) => (await orchestrator.kit(ctx).tools.call("search", { q: input.message })).status);
   */
  kit(ctx: ExecContext): AgentKit {
    checkContext(ctx);
    return createKit(this.#deps, ctx);
  }

  /**
   * Adapts a handler written against a kit into a runtime handler. Streaming (async generator)
   * handlers keep streaming.
   *
   * @example
   * runtime.register("flight_agent", orchestrator.handler(async (input, ctx, kit) => {
   *   const found = await kit.tools.call("search_flights", { to: "BER" });
   *   return JSON.stringify(found.output);
   * }));
   */
  handler(fn: KitHandler): AgentHandler {
    if (typeof fn !== "function") {
      throw new NervaError(
        ErrorCode.INVALID_INPUT,
        "Invalid handler: orchestrator.handler(fn) needs a function (input, ctx, kit) => result.",
        { issues: [{ path: "fn", message: "must be a function" }] },
      );
    }
    return (input, ctx) => fn(input, ctx, createKit(this.#deps, ctx));
  }

  /**
   * Runs the message of an approved approval again for its requester. Rejects with
   * APPROVAL_PENDING while it waits, POLICY_DENIED when it was denied, NOT_FOUND when `ctx` may
   * not see it. Needs a policy with `approval(id, ctx)` (DeclarativePolicyEngine has it).
   *
   * @example
   * await policy.approve(approvalId, managerCtx);
   * const response = await orchestrator.resume(approvalId, requesterCtx);
   */
  async resume(
    approvalId: string,
    ctx: ExecContext,
    options: HandleOptions = NO_OPTIONS,
  ): Promise<OrchestratorResponse> {
    checkContext(ctx);
    const policy = this.#policy;
    if (policy === null || typeof policy.approval !== "function") {
      throw new NervaError(
        ErrorCode.INVALID_OPTIONS,
        "resume needs a policy engine with approvals (options.policy, e.g. DeclarativePolicyEngine).",
        { issues: [{ path: "options.policy", message: "must implement approval(id, ctx)" }] },
      );
    }
    const approval = await policy.approval(approvalId, ctx);
    if (approval === null || approval.userId !== ctx.userId || approval.kind !== "agent") {
      throw new NervaError(
        ErrorCode.NOT_FOUND,
        `No approval "${approvalId}" for an agent request of this user. Tool approvals apply when the same request is sent again.`,
        { details: { approvalId } },
      );
    }
    if (approval.status === "pending") {
      throw new NervaError(
        ErrorCode.APPROVAL_PENDING,
        `Approval "${approvalId}" is still pending.`,
        {
          details: { approvalId, rule: approval.rule },
        },
      );
    }
    if (approval.status === "denied") {
      throw new NervaError(
        ErrorCode.POLICY_DENIED,
        `Approval "${approvalId}" was denied${approval.note === null ? "" : `: ${approval.note}`}.`,
        { details: { approvalId, rule: approval.rule } },
      );
    }
    return this.handle(approval.payload, ctx, options);
  }

  /** Closes the runtime, tools, memory and registry this orchestrator was given. */
  async close(): Promise<void> {
    const closing: Promise<unknown>[] = [this.#runtime.close()];
    if (this.#tools !== null) closing.push(this.#tools.close());
    if (this.#memory !== null) closing.push(this.#memory.close());
    if (this.#registry !== null) closing.push(this.#registry.close());
    const failed = (await Promise.allSettled(closing)).find((r) => r.status === "rejected");
    if (failed !== undefined) throw (failed as PromiseRejectedResult).reason;
  }

  // ---- the pipeline -------------------------------------------------------------------

  #channelOf(options: HandleOptions): Channel {
    if (options.channel === undefined) return this.#channel;
    return parseOrThrow(
      ChannelSchema,
      options.channel,
      ErrorCode.INVALID_INPUT,
      "options.channel",
      'Pass a channel name ("plain", "markdown", ...) or { format, maxLength }.',
    ) as Channel;
  }

  async #gate(action: PolicyAction, rctx: ExecContext): Promise<void> {
    const refused = await checkPolicy(this.#policy, action, rctx);
    if (refused !== null) throw decisionError(refused);
  }

  async #run(
    message: string,
    rctx: ExecContext,
    span: Span,
    channel: Channel,
  ): Promise<OrchestratorResponse> {
    const firstEvent = rctx.events.length;
    const usageBefore = rctx.tokenUsage;
    const pipeline = this.#pipeline;
    let stage: PipelineStage = MiddlewareStage.BEFORE_ROUTE;
    try {
      const msg = this.#hasBeforeRoute ? await pipeline.run("beforeRoute", message, rctx) : message;
      stage = "route";
      if (this.#policy !== null) {
        await this.#gate({ checkpoint: Checkpoint.BEFORE_ROUTE, message: msg }, rctx);
      }
      let route: RouteResult = await this.#router.classify(msg, rctx);
      if (this.#hasAfterRoute) {
        stage = MiddlewareStage.AFTER_ROUTE;
        route = await pipeline.run("afterRoute", route, rctx);
      }
      stage = "invoke";
      const tools =
        this.#tools === null || !this.#exposeTools ? EMPTY_LIST : await this.#toolList(rctx);
      // Built from values already checked (the message, the discovered tool list), so runtimes
      // take it as validated instead of parsing it again.
      const input: AgentInput = new ValidatedInput(msg, EMPTY_ARGS, tools, EMPTY_LIST);
      let result: AgentResult | null = null;
      const candidates = route.candidates;
      const tries = Math.min(candidates.length, this.#maxCandidates);
      for (let i = 0; i < tries; i++) {
        let request: InvocationRequest = {
          handler: (candidates[i] as { name: string }).name,
          input,
        };
        if (this.#hasBeforeInvoke) {
          stage = MiddlewareStage.BEFORE_INVOKE;
          request = await pipeline.run("beforeInvoke", request, rctx);
          stage = "invoke";
        }
        result =
          this.#policy === null && this.#deps.stats === null
            ? await this.#runtime.invoke(request.handler, request.input, rctx)
            : await this.#invoke(request, rctx);
        if (this.#hasAfterInvoke) {
          stage = MiddlewareStage.AFTER_INVOKE;
          result = await pipeline.run("afterInvoke", result, rctx);
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
      this.#raiseRefusals(result, rctx, firstEvent);

      stage = "respond";
      if (this.#remember && this.#memory !== null && result.status === AgentStatus.SUCCESS) {
        await this.#rememberTurns(msg, result, rctx);
      }
      let response = await this.#responder.format(result, channel, rctx);
      if (this.#hasBeforeRespond) {
        stage = MiddlewareStage.BEFORE_RESPOND;
        response = await pipeline.run("beforeRespond", response, rctx);
      }
      this.#usageAttributes(rctx, usageBefore, span);
      if (this.#policy !== null) await this.#charge(rctx, usageBefore);
      span.setAttribute("handler", response.handler);
      span.setAttribute("status", response.status);
      if (response.status === AgentStatus.SUCCESS) span.end("ok");
      else span.end("error", response.error ?? response.status);
      return response;
    } catch (err) {
      await pipeline.onError(err, rctx, stage);
      this.#usageAttributes(rctx, usageBefore, span);
      if (this.#policy !== null) await this.#charge(rctx, usageBefore);
      span.end("error", messageOf(err));
      throw err;
    }
  }

  async #invoke(request: InvocationRequest, rctx: ExecContext): Promise<AgentResult> {
    const handler = request.handler;
    if (this.#policy !== null) {
      await this.#gate(
        {
          checkpoint: Checkpoint.BEFORE_INVOKE,
          kind: "agent",
          name: handler,
          message: request.input.message,
        },
        rctx,
      );
    }
    const stats = this.#deps.stats;
    if (stats === null) return this.#runtime.invoke(handler, request.input, rctx);
    const started = performance.now();
    const result = await this.#runtime.invoke(handler, request.input, rctx);
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

  async #toolList(rctx: ExecContext): Promise<readonly Readonly<Record<string, string>>[]> {
    if (this.#tools === null || !this.#exposeTools) return EMPTY_LIST;
    const infos = await this.#tools.discover(rctx);
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
   * request with that refusal, so bridges answer 202/429 rather than a generic failure.
   */
  #raiseRefusals(result: AgentResult, rctx: ExecContext, firstEvent: number): void {
    if (result.status === AgentStatus.SUCCESS) return;
    const events = rctx.events;
    for (let i = events.length - 1; i >= firstEvent; i--) {
      const e = events[i]!;
      const a = e.attributes;
      if (e.name !== "policy.decision" || a["effect"] === "allow") continue;
      const code = String(a["code"]);
      if (a["checkpoint"] !== Checkpoint.DURING_EXECUTION || !ELEVATED.has(code)) continue;
      throw new NervaError(
        code as ErrorCode,
        `${String(a["reason"])} (during ${result.handler}, which then failed: ${result.error ?? result.status})`,
        {
          details: {
            checkpoint: Checkpoint.DURING_EXECUTION,
            rule: a["rule"] === "" ? null : (a["rule"] ?? null),
            handler: result.handler,
            ...(a["retry_after_seconds"] === undefined
              ? {}
              : { retryAfterSeconds: a["retry_after_seconds"] }),
            ...(a["approval_id"] === undefined ? {} : { approvalId: a["approval_id"] }),
          },
        },
      );
    }
  }

  /** Stores the message and the answer as turns; a memory failure is an event, not a failure. */
  async #rememberTurns(message: string, result: AgentResult, rctx: ExecContext): Promise<void> {
    const memory = this.#memory as Memory;
    const scoped = rctx.fork({ agentName: result.handler });
    try {
      await memory.store({ kind: "turn", role: "user", content: message }, scoped);
      if (result.output !== "") {
        await memory.store(
          {
            kind: "turn",
            role: "assistant",
            content: result.output,
            metadata: { handler: result.handler },
          },
          scoped,
        );
      }
    } catch (err) {
      rctx.event("memory.error", { operation: "store", error: messageOf(err) });
    } finally {
      scoped.dispose();
    }
  }

  /** Puts the request's token usage and cost on its `handle` span. */
  #usageAttributes(rctx: ExecContext, before: TokenUsage, span: Span): void {
    const after = rctx.tokenUsage;
    if (after.totalTokens > before.totalTokens || after.costUsd > before.costUsd) {
      span.setAttribute("tokens", after.totalTokens - before.totalTokens);
      span.setAttribute("cost_usd", after.costUsd - before.costUsd);
    }
  }

  /** Charges the request's real usage to the policy's budgets; a failure is an event. */
  async #charge(rctx: ExecContext, before: TokenUsage): Promise<void> {
    const after = rctx.tokenUsage;
    if (this.#policy === null) return;
    try {
      await this.#policy.charge(
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
}
