import { z } from "zod";
import type { ExecContext } from "../context/exec-context.js";
import { ErrorCode, NervaError, parseOrThrow } from "../errors.js";
import type { AgentInput, AgentInputInit, AgentResult } from "../types/agent.js";
import { runChain } from "./chain.js";
import type { CircuitSnapshot } from "./circuit-breaker.js";
import { runDelegate, type DelegationOptions } from "./delegate.js";
import { checkInvokeArgs, invokeGuarded, type GuardedHandler, type Execute } from "./guard.js";
import { runFunction } from "./handler-call.js";
import {
  HandlerNameSchema,
  HandlerOptionsSchema,
  RuntimeOptionsSchema,
  makeBreaker,
  type HandlerOptions,
  type RuntimeOptions,
} from "./options.js";
import type { AgentHandler, AgentRuntime } from "./types.js";

export type { HandlerOptions, RuntimeOptions } from "./options.js";

interface Entry extends GuardedHandler {
  readonly description: string | undefined;
  /** Runs the handler for one invocation (built once at registration). */
  readonly execute: Execute;
}

/**
 * Runs handlers as async functions in this process: the fastest runtime, with no isolation.
 * Handlers return a string, a partial AgentResult, or are async generators whose chunks go to
 * `ctx.stream` as they are produced and are joined into `output`.
 *
 * @example
 * const runtime = new InProcessRuntime({ timeoutSeconds: 30, circuitBreaker: { failureThreshold: 3 } });
 * runtime.register("my_agent", async (input) => `Processed: ${input.message}`);
 * const result = await runtime.invoke("my_agent", { message: "hello" }, ExecContext.create());
 */
export class InProcessRuntime implements AgentRuntime {
  readonly #options: z.output<typeof RuntimeOptionsSchema>;
  readonly #delegation: DelegationOptions;
  readonly #handlers = new Map<string, Entry>();
  readonly #known = (): readonly string[] => this.handlerNames();

  constructor(options: RuntimeOptions = {}) {
    this.#options = parseOrThrow(
      RuntimeOptionsSchema,
      options,
      ErrorCode.INVALID_OPTIONS,
      "options",
      "timeoutSeconds > 0, circuitBreaker { failureThreshold >= 1, recoverySeconds >= 0, halfOpenMaxCalls >= 1 } or false, maxDelegationDepth >= 1.",
    );
    this.#delegation = {
      maxDelegationDepth: this.#options.maxDelegationDepth,
      delegationPolicy: this.#options.delegationPolicy,
    };
  }

  /** Registers `handler` under `name`. Throws on a duplicate name or invalid options. */
  register(name: string, handler: AgentHandler, options: HandlerOptions = {}): this {
    parseOrThrow(
      HandlerNameSchema,
      name,
      ErrorCode.INVALID_OPTIONS,
      "name",
      'Pick a name like "flight_agent".',
    );
    if (typeof handler !== "function") {
      throw new NervaError(
        ErrorCode.INVALID_OPTIONS,
        `Invalid handler for "${name}": must be a function (input, ctx, runtime) => string | AgentResult | AsyncIterable<string>.`,
        {
          issues: [{ path: "handler", message: "must be a function" }],
        },
      );
    }
    if (this.#handlers.has(name)) {
      throw new NervaError(
        ErrorCode.DUPLICATE_HANDLER,
        `Handler "${name}" is already registered. Use another name, or create a new runtime to replace it.`,
        { issues: [{ path: "name", message: "already registered" }] },
      );
    }
    const o = parseOrThrow(
      HandlerOptionsSchema,
      options,
      ErrorCode.INVALID_OPTIONS,
      `options of "${name}"`,
      "timeoutSeconds > 0; circuitBreaker fields as in the runtime options.",
    );
    this.#handlers.set(name, {
      execute: (input, scoped) => runFunction(name, handler, input, scoped, this),
      description: o.description,
      timeoutSeconds: o.timeoutSeconds ?? this.#options.timeoutSeconds,
      breaker: makeBreaker(this.#options.circuitBreaker, o.circuitBreaker),
    });
    return this;
  }

  handlerNames(): readonly string[] {
    return [...this.#handlers.keys()];
  }

  /** The description given at registration, if any. */
  describe(name: string): string | undefined {
    return this.#handlers.get(name)?.description;
  }

  /** State of the handler's circuit breaker (`undefined` if it has none). */
  circuit(name: string): CircuitSnapshot | undefined {
    return this.#handlers.get(name)?.breaker?.snapshot();
  }

  invoke(handler: string, input: AgentInputInit, ctx: ExecContext): Promise<AgentResult> {
    let agentInput: AgentInput;
    try {
      agentInput = checkInvokeArgs(handler, input, ctx);
    } catch (err) {
      return Promise.reject(err);
    }
    const entry = this.#handlers.get(handler);
    return invokeGuarded(handler, entry, this.#known, agentInput, ctx, entry?.execute);
  }

  invokeChain(
    handlers: readonly string[],
    input: AgentInputInit,
    ctx: ExecContext,
  ): Promise<AgentResult> {
    return runChain(this, handlers, input, ctx);
  }

  delegate(handler: string, input: AgentInputInit, parentCtx: ExecContext): Promise<AgentResult> {
    return runDelegate(this, this.#delegation, handler, input, parentCtx);
  }

  async close(): Promise<void> {
    // Nothing to release: in-process handlers own no processes or timers between calls.
  }
}
