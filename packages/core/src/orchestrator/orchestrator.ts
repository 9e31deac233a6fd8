import type { ExecContext, StreamSink } from "../context/exec-context.js";
import { ErrorCode, NervaError } from "../errors.js";
import type { OrchestratorResponse } from "../middleware/types.js";
import { checkContext } from "../runtime/guard.js";
import { InProcessRuntime } from "../runtime/in-process-runtime.js";
import type { AgentHandler, AgentRuntime } from "../runtime/types.js";
import { createKit } from "./kit.js";
import { callOptionsOf, checkMessage, wire, type Wiring } from "./options.js";
import { approvedMessage } from "./approved.js";
import { runRequest } from "./run.js";
import { streamRequest } from "./stream.js";
import type {
  AgentKit,
  HandleOptions,
  KitHandler,
  OrchestratorOptions,
  OrchestratorStream,
} from "./types.js";

/** The default of `options` (not a fresh `{}` per call). */
const NO_OPTIONS: HandleOptions = Object.freeze({});

/**
 * Wires router, runtime, tools, memory, responder, registry, policy and middleware into one
 * request pipeline:
 *
 * `before_route` → policy (before routing) → `router.classify` → `after_route` → for each ranked
 * candidate: `before_invoke` → policy (before invocation) → `runtime.invoke` → `after_invoke`
 * (falling through to the next candidate on `wrong_handler`) → `responder.format` →
 * `before_respond` → memory turns (see `run.ts`). The orchestrator opens the span of each stage
 * it calls, whatever implementation it calls.
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
  readonly #w: Wiring;

  constructor(options: OrchestratorOptions) {
    const agents = agentsOf(options);
    this.#w = wire(
      agents === null
        ? (options as Parameters<typeof wire>[0])
        : { ...options, runtime: new InProcessRuntime() },
    );
    if (agents !== null) {
      const runtime = this.#w.runtime as InProcessRuntime;
      for (const [name, fn] of Object.entries(agents)) runtime.register(name, this.handler(fn));
    }
  }

  /** What executes the handlers: the given runtime, or the InProcessRuntime of `agents`. */
  get runtime(): AgentRuntime {
    return this.#w.runtime;
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
    const w = this.#w;
    const call = callOptionsOf(options, w.channel);
    const channel = call.channel;
    const span = ctx.startSpan("handle", { message_length: message.length });
    const outer = ctx.stream;
    if (outer === null) {
      const rctx = ctx.fork({ span });
      try {
        return await runRequest(w, message, rctx, span, call);
      } finally {
        rctx.dispose();
      }
    }
    const responder = w.responder;
    const sink: StreamSink = {
      push: (chunk) => {
        const out = responder.formatChunk(chunk, channel, rctx);
        return out === "" ? undefined : outer.push(out);
      },
      // Reasoning is not the answer: it passes unformatted, to a sink that keeps it apart.
      ...(outer.pushReasoning === undefined
        ? {}
        : { pushReasoning: (chunk: string) => outer.pushReasoning?.(chunk) }),
    };
    const rctx = ctx.fork({ span, stream: sink });
    try {
      const response = await runRequest(w, message, rctx, span, call);
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
    return streamRequest(this.#w, message, ctx, callOptionsOf(options, this.#w.channel));
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
    return createKit(this.#w, ctx);
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
    const w = this.#w;
    return (input, ctx) => fn(input, ctx, createKit(w, ctx));
  }

  /**
   * Sends the message of an approved approval again for its requester (the same user, or the
   * same session of an anonymous request); the policy lets it through once. Rejects with
   * APPROVAL_PENDING while the approval waits, POLICY_DENIED when it was denied, NOT_FOUND when
   * `ctx` is not its requester. Sending the same message with `handle` works as well. Needs a
   * policy with `approval(id, ctx)` (DeclarativePolicyEngine has it). Approvers decide with
   * the one resume of every pause: `policy.approvals.resume(approvalId, { decision }, { ctx })`.
   *
   * @example
   * await policy.approvals.resume(approvalId, { decision: "approve" }, { ctx: managerCtx });
   * const response = await orchestrator.handleApproved(approvalId, requesterCtx);
   */
  async handleApproved(
    approvalId: string,
    ctx: ExecContext,
    options: HandleOptions = NO_OPTIONS,
  ): Promise<OrchestratorResponse> {
    checkContext(ctx);
    const message = await approvedMessage(this.#w.policy, approvalId, ctx);
    return this.handle(message, ctx, options);
  }

  /** Closes the runtime, tools, memory and registry this orchestrator was given. */
  async close(): Promise<void> {
    const w = this.#w;
    const closing: Promise<unknown>[] = [w.runtime.close()];
    if (w.tools !== null) closing.push(w.tools.close());
    if (w.memory !== null) closing.push(w.memory.close());
    if (w.registry !== null) closing.push(w.registry.close());
    const failed = (await Promise.allSettled(closing)).find((r) => r.status === "rejected");
    if (failed !== undefined) throw (failed as PromiseRejectedResult).reason;
  }
}

/** The `agents` option, checked: exactly one of `runtime` and `agents`, each agent a function. */
function agentsOf(options: OrchestratorOptions): Readonly<Record<string, KitHandler>> | null {
  if (typeof options !== "object" || options === null) return null;
  const { agents, runtime } = options;
  if ((agents === undefined) === (runtime === undefined)) {
    throw new NervaError(
      ErrorCode.INVALID_OPTIONS,
      "Invalid options: give exactly one of runtime (an AgentRuntime) or agents ({ name: (input, ctx, kit) => answer }).",
      { issues: [{ path: "options.runtime", message: "give exactly one of runtime or agents" }] },
    );
  }
  if (agents === undefined) return null;
  const bad =
    typeof agents !== "object" || agents === null
      ? "agents"
      : Object.entries(agents).find(([, fn]) => typeof fn !== "function")?.[0];
  if (bad !== undefined) {
    const path = bad === "agents" ? "options.agents" : `options.agents.${bad}`;
    throw new NervaError(
      ErrorCode.INVALID_OPTIONS,
      `Invalid ${path}: each agent is a function (input, ctx, kit) => answer.`,
      { issues: [{ path, message: "must be a function" }] },
    );
  }
  return agents;
}
